package network

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/store"
)

// MasqueradeHost is what a [HostNetworker] offers for moving and removing
// masquerade copies ([*Host] has it). A host without it keeps the pieces
// until it is closed.
type MasqueradeHost interface {
	ActivateMasquerade(ctx context.Context, m Masquerade) error
	RemoveMasquerade(ctx context.Context, id string) error
}

// standby resolves like the Resolver but leaves masquerade pod legs off
// the pod bridge.
type standby struct{ r *Resolver }

func (s standby) ResolveNetwork(ctx context.Context, req domain.NetworkRequest) (domain.HostNetwork, error) {
	return s.r.resolve(ctx, req, true)
}

// PrepareIncoming prepares this node's side of every network of a VMI
// that is about to migrate here, before the migration starts: the same
// leases (they belong to the VMI, not to a node), the same MACs, this
// node's bridges and DHCP entries, and for masquerade this node's own
// namespace with its NAT, on standby: the pod address answers here only
// after ActivateIncoming. It returns where each interface attaches on this
// node, which the source writes into the domain XML it sends (see
// domain.RetargetInterfaces).
func (r *Resolver) PrepareIncoming(ctx context.Context, vmi *virtkit.VirtualMachineInstance) (map[string]domain.HostNetwork, error) {
	return domain.ResolveNetworks(ctx, vmi, standby{r})
}

// ActivateIncoming makes this node the one answering for the VMI's
// addresses once the guest runs here: masquerade pod legs join the pod
// bridge, and the leases name this node (a restarted agent finds them).
// Idempotent.
func (r *Resolver) ActivateIncoming(ctx context.Context, vmi *virtkit.VirtualMachineInstance) error {
	var errs []error
	mh, _ := r.opts.Host.(MasqueradeHost)
	for _, m := range r.masquerades(ctx, vmi, &errs) {
		if mh != nil {
			if err := mh.ActivateMasquerade(ctx, m); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := r.ipam.Move(ctx, string(vmi.UID), r.opts.Node); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Release removes this node's copies of the VMI's host networking (the
// masquerade namespaces, their NAT and DHCP) and never its leases: the
// source after the VMI migrated away, a target whose incoming migration
// failed, or the node when the VMI's guest is gone. When the VMI is being
// deleted or has finished, the pod bridge's DHCP entries of its bridge
// interfaces go too (a VMI that still runs elsewhere keeps them: on a
// host shared by two nodes that DHCP server serves it there). Idempotent.
func (r *Resolver) Release(ctx context.Context, vmi *virtkit.VirtualMachineInstance) error {
	if r.opts.Host == nil {
		return nil
	}
	var errs []error
	if mh, ok := r.opts.Host.(MasqueradeHost); ok {
		for _, m := range r.masquerades(ctx, vmi, &errs) {
			if err := mh.RemoveMasquerade(ctx, m.ID); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if vmi.DeletionTimestamp != nil || vmi.IsFinal() {
		leases, err := r.ipam.OwnedBy(ctx, string(vmi.UID))
		if err != nil {
			errs = append(errs, err)
		}
		d := DHCP{Interface: r.opts.PodBridge, Subnet: r.opts.PodSubnet, Router: r.PodGateway().Addr()}
		for _, l := range leases {
			if l.Spec.Pool != PodPool || l.Spec.MAC == "" {
				continue
			}
			if err := r.opts.Host.SetDHCPHost(ctx, d, l.Spec.MAC, netip.Addr{}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// masquerades lists this node's masquerade copies of the VMI's pod
// interfaces, from the spec and the VMI's pod leases.
func (r *Resolver) masquerades(ctx context.Context, vmi *virtkit.VirtualMachineInstance, errs *[]error) []Masquerade {
	pod := map[string]bool{}
	for _, n := range vmi.Spec.Networks {
		if n.Pod != nil {
			pod[n.Name] = true
		}
	}
	leases, err := r.ipam.OwnedBy(ctx, string(vmi.UID))
	if err != nil {
		*errs = append(*errs, err)
	}
	addr := map[string]netip.Prefix{}
	for _, l := range leases {
		if l.Spec.Pool != PodPool {
			continue
		}
		if p, err := netip.ParsePrefix(l.Spec.Address); err == nil {
			addr[l.Spec.Interface] = p
		}
	}
	var out []Masquerade
	for _, i := range vmi.Spec.Domain.Devices.Interfaces {
		if i.Masquerade == nil || !pod[i.Name] {
			continue
		}
		out = append(out, r.masquerade(Owner{Namespace: vmi.Namespace, Name: vmi.Name, UID: string(vmi.UID), Interface: i.Name}, addr[i.Name]))
	}
	return out
}

// Move records node as the holder of every lease of owner uid (after a
// migration), so the node's agent finds them when it restarts.
func (m *IPAM) Move(ctx context.Context, uid, node string) error {
	leases, err := m.OwnedBy(ctx, uid)
	if err != nil {
		return err
	}
	var errs []error
	for i := range leases {
		l := &leases[i]
		for attempt := 0; l.Spec.Node != node || l.Labels[NodeLabel] != node; attempt++ {
			l.Spec.Node = node
			if l.Labels == nil {
				l.Labels = map[string]string{}
			}
			l.Labels[NodeLabel] = node
			err := m.Store.Update(ctx, l)
			if err == nil || errors.Is(err, store.ErrNotFound) {
				break
			}
			if !errors.Is(err, store.ErrConflict) || attempt == 4 {
				errs = append(errs, fmt.Errorf("lease %s: %w", l.Name, err))
				break
			}
			if err := m.Store.Get(ctx, store.KeyOf(l), l); err != nil {
				errs = append(errs, fmt.Errorf("lease %s: %w", l.Name, err))
				break
			}
		}
	}
	return errors.Join(errs...)
}
