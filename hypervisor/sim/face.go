package sim

import (
	"context"

	"github.com/virtkit/virtkit/hypervisor"
)

// libvirtJob is a job as libvirt presents it: only the MigrationJob calls.
type libvirtJob struct{ hypervisor.MigrationJob }

// MigrationCapabilities reports the face the host presents: everything the
// simulator can do, or exactly libvirt's (Options.LibvirtFace).
func (h *Host) MigrationCapabilities(ctx context.Context) (hypervisor.MigrationCapabilities, error) {
	if err := ctx.Err(); err != nil {
		return hypervisor.MigrationCapabilities{}, err
	}
	// Both faces send the stop-and-copy phase at the link's speed, as QEMU
	// does whatever the job's cap.
	if h.opts.LibvirtFace {
		return hypervisor.MigrationCapabilities{StopCopyUncapped: true}, nil
	}
	return hypervisor.MigrationCapabilities{DirectThrottle: true, DirtyRateDuringJob: true, StopCopyUncapped: true}, nil
}

// AutoConvergeSchedule is when QEMU's auto-converge checks the dirty rate.
type AutoConvergeSchedule string

const (
	// AutoConvergeLegacy checks only at the bitmap syncs that end a pass
	// (QEMU before 9.2): a long pass is never throttled while it runs.
	AutoConvergeLegacy AutoConvergeSchedule = "legacy"
	// AutoConvergeQEMU92 adds QEMU 9.2's background sync: once the first
	// check ran, a timer syncs the bitmap every 5 s when no sync happened
	// since its previous tick, so the throttle keeps stepping up (every
	// second exceeding period) during long passes too.
	AutoConvergeQEMU92 AutoConvergeSchedule = "qemu-9.2"
)
