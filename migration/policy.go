package migration

import (
	"fmt"
	"strings"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// Policy decides what a migration does next. Decide is pure: the same
// Progress gives the same Action, so policies are tested with tables and the
// engine can re-run Decide on every poll. Whatever a rule must remember
// (progress watermarks, learned throttle sensitivity, bandwidth trend) the
// engine keeps and hands over in Progress.
type Policy interface {
	// Name identifies the policy in reports ("virtkit", "kubevirt", ...).
	Name() string
	// Decide returns the next action. Before the job starts (Progress.Phase
	// == PhasePlanning) it returns ActionStart or ActionRefuse.
	Decide(Progress) Action
}

// PollIntervaler is implemented by policies whose rules assume a poll period
// (KubeVirt polls every 400 ms, Nova every 500 ms); the engine uses it when
// its own Options leave PollInterval unset.
type PollIntervaler interface {
	PollInterval() time.Duration
}

// SwitchoverWatcher is implemented by policies that decide at the end of
// a pass and want Step called sooner while a pass is about to end
// ([Engine.NextPoll]); the baselines keep their fixed periods.
type SwitchoverWatcher interface {
	WatchSwitchover() bool
}

// Phase is where a migration stands.
type Phase string

const (
	// PhasePlanning: measured, not started yet.
	PhasePlanning Phase = "Planning"
	// PhasePreCopy: the job iterates over dirty memory.
	PhasePreCopy Phase = "PreCopy"
	// PhasePostCopy: the guest runs on the target, memory follows on demand.
	PhasePostCopy Phase = "PostCopy"
)

// Progress is everything known about a migration at one poll. Values that
// were not measured are invalid [hypervisor.Measured]s, never zeros.
type Progress struct {
	Phase Phase
	// Elapsed is the time since the job started (0 while planning).
	Elapsed time.Duration
	// Memory is the guest memory to move (M), DataSent the bytes sent so far,
	// Remaining the bytes the job still has to send.
	Memory    uint64
	DataSent  hypervisor.Measured[uint64]
	Remaining hypervisor.Measured[uint64]
	// Iteration is the pre-copy pass (1 = the first full pass);
	// FirstPassDone is true once every page was sent once.
	Iteration     hypervisor.Measured[uint64]
	FirstPassDone bool

	// DirtyRateBefore is the rate measured before the start (page sampling
	// or the sim's model), with no throttle. DirtyRate is the job's own
	// measurement (under Throttle), when it has one.
	DirtyRateBefore hypervisor.Measured[float64]
	DirtyRate       hypervisor.Measured[float64]
	// DirtyRateLow is the lowest of the short dirty-rate samples taken under
	// the current throttle (before the start and by probes during the job)
	// and DirtyRateSpan the time those samples cover: a burst looks
	// hopeless in one sample, not in samples spread over several seconds.
	// Probing says whether the engine takes such samples at all.
	// DirtyRateSamples counts those samples.
	DirtyRateLow     hypervisor.Measured[float64]
	DirtyRateSpan    time.Duration
	DirtyRateSamples int
	Probing          bool
	// JobDirtyRateLow and JobDirtyRateHigh bound the job's own dirty rates
	// over the rounds after the first pass (under the current throttle);
	// JobDirtyRateSamples counts them. A steady rate is a verdict; a
	// spread one means phases (checkpoints, GC) worth waiting out.
	JobDirtyRateLow     hypervisor.Measured[float64]
	JobDirtyRateHigh    hypervisor.Measured[float64]
	JobDirtyRateSamples int
	// StalledRounds counts the rounds since the pause the job expects at
	// switchover (ExpectedDowntime, what the last sync left at the current
	// bandwidth) last improved by more than 4 %: pre-copy has settled at a
	// floor when this grows while ExpectedDowntime stays over the limit.
	StalledRounds int
	// RoundsSinceLowest counts the rounds since the expected pause last
	// improved by more than 1 %: rounds that shrink slowly but steadily
	// keep it at 0, where StalledRounds grows.
	RoundsSinceLowest int
	// SinceBestExpected is the time since the expected pause last improved
	// by more than 4 % (0 before the first pass ends).
	SinceBestExpected time.Duration
	// BestExpected is that best expected pause.
	BestExpected hypervisor.Measured[time.Duration]
	// RoundShrink is the expected pause after the latest round's sync over
	// the one after the round before (after the first pass): how fast the
	// rounds shrink, measured rather than modelled (a hot set shows as a
	// ratio near 1 whatever the dirty rate says).
	RoundShrink hypervisor.Measured[float64]
	// WorkingSet is the most data a sync left pending after the first pass:
	// the writable working set as far as the rounds have shown it.
	WorkingSet hypervisor.Measured[uint64]
	// SinceFirstPass is the time since the first full pass ended,
	// FirstPassSent the data the job had sent by then.
	SinceFirstPass time.Duration
	FirstPassSent  hypervisor.Measured[uint64]
	// Bandwidth is the job's transfer rate at this poll; BandwidthAvg its
	// smoothed value (EWMA), BandwidthBest the highest smoothed value seen:
	// the link's capacity as far as anyone knows. A dip lowers Bandwidth
	// and BandwidthAvg but not BandwidthBest.
	Bandwidth     hypervisor.Measured[float64]
	BandwidthAvg  hypervisor.Measured[float64]
	BandwidthBest hypervisor.Measured[float64]
	// BandwidthHint is an expected bandwidth known before the start (a
	// configured cap or link speed); not measured when unknown.
	BandwidthHint hypervisor.Measured[float64]

	// Throttle is the vCPU throttle now, in percent; ThrottleSensitivity the
	// share of dirtying that follows the throttle (ε), learned by comparing
	// the dirty rate before and after a throttle step.
	Throttle            int
	ThrottleSensitivity hypervisor.Measured[float64]
	// CanThrottle is true when the engine can set the throttle directly
	// (a [hypervisor.Throttler]); otherwise only QEMU's auto-converge exists.
	CanThrottle bool
	// PauseBoundedByCap is true when the job's bandwidth is capped and the
	// backend sends the stop-and-copy phase uncapped
	// ([hypervisor.MigrationCapabilities.StopCopyUncapped]): the pause QEMU's
	// rule allows, reckoned at the cap, is an upper bound of the real one,
	// and data left for the switchover moves faster than it would before.
	PauseBoundedByCap bool
	// LinkOverCap is, when PauseBoundedByCap and the link's capacity are
	// known ([Request.LinkBandwidth]), how many times faster than the cap
	// the switchover's data moves; 0 = unknown.
	LinkOverCap float64
	// SinceThrottle is the time since the throttle last changed (0 when it
	// never did).
	SinceThrottle time.Duration
	// ThrottleCeiling is the highest throttle applied so far and
	// RateAtCeiling the effective dirty rate measured under it (not
	// measured until a fresh measurement came in under that throttle).
	ThrottleCeiling int
	RateAtCeiling   hypervisor.Measured[float64]

	// DowntimeLimit is the switchover threshold now in force on the job;
	// ConfiguredDowntime the limit the migration was configured with (the
	// pause the user accepts; 0 = DowntimeLimit); DowntimeBound the highest
	// a policy may raise it to (never below the configured one).
	DowntimeLimit      time.Duration
	ConfiguredDowntime time.Duration
	DowntimeBound      time.Duration
	// ExpectedDowntime is the job's estimate of the pause at switchover.
	ExpectedDowntime hypervisor.Measured[time.Duration]

	// SinceProgress is the time since Remaining last fell below its value at
	// the previous poll (KubeVirt's progress watermark).
	SinceProgress time.Duration
	// MinRemaining is the lowest Remaining seen after the first pass.
	MinRemaining hypervisor.Measured[uint64]

	// Permissions every policy gets from the migration configuration.
	AllowPostCopy     bool
	AllowAutoConverge bool
	// CompletionTimeout is when the caller aborts the job (0 = never): the
	// request's CompletionTimeout.
	CompletionTimeout time.Duration
}

// ActionKind is what a policy asks for.
type ActionKind string

const (
	// ActionStart starts the job with the action's parameters.
	ActionStart ActionKind = "Start"
	// ActionRefuse declines to start; Reason says why.
	ActionRefuse ActionKind = "Refuse"
	// ActionContinue changes nothing.
	ActionContinue ActionKind = "Continue"
	// ActionThrottle sets the vCPU throttle to ThrottlePercent.
	ActionThrottle ActionKind = "Throttle"
	// ActionRaiseDowntime sets the downtime limit to DowntimeLimit.
	ActionRaiseDowntime ActionKind = "RaiseDowntime"
	// ActionSwitchPostCopy switches the job to post-copy.
	ActionSwitchPostCopy ActionKind = "SwitchPostCopy"
	// ActionAbort cancels the job; the guest stays on the source.
	ActionAbort ActionKind = "Abort"
)

// Action is one decision, with the reason and the numbers behind it.
type Action struct {
	Kind ActionKind `json:"kind"`
	// ThrottlePercent for ActionThrottle.
	ThrottlePercent int `json:"throttlePercent,omitempty"`
	// DowntimeLimit for ActionRaiseDowntime, and the initial limit for
	// ActionStart (0 = leave the backend's default).
	DowntimeLimit time.Duration `json:"downtimeLimit,omitempty"`
	// PostCopy and AutoConverge are ActionStart's flags: enable the later
	// switch to post-copy; let QEMU throttle by its own 20 %+10 % steps.
	PostCopy     bool `json:"postCopy,omitempty"`
	AutoConverge bool `json:"autoConverge,omitempty"`
	// AutoConvergeInitial and AutoConvergeIncrement are QEMU's
	// auto-converge steps for ActionStart (libvirt's
	// VIR_MIGRATE_PARAM_AUTO_CONVERGE_INITIAL/_INCREMENT; 0 = QEMU's 20
	// and 10): the only way to size a throttle through libvirt.
	AutoConvergeInitial   int `json:"autoConvergeInitial,omitempty"`
	AutoConvergeIncrement int `json:"autoConvergeIncrement,omitempty"`
	// Rule names the rule that decided, stable and machine-readable (as a
	// condition's Reason is): "ThrottleStep", "Hopeless", ... The engine
	// takes two Continue actions with the same Rule for the same decision
	// whatever numbers their Reasons quote. Empty when the policy names
	// no rules.
	Rule string `json:"rule,omitempty"`
	// Reason is a sentence a human reads in status and logs.
	Reason string `json:"reason"`
	// Figures are the numbers the decision rests on.
	Figures []Figure `json:"figures,omitempty"`
}

// Figure is one named number behind a decision.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
}

