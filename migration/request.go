package migration

// What a caller gives an engine: the migration (Request), how to carry it
// out (Options) and the optional dirty-rate probe a hypervisor offers.

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
	"go.opentelemetry.io/otel/trace"
)

// Request is one migration for the engine to carry out.
type Request struct {
	// Domain is the libvirt name of the guest.
	Domain string
	// Memory is the guest memory in bytes (M); required.
	Memory uint64
	// Params address the target and carry fixed knobs (bandwidth cap,
	// parallel connections). The engine sets DowntimeLimit, PostCopy and
	// AutoConverge from the policy's start action.
	Params hypervisor.MigrationParams
	// AllowPostCopy and AllowAutoConverge are the permissions of the
	// migration configuration.
	AllowPostCopy     bool
	AllowAutoConverge bool
	// DowntimeLimit is the configured limit (0 = 300 ms); MaxDowntime the
	// highest a policy may raise it to (0 = DowntimeLimit).
	DowntimeLimit time.Duration
	MaxDowntime   time.Duration
	// BandwidthHint is an expected transfer rate in bytes/s known before the
	// start (0 = unknown), letting a policy refuse before any byte moves.
	BandwidthHint float64
	// LinkBandwidth is the capacity in bytes/s of the network the
	// migration data crosses, when known (a NIC's speed, a measured
	// path); 0 = unknown. Under a bandwidth cap (Params.Bandwidth) on a
	// backend that sends the switchover's data uncapped
	// ([hypervisor.MigrationCapabilities.StopCopyUncapped]), the pause
	// then runs at the link's speed, and a policy that knows how much
	// faster that is than the cap needs no reserve under the configured
	// limit.
	LinkBandwidth float64
	// CompletionTimeout is when the caller aborts a job still running (the
	// node agent's completion timeout, KubeVirt's 150 s per GB); 0 = none.
	// A policy may give up sooner when it predicts the job cannot finish
	// by then.
	CompletionTimeout time.Duration
	// MaxCompletionTimeout is the operator's upper bound on how long a job
	// the policy predicts to converge may run past CompletionTimeout
	// ([Engine.CompletionDeadline]); 0 = CompletionTimeout is final (an
	// explicit timeout, such as a migration policy's).
	MaxCompletionTimeout time.Duration
}

// Validate reports the first bad field.
func (r Request) Validate() error {
	switch {
	case r.Domain == "":
		return fmt.Errorf("domain: required: %w", ErrInvalidInput)
	case r.Memory == 0:
		return fmt.Errorf("memory: must be > 0: %w", ErrInvalidInput)
	case r.DowntimeLimit < 0:
		return fmt.Errorf("downtimeLimit: must be >= 0: %w", ErrInvalidInput)
	case r.MaxDowntime < 0:
		return fmt.Errorf("maxDowntime: must be >= 0: %w", ErrInvalidInput)
	case r.BandwidthHint < 0 || math.IsNaN(r.BandwidthHint):
		return fmt.Errorf("bandwidthHint: must be >= 0: %w", ErrInvalidInput)
	case r.LinkBandwidth < 0 || math.IsNaN(r.LinkBandwidth) || math.IsInf(r.LinkBandwidth, 0):
		return fmt.Errorf("linkBandwidth: must be a finite number >= 0: %w", ErrInvalidInput)
	case r.CompletionTimeout < 0:
		return fmt.Errorf("completionTimeout: must be >= 0: %w", ErrInvalidInput)
	case r.MaxCompletionTimeout < 0:
		return fmt.Errorf("maxCompletionTimeout: must be >= 0: %w", ErrInvalidInput)
	}
	return nil
}

// Options configure an [Engine]; the zero value is the default.
type Options struct {
	// Policy decides; nil = NewPolicy(PolicyOptions{}).
	Policy Policy
	// PollInterval is the time between job polls; 0 = the policy's own
	// period ([PollIntervaler]) or 500 ms.
	PollInterval time.Duration
	// Measurer measures the dirty rate before the start; nil = the migrator
	// if it implements [hypervisor.DirtyRateMeasurer], else no measurement.
	Measurer hypervisor.DirtyRateMeasurer
	// Probe, when set, measures without blocking (libvirt's
	// virDomainStartDirtyRateCalc, sim's StartDirtyRateCalc): Start only
	// begins the pre-start measurement and Step starts the job once it is
	// in, so a harness that drives a virtual clock never blocks. The engine
	// also probes once after each throttle change to learn how much the
	// throttle slowed the dirtying. Leave it nil where sampling contends
	// with the migration's own dirty tracking (QEMU page sampling).
	Probe DirtyRateProbe
	// QEMUAutoConverge makes the engine leave throttling to QEMU's
	// auto-converge (the policy's start flag) even when the job can be
	// throttled directly. Set it for backends whose jobs do not implement
	// [hypervisor.Throttler] (libvirt): the engine only finds out once the
	// job runs, too late to enable auto-converge.
	QEMUAutoConverge bool
	// MeasurePeriod is the sampling period of that measurement; 0 = 1 s.
	MeasurePeriod time.Duration
	// SkipMeasurement starts the job without the pre-start dirty-rate
	// measurement (for policies that do not use it: the baselines).
	SkipMeasurement bool
	// MeasureWorth: the pre-start measurement delays the start by
	// MeasurePeriod, so it runs only when the first pass is expected to take
	// at least this long (memory / Request.BandwidthHint, or the job's cap
	// Params.Bandwidth without a hint); with neither it always runs. 0 = 20 × MeasurePeriod (the delay stays under 5 %).
	// When the request allows post-copy or auto-converge, half of it:
	// a remedy sized at the start pays for the delay on a shorter pass.
	MeasureWorth time.Duration
	// ProbeInterval is the time between probes while the first pass runs
	// (when Probe is set); 0 = 2 s.
	ProbeInterval time.Duration
	// BandwidthSmoothing is the EWMA weight of a new bandwidth sample;
	// 0 = 0.4 (KubeVirt VEP 248's ewmaAlpha).
	BandwidthSmoothing float64
	// ThrottleSettle is how long after a throttle change the job's dirty
	// rate is treated as stale unless a new iteration reported it; 0 = 2 s.
	ThrottleSettle time.Duration
	// Clock is the time source; nil = wall clock.
	Clock Clock
	// Logger receives one line per strategic decision; nil = discard.
	Logger *slog.Logger
	// TracerProvider, when set, traces Run: a "migration.engine" span (a
	// child of the caller's span in ctx) with one "migration.decision"
	// child per decision; nil traces nothing.
	TracerProvider trace.TracerProvider
}

// DirtyRateProbe starts a dirty-rate measurement and returns at once.
type DirtyRateProbe interface {
	StartDirtyRateProbe(ctx context.Context, domain string, period time.Duration) (PendingDirtyRate, error)
}

// PendingDirtyRate is a measurement under way.
type PendingDirtyRate interface {
	// Done is closed once the result is in.
	Done() <-chan struct{}
	// Result returns it (it blocks until Done, or ctx ends).
	Result(ctx context.Context) (hypervisor.DirtyRate, error)
}
