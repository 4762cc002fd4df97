package network

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/store"
)

// DefaultPodBridge is the pod network's bridge on every node.
const DefaultPodBridge = "vkpod0"

// PodPool is the IPAM pool name of the pod network; PodPool6 that of its
// IPv6 range.
const (
	PodPool  = "pod"
	PodPool6 = "pod6"
)

// ErrUnsupportedCNI: a NetworkAttachmentDefinition's CNI plugin type (or
// option) is one virtkit cannot honour. The message names the type.
var ErrUnsupportedCNI = errors.New("CNI configuration not supported")

// HostNetworker is what the resolver needs from the host: a [*Host] on a
// real node; nil on a simulated one (addresses are leased, nothing is
// created).
type HostNetworker interface {
	EnsureBridge(ctx context.Context, b Bridge) error
	VLANPort(ctx context.Context, parent, child string, vlan int) error
	VLANInterface(ctx context.Context, parent, name string, vlan int, addr netip.Prefix) error
	SetDHCPHost(ctx context.Context, d DHCP, mac string, addr netip.Addr) error
	EnsureMasquerade(ctx context.Context, m Masquerade) error
}

// ResolverOptions configure a [Resolver]. Store, Node and PodSubnet are
// required.
type ResolverOptions struct {
	Store store.Store
	// Node is this node's name (written on leases).
	Node string
	// PodSubnet is this node's share of the pod network (see
	// IPAM.NodeSubnet); its first address is the gateway on PodBridge.
	PodSubnet netip.Prefix
	// PodSubnet6, when valid, makes the pod network dual-stack: its first
	// address is the IPv6 gateway on PodBridge, and masquerade interfaces
	// get an IPv6 pod address from it too, NATed (NAT66) to the guest's
	// fd10:0:2::2 as KubeVirt does. A /64 or smaller.
	PodSubnet6 netip.Prefix
	// PodBridge is the bridge of the pod network; default DefaultPodBridge.
	PodBridge string
	// Host creates the host side; nil creates nothing (simulated hosts).
	Host HostNetworker
	// Fallback resolves multus networks that name no
	// NetworkAttachmentDefinition (for example a domain.NetResolver with a
	// hand-written map); nil refuses them.
	Fallback domain.NetworkResolver
	// MTU of the guests' NICs on the pod network (QEMU tells a virtio
	// guest); 0 leaves the default (1500).
	MTU int
}

// Resolver is a domain.NetworkResolver that puts guests on real networks:
// the pod network (bridge binding: the guest's NIC on the node's pod
// bridge, its address from the IPAM by DHCP; masquerade: KubeVirt's
// 10.0.2.2 behind NAT of the pod address) and bridges described by
// NetworkAttachmentDefinitions (CNI type bridge with host-local IPAM,
// optionally on a VLAN).
type Resolver struct {
	opts ResolverOptions
	ipam *IPAM
}

var _ domain.NetworkResolver = (*Resolver)(nil)

// NewResolver checks opts.
func NewResolver(opts ResolverOptions) (*Resolver, error) {
	switch {
	case opts.Store == nil:
		return nil, fmt.Errorf("%w: Store: required", ErrInvalidPool)
	case opts.Node == "":
		return nil, fmt.Errorf("%w: Node: required", ErrInvalidPool)
	case !opts.PodSubnet.IsValid():
		return nil, fmt.Errorf("%w: PodSubnet: required", ErrInvalidPool)
	case opts.MTU < 0 || opts.MTU > 65535 || opts.MTU > 0 && opts.MTU < 576:
		return nil, fmt.Errorf("%w: MTU: %d is not between 576 and 65535", ErrInvalidPool, opts.MTU)
	case !opts.PodSubnet.Addr().Is4():
		return nil, fmt.Errorf("%w: PodSubnet: %s is not an IPv4 subnet", ErrInvalidPool, opts.PodSubnet)
	case opts.PodSubnet6.IsValid() && (!opts.PodSubnet6.Addr().Is6() || opts.PodSubnet6.Addr().Is4In6() || opts.PodSubnet6.Bits() < 64 || opts.PodSubnet6.Bits() > 126):
		return nil, fmt.Errorf("%w: PodSubnet6: %s is not an IPv6 subnet of /64 to /126", ErrInvalidPool, opts.PodSubnet6)
	}
	if opts.PodSubnet6.IsValid() {
		opts.PodSubnet6 = opts.PodSubnet6.Masked()
	}
	if opts.PodBridge == "" {
		opts.PodBridge = DefaultPodBridge
	}
	opts.PodSubnet = opts.PodSubnet.Masked()
	return &Resolver{opts: opts, ipam: &IPAM{Store: opts.Store}}, nil
}

