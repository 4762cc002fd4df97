package migration

import (
	"fmt"
	"math"
	"time"
)

// KubeVirtOptions configure [KubeVirtPolicy]; the zero value is KubeVirt's
// cluster default (pkg/virt-config/virt-config.go, main 2026).
type KubeVirtOptions struct {
	// CompletionTimeoutPerGiB is the completion budget per (decimal,
	// rounded-up) GB of guest memory; 0 = 150 s.
	CompletionTimeoutPerGiB time.Duration
	// ProgressTimeout aborts when the remaining data has not fallen for
	// this long; 0 = 150 s, negative disables it.
	ProgressTimeout time.Duration
	// AllowAutoConverge and AllowPostCopy are the migration configuration's
	// flags (default false). Each takes effect only where the migration's own
	// permissions (Progress) allow it too.
	AllowAutoConverge bool
	AllowPostCopy     bool
}

// KubeVirtPolicy re-implements the legacy monitor loop of KubeVirt's
// virt-launcher (live-migration-source.go, handleLegacyConvergence): start
// with QEMU's downtime limit, AUTO_CONVERGE and POSTCOPY flags as
// configured; every poll, first match wins:
//
//  1. in post-copy: nothing (never abort in post-copy);
//  2. allowWorkloadDisruption (= allowPostCopy) and elapsed > the completion
//     budget: switch to post-copy;
//  3. no progress (remaining not lower than at the previous poll) for longer
//     than progressTimeout: abort;
//  4. elapsed > the completion budget: abort.
//
// The budget is completionTimeoutPerGiB × ceil(memory / 10^9). The pause
// fallback of rule 2 (disruption allowed without post-copy) cannot arise here
// because allowWorkloadDisruption follows allowPostCopy, KubeVirt's default.
type KubeVirtPolicy struct {
	opts KubeVirtOptions
	name string
}

// NewKubeVirtPolicy returns KubeVirt's legacy rules with opts.
func NewKubeVirtPolicy(opts KubeVirtOptions) *KubeVirtPolicy {
	if opts.CompletionTimeoutPerGiB == 0 {
		opts.CompletionTimeoutPerGiB = 150 * time.Second
	}
	if opts.ProgressTimeout == 0 {
		opts.ProgressTimeout = 150 * time.Second
	}
	name := "kubevirt"
	if opts.AllowAutoConverge && opts.AllowPostCopy {
		name = "kubevirt-ac-pc"
	} else if opts.AllowAutoConverge {
		name = "kubevirt-ac"
	} else if opts.AllowPostCopy {
		name = "kubevirt-pc"
	}
	return &KubeVirtPolicy{opts: opts, name: name}
}

// Name is "kubevirt", or "kubevirt-ac-pc" with both flags on.
func (k *KubeVirtPolicy) Name() string { return k.name }

// PollInterval is KubeVirt's monitorSleepPeriodMS.
func (k *KubeVirtPolicy) PollInterval() time.Duration { return 400 * time.Millisecond }

// AcceptableCompletionTime is KubeVirt's completion budget for a guest of
// memory bytes: perGiB × ceil(memory / 10^9) (Quantity.ScaledValue(Giga)).
func (k *KubeVirtPolicy) AcceptableCompletionTime(memory uint64) time.Duration {
	gb := (memory + 1e9 - 1) / 1e9
	return k.opts.CompletionTimeoutPerGiB * time.Duration(gb)
}

