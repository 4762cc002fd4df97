package cluster

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/network"
	"github.com/virtkit/virtkit/store"
)

// PodNetwork turns on virtkit's pod network (package network) on every
// node: each node leases a subnet of Range from the store, and every VMI
// on the pod network (bridge or masquerade binding) gets its own address
// from it, released when the VMI is gone. Multus networks resolve through
// NetworkAttachmentDefinitions in the store.
type PodNetwork struct {
	// Range is the cluster's pod range; default 10.244.0.0/16.
	Range netip.Prefix
	// NodePrefix is the size of each node's subnet; default 24.
	NodePrefix int
	// Range6, when set, makes the pod network dual-stack: each node also
	// leases a NodePrefix6 (default 64) subnet of it, and masquerade
	// interfaces get an IPv6 address there behind KubeVirt's fd10:0:2::2.
	Range6      netip.Prefix
	NodePrefix6 int
	// Subnet and Subnet6, when set, are the node's subnets as they are,
	// instead of subnets leased from Range and Range6 (a host run on its
	// own, NewNodeProcess, given its subnet).
	Subnet, Subnet6 netip.Prefix
	// Host returns the host networker of a node (a *network.Host on a real
	// node, whose pod bridge the cluster creates before the node starts);
	// nil, or a nil result, only leases addresses. Simulated hosts then
	// report the leased addresses through their guest agents.
	Host func(node string) network.HostNetworker
	// Bridge is the pod bridge's name; default network.DefaultPodBridge.
	Bridge string
	// Fallback resolves multus networks that name no
	// NetworkAttachmentDefinition (for example a domain.NetResolver).
	Fallback domain.NetworkResolver
	// CollectInterval is how often leases of deleted VMIs are looked for
	// besides on every VMI deletion; default 30 s.
	CollectInterval time.Duration
	// MTU of the guests' NICs on the pod network; 0 keeps 1500.
	MTU int
}

// resolver builds one node's network resolver, leasing the node's subnet.
func (p *PodNetwork) resolver(ctx context.Context, st store.Store, node string) (*network.Resolver, error) {
	rng := p.Range
	if !rng.IsValid() {
		rng = netip.MustParsePrefix("10.244.0.0/16")
	}
	bits := p.NodePrefix
	if bits == 0 {
		bits = 24
	}
	ipam := &network.IPAM{Store: st}
	sub, sub6 := p.Subnet.Masked(), p.Subnet6.Masked()
	var err error
	if !sub.IsValid() {
		if bits < rng.Bits() || bits > rng.Addr().BitLen()-2 {
			return nil, fmt.Errorf("pod network: NodePrefix %d: must be between Range's /%d and /%d", bits, rng.Bits(), rng.Addr().BitLen()-2)
		}
		if sub, err = ipam.NodeSubnet(ctx, rng.Masked(), bits, node); err != nil {
			return nil, fmt.Errorf("pod network: %w", err)
		}
	}
	if !sub6.IsValid() && p.Range6.IsValid() {
		if !p.Range6.Addr().Is6() {
			return nil, fmt.Errorf("pod network: Range6 %s: not an IPv6 prefix", p.Range6)
		}
		bits6 := p.NodePrefix6
		if bits6 == 0 {
			bits6 = 64
		}
		if sub6, err = ipam.NodeSubnet(ctx, p.Range6.Masked(), bits6, node); err != nil {
			return nil, fmt.Errorf("pod network: Range6: %w", err)
		}
	}
	var host network.HostNetworker
	if p.Host != nil {
		host = p.Host(node)
	}
	r, err := network.NewResolver(network.ResolverOptions{
		Store: st, Node: node, PodSubnet: sub, PodSubnet6: sub6, PodBridge: p.Bridge, Host: host, Fallback: p.Fallback, MTU: p.MTU,
	})
	if err != nil {
		return nil, err
	}
	if err := r.SetUp(ctx); err != nil {
		return nil, fmt.Errorf("pod network: %w", err)
	}
	return r, nil
}

// simAddresses is the simulated guests' DHCP: the addresses leased to a MAC.
func (c *Cluster) simAddresses(mac string) []guestagent.IPAddress {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	leases, err := (&network.IPAM{Store: c.store}).ByMAC(ctx, mac)
	if err != nil {
		return nil
	}
	var out []guestagent.IPAddress
	for _, l := range leases {
		p, err := netip.ParsePrefix(l.Spec.Address)
		if err != nil || !p.Addr().Is4() {
			continue
		}
		out = append(out, guestagent.IPAddress{Type: "ipv4", Address: p.Addr().String(), Prefix: p.Bits()})
	}
	return out
}