// PodPool is the node's pod address pool.
func (r *Resolver) PodPool() Pool { return Pool{Name: PodPool, Subnet: r.opts.PodSubnet} }

// PodGateway is the pod bridge's address.
func (r *Resolver) PodGateway() netip.Prefix {
	return netip.PrefixFrom(r.PodPool().GatewayAddr(), r.opts.PodSubnet.Bits())
}

// PodPool6 is the node's IPv6 pod pool (Name empty when the pod network
// is IPv4 only).
func (r *Resolver) PodPool6() Pool {
	if !r.opts.PodSubnet6.IsValid() {
		return Pool{}
	}
	return Pool{Name: PodPool6, Subnet: r.opts.PodSubnet6}
}

// PodGateway6 is the pod bridge's IPv6 address (invalid when IPv4 only).
func (r *Resolver) PodGateway6() netip.Prefix {
	p := r.PodPool6()
	if p.Name == "" {
		return netip.Prefix{}
	}
	return netip.PrefixFrom(p.GatewayAddr(), p.Subnet.Bits())
}

// SetUp creates the node's pod bridge with its gateway address and NAT of
// the pod subnet's outbound traffic, and gives the DHCP server the
// addresses this node already leased (a restarted node agent keeps serving
// the guests it adopts). After a crash of the previous agent on the same
// host state it also stops the DHCP servers that agent left running,
// rebuilds the masquerade copies of guests still on this node (or arriving
// by migration) and removes those of VMIs that are gone or moved away.
// Call it once before guests start.
func (r *Resolver) SetUp(ctx context.Context) error {
	if r.opts.Host == nil {
		return nil
	}
	if err := r.opts.Host.EnsureBridge(ctx, Bridge{Name: r.opts.PodBridge, Address: r.PodGateway(), Masquerade: true}); err != nil {
		return err
	}
	if gw6 := r.PodGateway6(); gw6.IsValid() {
		if err := r.opts.Host.EnsureBridge(ctx, Bridge{Name: r.opts.PodBridge, Address: gw6, Masquerade: true}); err != nil {
			return err
		}
	}
	if err := r.adopt(ctx); err != nil {
		return err
	}
	list := &virtkit.IPLeaseList{}
	sel := labels.SelectorFromSet(labels.Set{NodeLabel: r.opts.Node})
	if err := r.opts.Store.List(ctx, list, store.ListOptions{LabelSelector: sel}); err != nil {
		return err
	}
	d := DHCP{Interface: r.opts.PodBridge, Subnet: r.opts.PodSubnet, Router: r.PodGateway().Addr()}
	for _, l := range list.Items {
		p, err := netip.ParsePrefix(l.Spec.Address)
		if l.Spec.Pool != PodPool || l.Spec.MAC == "" || err != nil || !r.opts.PodSubnet.Contains(p.Addr()) {
			continue
		}
		if gone, err := r.ownerGone(ctx, &l); err != nil {
			return err
		} else if gone {
			continue // the collector releases it
		}
		if err := r.opts.Host.SetDHCPHost(ctx, d, l.Spec.MAC, p.Addr()); err != nil {
			return err
		}
	}
	return nil
}

// ShortID is a 10-character name part derived from a VMI UID and
// interface, for host links.
func ShortID(uid, iface string) string {
	h := sha256.Sum256([]byte(uid + "/" + iface))
	return hex.EncodeToString(h[:5])
}

// ResolveNetwork implements domain.NetworkResolver.
func (r *Resolver) ResolveNetwork(ctx context.Context, req domain.NetworkRequest) (domain.HostNetwork, error) {
	return r.resolve(ctx, req, false)
}

