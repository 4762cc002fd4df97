package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// The target side of a migration.

// lostReason is why the target's copy went away.
func (i *incoming) lostReason() string {
	if w := i.why.Load(); w != nil {
		return *w
	}
	return "the domain went away on the target"
}

// migrationTarget is the receiving side of a job: a host on the same
// Network, or a host in another process behind a TCP stream.
type migrationTarget interface {
	targetName() string
	receiveStart(j *job, sp *spec, wl Workload) error
	receivePostCopy(j *job)
	receiveEnd(j *job, ok bool) bool
}

func (h *Host) targetName() string { return h.Name() }

// receiveStart creates the paused incoming domain.
func (h *Host) receiveStart(j *job, sp *spec, wl Workload) error {
	return h.do(context.Background(), func(now time.Time) error {
		d, ok := h.domains[sp.name]
		if ok {
			switch {
			case d.state.IsActive() || d.incoming != nil:
				return fmt.Errorf("domain %q is already active on %s: %w", sp.name, h.Name(), hypervisor.ErrExists)
			case sp.uuid != "" && d.uuid() != sp.uuid:
				return fmt.Errorf("domain %q has another UUID on %s: %w", sp.name, h.Name(), hypervisor.ErrExists)
			}
		} else {
			d = &domain{config: sp, updated: now}
			h.add(d)
		}
		d.workload = wl
		h.activate(d, sp, now)
		d.bootLeft = 0 // the guest is already booted
		d.incoming = j.inc
		d.state, d.reason = hypervisor.StatePaused, hypervisor.ReasonMigration
		h.emitState(d, now)
		return nil
	})
}

// receivePostCopy lets the target run the guest while memory still arrives.
func (h *Host) receivePostCopy(j *job) {
	_ = h.do(context.Background(), func(now time.Time) error {
		d, ok := h.domains[j.name]
		if !ok || d.incoming != j.inc {
			return nil
		}
		d.state, d.reason = hypervisor.StateRunning, hypervisor.ReasonPostcopy
		h.arriveDisplay(d, j)
		h.resumeGuest(d, now)
		h.emitState(d, now)
		return nil
	})
}

// receiveEnd finishes the target side: the guest runs here (ok) or the
// incoming copy is dropped. It reports whether the domain was still there.
func (h *Host) receiveEnd(j *job, ok bool) bool {
	present := false
	_ = h.do(context.Background(), func(now time.Time) error {
		d, exists := h.domains[j.name]
		if !exists || d.incoming != j.inc {
			return nil
		}
		present = true
		d.incoming = nil
		if !ok {
			if d.reason == hypervisor.ReasonPostcopy && d.running() {
				// The guest ran here on memory it can no longer get.
				h.haltGuest(d, now)
				d.state, d.reason = hypervisor.StatePaused, hypervisor.ReasonPostcopyFailed
				h.emitState(d, now)
				return nil
			}
			h.stop(d, now, hypervisor.ReasonFailed)
			return nil
		}
		if j.params.Persist {
			d.persistent = true
			d.config = d.live
			h.indexUUID(d)
		}
		h.arriveDisplay(d, j)
		wasRunning := d.running()
		switch {
		case j.userPaused:
			// A paused guest arrives paused.
			d.state, d.reason = hypervisor.StatePaused, hypervisor.ReasonUser
		default:
			d.state, d.reason = hypervisor.StateRunning, hypervisor.ReasonMigrated
			if !wasRunning {
				h.resumeGuest(d, now)
			}
		}
		h.emitState(d, now)
		return nil
	})
	return present
}

// arriveDisplay gives the migrated guest the display it had on the source.
func (h *Host) arriveDisplay(d *domain, j *job) {
	if d.display == nil && j.display != nil {
		d.display = restoreDisplay(j.display, h.info(d))
	}
}
