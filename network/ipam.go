package network

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/big"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// Labels on IPLease objects, for finding a holder's leases.
const (
	// OwnerLabel holds the UID of the VMI an address is leased to.
	OwnerLabel = "network.virtkit.io/owner-uid"
	// NodeLabel holds the node a lease belongs to.
	NodeLabel = "network.virtkit.io/node"
)

// Errors of the IPAM.
var (
	// ErrPoolExhausted: every address of the pool is leased.
	ErrPoolExhausted = errors.New("no free address in the pool")
	// ErrInvalidPool: the pool's subnet, range or gateway is malformed.
	ErrInvalidPool = errors.New("invalid address pool")
)

// Pool is a range addresses are leased from.
type Pool struct {
	// Name identifies the pool in lease names and specs ("pod", or a
	// NetworkAttachmentDefinition's namespace/name).
	Name string
	// Subnet is the network the addresses live in.
	Subnet netip.Prefix
	// Gateway is never leased (default: the subnet's first host address).
	Gateway netip.Addr
	// RangeStart and RangeEnd bound the leased addresses (default: the
	// subnet's host addresses).
	RangeStart, RangeEnd netip.Addr
}

// bounds returns the first and last leasable address.
func (p Pool) bounds() (netip.Addr, netip.Addr, error) {
	if p.Name == "" {
		return netip.Addr{}, netip.Addr{}, fmt.Errorf("%w: name: required", ErrInvalidPool)
	}
	if !p.Subnet.IsValid() {
		return netip.Addr{}, netip.Addr{}, fmt.Errorf("%w: %s: no subnet", ErrInvalidPool, p.Name)
	}
	s := p.Subnet.Masked()
	bits := s.Addr().BitLen()
	if bits-s.Bits() < 2 {
		return netip.Addr{}, netip.Addr{}, fmt.Errorf("%w: %s: subnet %s has no host addresses", ErrInvalidPool, p.Name, s)
	}
	first := s.Addr().Next()
	last := lastAddr(s)
	if s.Addr().Is4() {
		last = last.Prev() // broadcast
	}
	if p.RangeStart.IsValid() {
		if !s.Contains(p.RangeStart) {
			return netip.Addr{}, netip.Addr{}, fmt.Errorf("%w: %s: rangeStart %s outside %s", ErrInvalidPool, p.Name, p.RangeStart, s)
		}
		if first.Less(p.RangeStart) {
			first = p.RangeStart
		}
	}
	if p.RangeEnd.IsValid() {
		if !s.Contains(p.RangeEnd) {
			return netip.Addr{}, netip.Addr{}, fmt.Errorf("%w: %s: rangeEnd %s outside %s", ErrInvalidPool, p.Name, p.RangeEnd, s)
		}
		if p.RangeEnd.Less(last) {
			last = p.RangeEnd
		}
	}
	if last.Less(first) {
		return netip.Addr{}, netip.Addr{}, fmt.Errorf("%w: %s: empty range %s-%s", ErrInvalidPool, p.Name, first, last)
	}
	return first, last, nil
}

// GatewayAddr is the pool's gateway: Gateway, else the first host address.
func (p Pool) GatewayAddr() netip.Addr {
	if p.Gateway.IsValid() {
		return p.Gateway
	}
	return p.Subnet.Masked().Addr().Next()
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func addrInt(a netip.Addr) *big.Int { return new(big.Int).SetBytes(a.AsSlice()) }

func intAddr(i *big.Int, v6 bool) netip.Addr {
	n := 4
	if v6 {
		n = 16
	}
	b := make([]byte, n)
	i.FillBytes(b)
	a, _ := netip.AddrFromSlice(b)
	return a
}

// Owner is who holds a lease.
type Owner struct {
	Namespace, Name, UID string
	// Interface is the VMI interface the address is for.
	Interface string
	// MAC of the interface.
	MAC string
	// Node is where the owner runs.
	Node string
}

// IPAM hands out addresses from pools, keeping every lease as an
// [virtkit.IPLease] in the store. A lease's name is derived from its pool
// and address, so the store's create-if-absent guarantees that no two
// holders ever get one address, whichever process allocates: node agents
// on different hosts sharing an etcd store allocate safely.
type IPAM struct {
	Store store.Store
}

// LeaseName is the IPLease name of an address of a pool.
func LeaseName(pool string, addr netip.Addr) string {
	return sanitizeName(pool) + "." + strings.NewReplacer(".", "-", ":", "-").Replace(addr.StringExpanded())
}

func sanitizeName(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b), "-")
}