// resolve prepares the host side of one interface; standby leaves a
// masquerade's pod-side leg off the pod bridge (a migration target).
func (r *Resolver) resolve(ctx context.Context, req domain.NetworkRequest, standby bool) (domain.HostNetwork, error) {
	if err := ctx.Err(); err != nil {
		return domain.HostNetwork{}, err
	}
	owner := Owner{Namespace: req.Namespace, Name: req.VMIName, UID: req.UID, Interface: req.Interface, MAC: req.MAC, Node: r.opts.Node}
	switch req.Kind {
	case domain.NetworkPod:
		return r.pod(ctx, req, owner, standby)
	case domain.NetworkMultus:
		return r.multus(ctx, req, owner)
	}
	return domain.HostNetwork{}, fmt.Errorf("network kind %q: %w", req.Kind, domain.ErrUnsupported)
}

func (r *Resolver) pod(ctx context.Context, req domain.NetworkRequest, owner Owner, standby bool) (domain.HostNetwork, error) {
	if req.Binding != "bridge" && req.Binding != "masquerade" {
		return domain.HostNetwork{}, fmt.Errorf("%s binding on the pod network: %w", req.Binding, domain.ErrNotResolved)
	}
	addr, err := r.ipam.Allocate(ctx, r.PodPool(), owner)
	if err != nil {
		return domain.HostNetwork{}, err
	}
	if req.Binding == "bridge" {
		if r.opts.Host != nil {
			err := r.opts.Host.SetDHCPHost(ctx, DHCP{Interface: r.opts.PodBridge, Subnet: r.opts.PodSubnet, Router: r.PodGateway().Addr()}, req.MAC, addr.Addr())
			if err != nil {
				return domain.HostNetwork{}, err
			}
		}
		return domain.HostNetwork{Type: domain.AttachBridge, Source: r.opts.PodBridge, MTU: uint(r.opts.MTU)}, nil
	}
	m := r.masquerade(owner, addr)
	m.GuestMAC, m.Ports, m.Standby, m.MTU = req.MAC, req.Ports, standby, r.opts.MTU
	if p6 := r.PodPool6(); p6.Name != "" {
		if m.PodAddress6, err = r.ipam.Allocate(ctx, p6, owner); err != nil {
			return domain.HostNetwork{}, err
		}
		m.PodGateway6 = r.PodGateway6().Addr()
	}
	if r.opts.Host != nil {
		if err := r.opts.Host.EnsureMasquerade(ctx, m); err != nil {
			return domain.HostNetwork{}, err
		}
	}
	return domain.HostNetwork{Type: domain.AttachBridge, Source: m.GuestBridge(), MTU: uint(r.opts.MTU)}, nil
}

// masquerade describes this node's copy of one interface's masquerade.
// The pieces are named per node (two node agents sharing one network
// namespace each have their own copy during a migration); the MACs of the
// namespace's legs are per interface, the same on every node.
func (r *Resolver) masquerade(o Owner, addr netip.Prefix) Masquerade {
	uid, iface := o.UID, o.Interface
	return Masquerade{
		ID: ShortID(uid+"@"+r.opts.Node, iface), PodBridge: r.opts.PodBridge, PodAddress: addr,
		PodGateway: r.PodGateway().Addr(),
		PodMAC:     localMAC("pod/" + uid + "/" + iface), GatewayMAC: localMAC("gw/" + uid + "/" + iface),
		Owner: MasqueradeOwner{Namespace: o.Namespace, Name: o.Name, UID: uid, Node: r.opts.Node},
	}
}

// localMAC is a stable locally administered unicast MAC derived from s.
func localMAC(s string) string {
	h := sha256.Sum256([]byte(s))
	return fmt.Sprintf("0a:%02x:%02x:%02x:%02x:%02x", h[0], h[1], h[2], h[3], h[4])
}

// NetworkAttachment is a NetworkAttachmentDefinition resolved for one node.
type NetworkAttachment struct {
	// Name is the definition's namespace/name.
	Name   string
	Config *virtkit.CNIConfig
	// Pool is the host-local range (Name empty when the config has no IPAM).
	Pool Pool
	// Bridge is the bridge guests attach to: the config's bridge, or for a
	// VLAN a child bridge (vkn + hash) joined to it as an access port.
	Bridge string
	// Parent is the config's bridge (the default cni0 when unset).
	Parent string
	// HostLeg is the host interface holding Gateway: Parent, or for a VLAN
	// a VLAN device on Parent (vkl + hash).
	HostLeg string
	// Gateway is the address the host holds (isGateway).
	Gateway netip.Prefix
}

