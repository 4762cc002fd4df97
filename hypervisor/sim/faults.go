package sim

import (
	"context"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// CrashGuest ends the running domain as a crashing QEMU would: shut off
// with reason Crashed, a lifecycle event, any migration job of it failed.
// A transient domain is gone afterwards. For fault injection.
func (h *Host) CrashGuest(ctx context.Context, name string) error {
	return h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("crash guest", name)
		if err != nil {
			return err
		}
		if !d.state.IsActive() {
			return invalidState("crash guest", name, "domain is not running")
		}
		h.stop(d, now, hypervisor.ReasonCrashed)
		return nil
	})
}

// DisconnectGuestAgent makes the running domain's guest agent go away (the
// agent channel disconnects and commands fail with
// hypervisor.ErrAgentUnavailable) until the guest boots again. For fault
// injection.
func (h *Host) DisconnectGuestAgent(ctx context.Context, name string) error {
	return h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("disconnect guest agent", name)
		if err != nil {
			return err
		}
		h.disconnectAgent(d, now)
		return nil
	})
}

// CutMigration fails the outgoing migration of the domain as a broken
// migration stream would (the source keeps the guest unless post-copy had
// handed it over). It reports whether a job was running. For fault
// injection.
func (h *Host) CutMigration(ctx context.Context, name string) (bool, error) {
	cut := false
	err := h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("cut migration", name)
		if err != nil {
			return err
		}
		if d.job != nil && d.job.phase < phaseFinishing {
			d.job.fail(h, d, now, "migration stream cut")
			cut = true
		}
		return nil
	})
	return cut, err
}