// Decide applies the rules in KubeVirt's order.
func (k *KubeVirtPolicy) Decide(p Progress) Action {
	postCopy := k.opts.AllowPostCopy && p.AllowPostCopy
	autoConverge := k.opts.AllowAutoConverge && p.AllowAutoConverge
	act := k.AcceptableCompletionTime(p.Memory)
	f := figures{}.seconds("elapsed", p.Elapsed).seconds("acceptableCompletionTime", act)
	switch {
	case p.Phase == PhasePlanning:
		return Action{Kind: ActionStart, Rule: RuleStart, PostCopy: postCopy, AutoConverge: autoConverge,
			DowntimeLimit: p.DowntimeLimit,
			Reason:        "start pre-copy with QEMU's downtime limit; auto-converge and post-copy as configured",
			Figures:       f}
	case p.Phase == PhasePostCopy:
		return Action{Kind: ActionContinue, Rule: RulePostCopyRunning, Reason: "in post-copy: never abort", Figures: f}
	case postCopy && p.Elapsed > act:
		return Action{Kind: ActionSwitchPostCopy, Rule: RuleCompletionTimeoutPostCopy,
			Reason:  fmt.Sprintf("not completed within the acceptable completion time %v: switch to post-copy", act),
			Figures: f}
	case k.opts.ProgressTimeout > 0 && p.SinceProgress > k.opts.ProgressTimeout:
		return Action{Kind: ActionAbort, Rule: RuleProgressTimeout,
			Reason:  fmt.Sprintf("live migration stuck for %d s", int(p.SinceProgress.Seconds())),
			Figures: f.seconds("sinceProgress", p.SinceProgress).seconds("progressTimeout", k.opts.ProgressTimeout)}
	case p.Elapsed > act:
		return Action{Kind: ActionAbort, Rule: RuleCompletionTimeout,
			Reason:  fmt.Sprintf("live migration is not completed after %d s", int(act.Seconds())),
			Figures: f}
	}
	return Action{Kind: ActionContinue, Rule: RuleWithinBudget, Reason: "within the completion budget", Figures: f}
}

// NovaTimeoutAction is live_migration_timeout_action.
type NovaTimeoutAction string

const (
	NovaAbort         NovaTimeoutAction = "abort"
	NovaForceComplete NovaTimeoutAction = "force_complete"
)

// NovaOptions configure [NovaPolicy]; the zero value is Nova's default
// configuration (nova/conf/libvirt.py).
type NovaOptions struct {
	// Downtime is live_migration_downtime (0 = 500 ms), reached in
	// DowntimeSteps (0 = 10) steps, one every DowntimeDelayPerGiB × data_gb
	// (0 = 75 s).
	Downtime            time.Duration
	DowntimeSteps       int
	DowntimeDelayPerGiB time.Duration
	// CompletionTimeoutPerGiB is live_migration_completion_timeout
	// (0 = 800 s; negative disables it).
	CompletionTimeoutPerGiB time.Duration
	// TimeoutAction is what happens at the completion timeout (default
	// abort). force_complete switches to post-copy when permitted.
	TimeoutAction NovaTimeoutAction
	// PermitPostCopy and PermitAutoConverge are live_migration_permit_*
	// (default false); each also needs the migration's own permission.
	// Auto-converge is used only when post-copy is not.
	PermitPostCopy     bool
	PermitAutoConverge bool
}

// NovaPolicy re-implements the libvirt driver's _live_migration_monitor
// (nova/virt/libvirt/driver.py, migration.py), polling every 0.5 s with
// data_gb = max(2, memory GiB):
//
//   - downtime ramp: at elapsed ≥ i × int(75 × data_gb) s set the downtime
//     limit to base + offset × i, base = 500/10 ms, offset = (500 − base)/10
//     ms, i = 0..10 (50 ms at the start, 500 ms at the end);
//   - timeout: not in post-copy and elapsed > int(800 × data_gb) s: abort
//     (or post-copy with force_complete and post-copy permitted).
//
// The progress timeout was removed in Nova 19.0.0 (Stein) and is not here.
type NovaPolicy struct{ opts NovaOptions }

// NewNovaPolicy returns Nova's rules with opts.
func NewNovaPolicy(opts NovaOptions) *NovaPolicy {
	if opts.Downtime == 0 {
		opts.Downtime = 500 * time.Millisecond
	}
	if opts.DowntimeSteps == 0 {
		opts.DowntimeSteps = 10
	}
	if opts.DowntimeDelayPerGiB == 0 {
		opts.DowntimeDelayPerGiB = 75 * time.Second
	}
	if opts.CompletionTimeoutPerGiB == 0 {
		opts.CompletionTimeoutPerGiB = 800 * time.Second
	}
	if opts.TimeoutAction == "" {
		opts.TimeoutAction = NovaAbort
	}
	return &NovaPolicy{opts: opts}
}