// tenantError is an error about the tenant's own NetworkAttachmentDefinition:
// its text names only the definition and its configuration, so a VMI's
// status may carry it (TenantMessage) where a host error would be masked.
type tenantError struct{ err error }

func (e tenantError) Error() string         { return e.err.Error() }
func (e tenantError) Unwrap() error         { return e.err }
func (e tenantError) TenantMessage() string { return e.err.Error() }

// Attachment reads the NetworkAttachmentDefinition a multus networkName
// ("name" in namespace, or "namespace/name") names and checks its CNI
// configuration. store.ErrNotFound when there is none; ErrUnsupportedCNI
// naming the type or field virtkit cannot honour.
func Attachment(ctx context.Context, st store.Store, namespace, networkName string) (*NetworkAttachment, error) {
	ns, name, ok := strings.Cut(networkName, "/")
	if !ok {
		ns, name = namespace, networkName
	}
	nad := &virtkit.NetworkAttachmentDefinition{}
	if err := st.Get(ctx, store.Key{Namespace: ns, Name: name}, nad); err != nil {
		return nil, err
	}
	cfg, errs := virtkit.ParseCNIConfig(nad.Spec.Config, field.NewPath("spec", "config"))
	if len(errs) > 0 {
		return nil, tenantError{fmt.Errorf("NetworkAttachmentDefinition %s/%s: %w: %w", ns, name, ErrUnsupportedCNI, errs.ToAggregate())}
	}
	if cfg.Type != "bridge" {
		return nil, tenantError{fmt.Errorf("NetworkAttachmentDefinition %s/%s: CNI plugin type %q: %w (only \"bridge\" is)", ns, name, cfg.Type, ErrUnsupportedCNI)}
	}
	if cfg.IPMasq {
		return nil, tenantError{fmt.Errorf("NetworkAttachmentDefinition %s/%s: ipMasq: %w", ns, name, ErrUnsupportedCNI)}
	}
	att := &NetworkAttachment{Name: ns + "/" + name, Config: cfg, Parent: cfg.Bridge}
	if att.Parent == "" {
		att.Parent = "cni0" // the bridge plugin's default
	}
	att.Bridge, att.HostLeg = att.Parent, att.Parent
	if cfg.VLAN > 0 {
		h := sha256.Sum256([]byte(ns + "/" + name))
		id := hex.EncodeToString(h[:5])
		att.Bridge, att.HostLeg = "vkn"+id, "vkl"+id
	}
	if cfg.IPAM != nil {
		r := virtkit.CNIIPRange{Subnet: cfg.IPAM.Subnet, RangeStart: cfg.IPAM.RangeStart, RangeEnd: cfg.IPAM.RangeEnd, Gateway: cfg.IPAM.Gateway}
		if len(cfg.IPAM.Ranges) > 0 {
			if len(cfg.IPAM.Ranges) > 1 || len(cfg.IPAM.Ranges[0]) != 1 {
				return nil, tenantError{fmt.Errorf("NetworkAttachmentDefinition %s/%s: ipam.ranges: more than one range: %w", ns, name, ErrUnsupportedCNI)}
			}
			r = cfg.IPAM.Ranges[0][0]
		}
		pool := Pool{Name: ns + "/" + name}
		pool.Subnet, _ = netip.ParsePrefix(r.Subnet) // checked by ParseCNIConfig
		pool.RangeStart, _ = netip.ParseAddr(r.RangeStart)
		pool.RangeEnd, _ = netip.ParseAddr(r.RangeEnd)
		pool.Gateway, _ = netip.ParseAddr(r.Gateway)
		att.Pool = pool
		if cfg.IsGateway {
			att.Gateway = netip.PrefixFrom(pool.GatewayAddr(), pool.Subnet.Bits())
		}
	}
	return att, nil
}