// Allocate returns the owner's address in the pool: the one it already
// holds (a restarted node agent finds its leases again), else a new one.
// Concurrent allocators never hand one address to two owners.
func (m *IPAM) Allocate(ctx context.Context, pool Pool, owner Owner) (netip.Prefix, error) {
	first, last, err := pool.bounds()
	if err != nil {
		return netip.Prefix{}, err
	}
	if owner.UID == "" {
		return netip.Prefix{}, fmt.Errorf("%w: owner has no UID", ErrInvalidPool)
	}
	if got, ok, err := m.held(ctx, pool, owner); err != nil || ok {
		return got, err
	}
	gw := pool.GatewayAddr()
	lo, hi := addrInt(first), addrInt(last)
	size := new(big.Int).Sub(hi, lo)
	size.Add(size, big.NewInt(1))
	// Start at a point derived from the owner so concurrent allocators
	// mostly try different addresses, then walk the whole range.
	h := fnv.New64a()
	h.Write([]byte(owner.UID + "/" + owner.Interface))
	off := new(big.Int).Mod(new(big.Int).SetUint64(h.Sum64()), size)
	one := big.NewInt(1)
	for n := new(big.Int); n.Cmp(size) < 0; n.Add(n, one) {
		if err := ctx.Err(); err != nil {
			return netip.Prefix{}, err
		}
		i := new(big.Int).Add(off, n)
		i.Mod(i, size).Add(i, lo)
		addr := intAddr(i, pool.Subnet.Addr().Is6())
		if addr == gw {
			continue
		}
		lease := newLease(pool, addr, owner)
		err := m.Store.Create(ctx, lease)
		if errors.Is(err, store.ErrAlreadyExists) {
			continue
		}
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("lease %s: %w", addr, err)
		}
		return netip.PrefixFrom(addr, pool.Subnet.Bits()), nil
	}
	return netip.Prefix{}, fmt.Errorf("%w: %s (%s-%s)", ErrPoolExhausted, pool.Name, first, last)
}

func newLease(pool Pool, addr netip.Addr, owner Owner) *virtkit.IPLease {
	l := &virtkit.IPLease{
		Spec: virtkit.IPLeaseSpec{
			Pool: pool.Name, Address: netip.PrefixFrom(addr, pool.Subnet.Bits()).String(), Node: owner.Node,
			OwnerNamespace: owner.Namespace, OwnerName: owner.Name, OwnerUID: owner.UID,
			Interface: owner.Interface, MAC: owner.MAC,
		},
	}
	l.Name = LeaseName(pool.Name, addr)
	l.Labels = map[string]string{OwnerLabel: owner.UID}
	if owner.Node != "" {
		l.Labels[NodeLabel] = owner.Node
	}
	return l
}

// held returns the owner's lease in the pool for its interface. Should two
// allocations for one owner have raced (callers serialize per owner, as a
// node agent does per VMI), the owner holds two addresses until released
// and the lowest-named lease is the one returned from then on; no address
// is ever shared between owners.
func (m *IPAM) held(ctx context.Context, pool Pool, owner Owner) (netip.Prefix, bool, error) {
	leases, err := m.OwnedBy(ctx, owner.UID)
	if err != nil {
		return netip.Prefix{}, false, err
	}
	var mine []virtkit.IPLease
	for _, l := range leases {
		if l.Spec.Pool == pool.Name && l.Spec.Interface == owner.Interface {
			mine = append(mine, l)
		}
	}
	if len(mine) == 0 {
		return netip.Prefix{}, false, nil
	}
	slices.SortFunc(mine, func(a, b virtkit.IPLease) int { return strings.Compare(a.Name, b.Name) })
	p, err := netip.ParsePrefix(mine[0].Spec.Address)
	if err != nil {
		return netip.Prefix{}, false, fmt.Errorf("lease %s: %w", mine[0].Name, err)
	}
	return p, true, nil
}