// Name is "nova"; "nova-pc" when post-copy is permitted with the
// force_complete timeout action, "nova-ac" when auto-converge is permitted.
func (n *NovaPolicy) Name() string {
	switch {
	case n.opts.PermitPostCopy && n.opts.TimeoutAction == NovaForceComplete:
		return "nova-pc"
	case n.opts.PermitPostCopy:
		return "nova-postcopy"
	case n.opts.PermitAutoConverge:
		return "nova-ac"
	}
	return "nova"
}

// PollInterval is the driver's 0.5 s monitor sleep.
func (n *NovaPolicy) PollInterval() time.Duration { return 500 * time.Millisecond }

// dataGB is _live_migration_data_gb for memory only: GiB, floored at 2.
func dataGB(memory uint64) float64 {
	return math.Max(2, float64(memory)/(1<<30))
}

// DowntimeAt is the limit Nova's ramp sets at elapsed.
func (n *NovaPolicy) DowntimeAt(memory uint64, elapsed time.Duration) time.Duration {
	gb := dataGB(memory)
	delay := math.Trunc(n.opts.DowntimeDelayPerGiB.Seconds() * gb)
	total := float64(n.opts.Downtime.Milliseconds())
	steps := float64(n.opts.DowntimeSteps)
	base := total / steps
	offset := (total - base) / steps
	ms := base
	for i := 0; i <= n.opts.DowntimeSteps; i++ {
		if elapsed.Seconds() < math.Trunc(delay*float64(i)) {
			break
		}
		ms = math.Trunc(base + offset*float64(i))
	}
	return time.Duration(ms) * time.Millisecond
}

// CompletionTimeout is int(800 × data_gb) seconds, 0 when disabled.
func (n *NovaPolicy) CompletionTimeout(memory uint64) time.Duration {
	if n.opts.CompletionTimeoutPerGiB < 0 {
		return 0
	}
	return time.Duration(math.Trunc(n.opts.CompletionTimeoutPerGiB.Seconds()*dataGB(memory))) * time.Second
}

// Decide applies the timeout, then the downtime ramp.
func (n *NovaPolicy) Decide(p Progress) Action {
	postCopy := n.opts.PermitPostCopy && p.AllowPostCopy
	autoConverge := n.opts.PermitAutoConverge && p.AllowAutoConverge && !postCopy
	timeout := n.CompletionTimeout(p.Memory)
	f := figures{}.seconds("elapsed", p.Elapsed).seconds("completionTimeout", timeout)
	if p.Phase == PhasePlanning {
		return Action{Kind: ActionStart, Rule: RuleStart, PostCopy: postCopy, AutoConverge: autoConverge,
			DowntimeLimit: n.DowntimeAt(p.Memory, 0),
			Reason:        "start with the first step of the downtime ramp",
			Figures:       f}
	}
	if p.Phase != PhasePostCopy && timeout > 0 && p.Elapsed > timeout {
		if n.opts.TimeoutAction == NovaForceComplete && postCopy {
			return Action{Kind: ActionSwitchPostCopy, Rule: RuleCompletionTimeoutPostCopy,
				Reason: fmt.Sprintf("completion timeout %v reached: force complete with post-copy", timeout), Figures: f}
		}
		reason := fmt.Sprintf("live migration not completed after %d s (live_migration_completion_timeout): abort", int(timeout.Seconds()))
		if n.opts.TimeoutAction == NovaForceComplete {
			reason = fmt.Sprintf("completion timeout %v reached: force_complete would pause the guest, which this engine does not do: abort", timeout)
		}
		return Action{Kind: ActionAbort, Rule: RuleCompletionTimeout, Reason: reason, Figures: f}
	}
	if want := n.DowntimeAt(p.Memory, p.Elapsed); p.Phase == PhasePreCopy && want != p.DowntimeLimit {
		return Action{Kind: ActionRaiseDowntime, Rule: RuleDowntimeStep, DowntimeLimit: want,
			Reason:  fmt.Sprintf("downtime ramp step: %v", want),
			Figures: f.add("downtimeLimit", float64(want.Milliseconds()), "ms")}
	}
	return Action{Kind: ActionContinue, Rule: RuleWithinBudget, Reason: "within the completion timeout", Figures: f}
}
