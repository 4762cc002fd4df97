package network

import (
	"context"
	"errors"
	"fmt"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// hostState is what a Host keeps across node agent restarts ([*Host] has
// it): the masquerade copies it made and the DHCP servers it started.
type hostState interface {
	MasqueradeHost
	Masquerades() ([]Masquerade, error)
	ReapStale(ctx context.Context) (int, error)
}

// adopt takes over what an earlier agent of this node left on the host:
// stale DHCP servers are stopped, masquerade copies of VMIs still here are
// rebuilt (with new DHCP servers), the others removed. Copies of other
// nodes sharing the host are left alone.
func (r *Resolver) adopt(ctx context.Context) error {
	hs, ok := r.opts.Host.(hostState)
	if !ok {
		return nil
	}
	if _, err := hs.ReapStale(ctx); err != nil {
		return err
	}
	copies, err := hs.Masquerades()
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range copies {
		if m.Owner.Node != r.opts.Node {
			continue
		}
		keep, standby, err := r.wanted(ctx, m)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !keep {
			if err := hs.RemoveMasquerade(ctx, m.ID); err != nil {
				errs = append(errs, fmt.Errorf("stale masquerade %s of %s/%s: %w", m.ID, m.Owner.Namespace, m.Owner.Name, err))
			}
			continue
		}
		m.Standby = standby
		if err := r.opts.Host.EnsureMasquerade(ctx, m); err != nil {
			errs = append(errs, fmt.Errorf("masquerade %s of %s/%s: %w", m.ID, m.Owner.Namespace, m.Owner.Name, err))
		}
	}
	return errors.Join(errs...)
}

// ownerGone reports whether the VMI holding a lease no longer exists (or
// is another incarnation) or has finished.
func (r *Resolver) ownerGone(ctx context.Context, l *virtkit.IPLease) (bool, error) {
	vmi := &virtkit.VirtualMachineInstance{}
	err := r.opts.Store.Get(ctx, store.Key{Namespace: l.Spec.OwnerNamespace, Name: l.Spec.OwnerName}, vmi)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return true, nil
	case err != nil:
		return false, err
	}
	return string(vmi.UID) != l.Spec.OwnerUID || vmi.IsFinal(), nil
}

// wanted says whether this node's masquerade copy m is still needed: its
// VMI runs here, or is migrating here (then as a standby unless the guest
// already switched over).
func (r *Resolver) wanted(ctx context.Context, m Masquerade) (keep, standby bool, err error) {
	vmi := &virtkit.VirtualMachineInstance{}
	err = r.opts.Store.Get(ctx, store.Key{Namespace: m.Owner.Namespace, Name: m.Owner.Name}, vmi)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, false, nil
	case err != nil:
		return false, false, err
	case string(vmi.UID) != m.Owner.UID || vmi.IsFinal():
		return false, false, nil
	case vmi.Status.NodeName == r.opts.Node:
		return true, false, nil
	}
	ms := vmi.Status.MigrationState
	if ms != nil && ms.TargetNode == r.opts.Node && !ms.Completed && !ms.Failed {
		return true, m.Standby, nil
	}
	return false, false, nil
}
