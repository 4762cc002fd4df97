package hypervisor

import (
	"context"
	"time"
)

// MigrationCapabilities describe what a backend's migrations offer beyond
// [MigrationJob], known before a job starts, so a policy can plan with the
// actuators and measurements it will really have.
type MigrationCapabilities struct {
	// DirectThrottle: the backend's jobs implement [Throttler], so the vCPU
	// throttle can be set to any percentage at any time during the job.
	// Without it the only throttle is QEMU's auto-converge, enabled (with
	// its initial and increment parameters) when the job starts.
	DirectThrottle bool
	// DirtyRateDuringJob: the guest's dirty rate can be measured while a
	// migration job runs without disturbing the job's own dirty tracking.
	// Without it the only in-job figure is the job's dirty rate
	// ([JobStats.MemoryDirtyRate]), which QEMU computes at its bitmap syncs.
	DirtyRateDuringJob bool
	// JobDirtyRateBeforeSync: the job's dirty rate means something before
	// QEMU's first bitmap sync after the setup one (MemoryIteration >= 2).
	// libvirt reports 0 there, which is no measurement.
	JobDirtyRateBeforeSync bool
	// StopCopyUncapped: a job's bandwidth cap (MigrationParams.Bandwidth)
	// holds for pre-copy only; what is left at the switchover moves at the
	// link's full speed (QEMU lifts max-bandwidth when it stops the guest).
	// QEMU's switchover rule (pending < measured bandwidth × downtime
	// limit) then measures the pause at the capped rate, which bounds the
	// real pause from above, and every byte left for the stop-and-copy
	// phase moves faster than the cap. A fact of QEMU's data path, not an
	// API: the simulator models it too (its stop-and-copy runs at the
	// link's speed).
	StopCopyUncapped bool
	// BackgroundSyncPeriod: in a job started with auto-converge, the
	// backend syncs the dirty bitmap at least this often once the first
	// pass has ended, also in the middle of a long pass, so the job's dirty
	// rate ([JobStats.MemoryDirtyRate]) is fresh evidence within this period
	// (QEMU 9.2 and later: every 5 s; each such sync also counts as an
	// iteration in [JobStats.MemoryIteration]). 0: the job's figures change
	// only when a pass ends.
	BackgroundSyncPeriod time.Duration
}

// MigrationCapabilityReporter is implemented by a [Migrator] that can say up
// front what its migrations offer. A Migrator without it is taken to offer
// what its jobs implement, learned only once a job runs.
type MigrationCapabilityReporter interface {
	MigrationCapabilities(ctx context.Context) (MigrationCapabilities, error)
}
