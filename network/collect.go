package network

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// Collect releases the leases whose owner is gone: the VMI was deleted (or
// replaced by one of the same name with another UID) or reached a final
// phase. A VMI being deleted keeps its address until the store drops it,
// which the node agent's finalizer delays until the guest has stopped, so
// an address is never reused while a guest still answers on it. Node
// subnet leases (no owner) are kept. It returns how many it released.
func (m *IPAM) Collect(ctx context.Context) (int, error) {
	leases, err := m.Leases(ctx, "")
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for i := range leases {
		l := &leases[i]
		if l.Spec.OwnerUID == "" || l.Spec.OwnerName == "" {
			continue
		}
		vmi := &virtkit.VirtualMachineInstance{}
		err := m.Store.Get(ctx, store.Key{Namespace: l.Spec.OwnerNamespace, Name: l.Spec.OwnerName}, vmi)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			errs = append(errs, err)
			continue
		case string(vmi.UID) == l.Spec.OwnerUID && !vmi.IsFinal():
			continue
		case string(vmi.UID) == l.Spec.OwnerUID && vmi.IsFinal() && len(vmi.Finalizers) > 0:
			continue // the node agent still tears the guest down
		}
		if err := m.Store.Delete(ctx, l, store.DeleteOptions{}); err != nil && !errors.Is(err, store.ErrNotFound) {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// CollectorOptions configure [IPAM.RunCollector].
type CollectorOptions struct {
	// Interval between full passes; default 30 s. A deleted VMI triggers a
	// pass at once.
	Interval time.Duration
	// Logger receives failures; nil discards them.
	Logger *slog.Logger
}

// RunCollector releases the leases of deleted VMIs until ctx ends: one
// pass on every VMI deletion seen through a watch, and one every Interval.
func (m *IPAM) RunCollector(ctx context.Context, opts CollectorOptions) error {
	if opts.Interval <= 0 {
		opts.Interval = 30 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	kick := make(chan struct{}, 1)
	go func() {
		for ctx.Err() == nil {
			events, err := m.Store.Watch(ctx, &virtkit.VirtualMachineInstanceList{}, store.WatchOptions{})
			if err != nil {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
					continue
				}
			}
			for ev := range events {
				if ev.Type == store.Deleted || ev.Type == store.Error {
					select {
					case kick <- struct{}{}:
					default:
					}
				}
			}
		}
	}()
	t := time.NewTicker(opts.Interval)
	defer t.Stop()
	for {
		if _, err := m.Collect(ctx); err != nil && ctx.Err() == nil {
			log.Warn("releasing leases of deleted VMIs", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-kick:
		}
	}
}