// OwnedBy lists the leases of one owner UID.
func (m *IPAM) OwnedBy(ctx context.Context, uid string) ([]virtkit.IPLease, error) {
	list := &virtkit.IPLeaseList{}
	sel := labels.SelectorFromSet(labels.Set{OwnerLabel: uid})
	if err := m.Store.List(ctx, list, store.ListOptions{LabelSelector: sel}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// Leases lists the leases of a pool (all pools when pool is "").
func (m *IPAM) Leases(ctx context.Context, pool string) ([]virtkit.IPLease, error) {
	list := &virtkit.IPLeaseList{}
	if err := m.Store.List(ctx, list, store.ListOptions{}); err != nil {
		return nil, err
	}
	if pool == "" {
		return list.Items, nil
	}
	out := list.Items[:0]
	for _, l := range list.Items {
		if l.Spec.Pool == pool {
			out = append(out, l)
		}
	}
	return out, nil
}

// Release gives back every address the owner holds.
func (m *IPAM) Release(ctx context.Context, uid string) error {
	leases, err := m.OwnedBy(ctx, uid)
	if err != nil {
		return err
	}
	var errs []error
	for i := range leases {
		if err := m.Store.Delete(ctx, &leases[i], store.DeleteOptions{}); err != nil && !errors.Is(err, store.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// NodeSubnet returns the node's share of a cluster range: a subnet of
// size bits (e.g. /24 of 10.244.0.0/16), leased to the node in the store
// so every node gets its own and keeps it across restarts.
func (m *IPAM) NodeSubnet(ctx context.Context, cluster netip.Prefix, bits int, node string) (netip.Prefix, error) {
	cluster = cluster.Masked()
	if !cluster.IsValid() || bits <= cluster.Bits() || bits > cluster.Addr().BitLen()-2 || bits-cluster.Bits() > 24 {
		return netip.Prefix{}, fmt.Errorf("%w: cannot split %s into /%d subnets", ErrInvalidPool, cluster, bits)
	}
	if node == "" {
		return netip.Prefix{}, fmt.Errorf("%w: node: required", ErrInvalidPool)
	}
	pool := "nodes-" + sanitizeName(cluster.String())
	list := &virtkit.IPLeaseList{}
	if err := m.Store.List(ctx, list, store.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{NodeLabel: node})}); err != nil {
		return netip.Prefix{}, err
	}
	for _, l := range list.Items {
		if l.Spec.Pool == pool && l.Spec.OwnerUID == "" {
			return netip.ParsePrefix(l.Spec.Address)
		}
	}
	count := 1 << (bits - cluster.Bits())
	h := fnv.New64a()
	h.Write([]byte(node))
	off := int(h.Sum64() % uint64(count))
	base := addrInt(cluster.Addr())
	step := new(big.Int).Lsh(big.NewInt(1), uint(cluster.Addr().BitLen()-bits))
	for n := range count {
		i := (off + n) % count
		a := intAddr(new(big.Int).Add(base, new(big.Int).Mul(step, big.NewInt(int64(i)))), cluster.Addr().Is6())
		sub := netip.PrefixFrom(a, bits)
		l := &virtkit.IPLease{Spec: virtkit.IPLeaseSpec{Pool: pool, Address: sub.String(), Node: node}}
		l.Name = pool + "." + strings.NewReplacer(".", "-", ":", "-").Replace(a.StringExpanded())
		l.Labels = map[string]string{NodeLabel: node}
		err := m.Store.Create(ctx, l)
		if errors.Is(err, store.ErrAlreadyExists) {
			continue
		}
		if err != nil {
			return netip.Prefix{}, err
		}
		return sub, nil
	}
	return netip.Prefix{}, fmt.Errorf("%w: every /%d of %s is taken", ErrPoolExhausted, bits, cluster)
}

// ByMAC lists the leases of the interface with this MAC (case-insensitive).
func (m *IPAM) ByMAC(ctx context.Context, mac string) ([]virtkit.IPLease, error) {
	all, err := m.Leases(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []virtkit.IPLease
	for _, l := range all {
		if l.Spec.MAC != "" && strings.EqualFold(l.Spec.MAC, mac) {
			out = append(out, l)
		}
	}
	return out, nil
}