// String renders the action for logs: kind, parameters, reason.
func (a Action) String() string {
	var b strings.Builder
	b.WriteString(string(a.Kind))
	switch a.Kind {
	case ActionThrottle:
		fmt.Fprintf(&b, "{%d%%}", a.ThrottlePercent)
	case ActionRaiseDowntime:
		fmt.Fprintf(&b, "{%v}", a.DowntimeLimit)
	case ActionStart:
		fmt.Fprintf(&b, "{postCopy=%t autoConverge=%t downtime=%v}", a.PostCopy, a.AutoConverge, a.DowntimeLimit)
	}
	if a.Reason != "" {
		b.WriteString(": ")
		b.WriteString(a.Reason)
	}
	return b.String()
}

// Strategic reports whether the action changes the migration's course
// (everything but Continue).
func (a Action) Strategic() bool { return a.Kind != ActionContinue }

// figures is a small builder so rules list their numbers in one line.
type figures []Figure

func (f figures) add(name string, value float64, unit string) figures {
	return append(f, Figure{Name: name, Value: value, Unit: unit})
}

func (f figures) seconds(name string, d time.Duration) figures {
	return f.add(name, d.Seconds(), "s")
}

// measuredFloat converts an integer measurement to float64.
func measuredFloat[T hypervisor.Number](m hypervisor.Measured[T]) hypervisor.Measured[float64] {
	if !m.Valid {
		return hypervisor.Measured[float64]{}
	}
	return hypervisor.Some(float64(m.Value))
}