func (r *Resolver) multus(ctx context.Context, req domain.NetworkRequest, owner Owner) (domain.HostNetwork, error) {
	att, err := Attachment(ctx, r.opts.Store, req.Namespace, req.MultusNetworkName)
	if errors.Is(err, store.ErrNotFound) && r.opts.Fallback != nil {
		return r.opts.Fallback.ResolveNetwork(ctx, req)
	}
	if err != nil {
		return domain.HostNetwork{}, fmt.Errorf("multus network %q: %w", req.MultusNetworkName, err)
	}
	if req.Binding != "bridge" {
		return domain.HostNetwork{}, fmt.Errorf("%s binding on a bridge network attachment: %w", req.Binding, domain.ErrNotResolved)
	}
	var addr netip.Prefix
	if att.Pool.Name != "" {
		if addr, err = r.ipam.Allocate(ctx, att.Pool, owner); err != nil {
			return domain.HostNetwork{}, err
		}
	}
	if h := r.opts.Host; h != nil {
		if att.Config.VLAN > 0 {
			if err := vlanAttachment(ctx, h, att); err != nil {
				return domain.HostNetwork{}, err
			}
		} else if err := h.EnsureBridge(ctx, Bridge{Name: att.Bridge, Address: att.Gateway}); err != nil {
			return domain.HostNetwork{}, err
		}
		// The guest learns its host-local address by DHCP from the host's
		// address on the bridge; without one (isGateway false) the address
		// is leased and reported but the guest configures it itself.
		if addr.IsValid() && att.Gateway.IsValid() {
			d := DHCP{Interface: att.HostLeg, Subnet: att.Pool.Subnet, Router: att.Gateway.Addr()}
			if err := h.SetDHCPHost(ctx, d, req.MAC, addr.Addr()); err != nil {
				return domain.HostNetwork{}, err
			}
		}
	}
	out := domain.HostNetwork{Type: domain.AttachBridge, Source: att.Bridge}
	if att.Config.MTU > 0 {
		out.MTU = uint(att.Config.MTU)
	}
	return out, nil
}

// vlanAttachment makes the host side of a NetworkAttachmentDefinition with
// a vlan: the VLAN-filtering parent bridge, the child bridge the guests
// join as an access port of the VLAN, and with a gateway the host's VLAN
// device holding it. A host that cannot (a kernel without bridge VLAN
// filtering or 802.1Q) fails with an error whose tenant message names the
// definition's vlan field, so the VMI says why it does not run instead of
// running untagged.
func vlanAttachment(ctx context.Context, h HostNetworker, att *NetworkAttachment) error {
	vlan := att.Config.VLAN
	err := h.EnsureBridge(ctx, Bridge{Name: att.Parent, VLANFiltering: true})
	if err == nil {
		err = h.EnsureBridge(ctx, Bridge{Name: att.Bridge})
	}
	if err == nil {
		err = h.VLANPort(ctx, att.Parent, att.Bridge, vlan)
	}
	if err == nil && att.Gateway.IsValid() {
		err = h.VLANInterface(ctx, att.Parent, att.HostLeg, vlan, att.Gateway)
	}
	if errors.Is(err, ErrUnsupportedHost) {
		return unsupportedVLANError{
			msg: fmt.Sprintf("NetworkAttachmentDefinition %s: spec.config.vlan: VLAN %d is not supported by this node "+
				"(its kernel has no bridge VLAN filtering or no 802.1Q VLAN devices); the guest is not started untagged", att.Name, vlan),
			err: err,
		}
	}
	return err
}

// unsupportedVLANError: a node that cannot put guests on a VLAN. Error()
// has the host's details for the node's log; TenantMessage names the
// definition and its field for the VMI's status.
type unsupportedVLANError struct {
	msg string
	err error
}

func (e unsupportedVLANError) Error() string         { return e.msg + ": " + e.err.Error() }
func (e unsupportedVLANError) Unwrap() error         { return e.err }
func (e unsupportedVLANError) TenantMessage() string { return e.msg }

// InterfaceAddresses maps the VMI's interface names to the addresses
// leased to them (the node agent reports them in status.interfaces; see
// node.InterfaceAddresser).
func (r *Resolver) InterfaceAddresses(ctx context.Context, vmi *virtkit.VirtualMachineInstance) (map[string][]string, error) {
	leases, err := r.ipam.OwnedBy(ctx, string(vmi.UID))
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, v6 := range []bool{false, true} { // IPv4 first, the primary address
		for _, l := range leases {
			p, err := netip.ParsePrefix(l.Spec.Address)
			if err != nil || p.Addr().Is6() != v6 {
				continue
			}
			out[l.Spec.Interface] = append(out[l.Spec.Interface], p.Addr().String())
		}
	}
	return out, nil
}
