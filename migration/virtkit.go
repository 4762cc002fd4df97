package migration

import (
	"fmt"
	"math"
	"time"
)

// PolicyOptions configure the virtkit policy ([NewPolicy]); the zero value is
// the default.
type PolicyOptions struct {
	// TargetSlowdown is the acceptable total time as a multiple of the lower
	// bound M/B; a pre-copy predicted to finish within it is left alone, a
	// slower one gets a remedy (throttle, post-copy). 0 = 1.25.
	TargetSlowdown float64
	// PostCopyGain: after the first pass, when post-copy is allowed, switch
	// as soon as it would finish this share of the lower bound earlier than
	// the predicted pre-copy; 0 = 0.1.
	PostCopyGain float64
	// MaxThrottle is the highest vCPU throttle virtkit applies (percent);
	// 0 = 90.
	MaxThrottle int
	// MinObservation is how long the job must have run before an abort
	// (enough polls for a bandwidth estimate) and, when the engine probes,
	// how long a time its dirty-rate samples must span; 0 = 4 s.
	MinObservation time.Duration
	// SamplePatience and AbortDataShare keep an abort from resting on a
	// moment: before the first pass ends, a verdict that nothing converges
	// waits until the dirty-rate samples (or, without probes, the job)
	// span SamplePatience, so a burst or a bandwidth dip at the start can
	// show itself; unless waiting would send AbortDataShare of the memory
	// for nothing. 0 = 25 s and 0.75.
	SamplePatience time.Duration
	AbortDataShare float64
	// StallRounds: after this many rounds without the expected pause
	// improving, while it stays over the limit, pre-copy is taken not to
	// converge whatever the rates say; 0 = 10.
	StallRounds int
	// StallTime is how long those rounds must span too, so a burst of many
	// short rounds is not taken for a floor (KubeVirt's stall detector
	// looks back 40 s as well); 0 = 40 s. StallData ends that wait
	// sooner where no throttle is allowed: when, StallTime/2 after the
	// first pass, the rounds have resent this many times the guest's
	// memory at the first pass's pace, no sync has left less than 1.5 ×
	// what the highest allowed pause lets through and the last three
	// rounds did not improve it by 1 %, that is a floor too (on a fast link
	// the rounds of a hot set resend all of memory every few seconds for
	// nothing); 0 = 4, negative = never.
	StallTime time.Duration
	StallData float64
	// BurstPatience is how long after the first pass a verdict that
	// nothing converges waits while the job's dirty rate is not steady
	// (its rounds vary by more than a quarter): a phase-driven workload may
	// reach a quiet phase in which pre-copy completes. 0 = 60 s.
	BurstPatience time.Duration
	// ThrottlePatience is how long to wait for the dirty rate to show the
	// effect of a throttle step before judging it; 0 = 10 s.
	ThrottlePatience time.Duration
	// TargetDowntime is the pause virtkit aims for while it costs little:
	// the job starts with this pause less the reserve as its switchover
	// threshold, raised to the configured limit (less the reserve) only when
	// the model says the extra rounds would break the time budget; 0 = 80 ms
	// (what Nova's 50 ms first step gives), negative = start at the
	// configured limit.
	TargetDowntime time.Duration
	// SwitchoverReserve is kept free under every pause the policy aims for,
	// for the fixed costs of the switchover (device state, resume), which
	// QEMU's rule does not count; 0 = 30 ms. The threshold is the pause less
	// the reserve, so the pause stays within the configured limit; when the
	// limit is not much larger than the reserve the threshold is a tenth of
	// the limit.
	SwitchoverReserve time.Duration
	// HopelessMargin lets the policy give up before the first pass ends
	// when nothing allowed can help (no post-copy; no throttle, or the
	// highest one measured and not enough): once the job has run
	// EarlyObservation, every dirty-rate sample (at least two, so no
	// verdict rests on one) must exceed the best bandwidth the job has
	// shown by this factor, and pre-copy must not converge even at the
	// lowest sample divided by it, at the highest pause the bound allows.
	// A false refusal costs a retry (the guest stays where it runs); a
	// slow failure sends memory for minutes, several times over, for
	// nothing; the factor is what a sample must overstate the rate by for
	// the refusal to be wrong. 0 = 2; negative = never before the first
	// pass ends on this rule.
	HopelessMargin float64
	// EarlyObservation is how long the job must have run before that early
	// verdict, so the bandwidth is the job's own; 0 = 10 s.
	EarlyObservation time.Duration
}

func (o PolicyOptions) withDefaults() PolicyOptions {
	if o.TargetSlowdown == 0 {
		o.TargetSlowdown = 1.25
	}
	if o.PostCopyGain == 0 {
		o.PostCopyGain = 0.1
	}
	if o.MaxThrottle == 0 {
		o.MaxThrottle = 90
	}
	if o.MinObservation == 0 {
		o.MinObservation = 4 * time.Second
	}
	if o.SamplePatience == 0 {
		o.SamplePatience = 25 * time.Second
	}
	if o.AbortDataShare == 0 {
		o.AbortDataShare = 0.75
	}
	if o.StallRounds == 0 {
		o.StallRounds = 10
	}
	if o.StallTime == 0 {
		o.StallTime = 40 * time.Second
	}
	if o.StallData == 0 {
		o.StallData = 4
	}
	if o.BurstPatience == 0 {
		o.BurstPatience = 60 * time.Second
	}
	if o.ThrottlePatience == 0 {
		o.ThrottlePatience = 10 * time.Second
	}
	if o.TargetDowntime == 0 {
		o.TargetDowntime = 80 * time.Millisecond
	}
	if o.SwitchoverReserve == 0 {
		o.SwitchoverReserve = 30 * time.Millisecond
	}
	if o.HopelessMargin == 0 {
		o.HopelessMargin = 2
	}
	if o.EarlyObservation == 0 {
		o.EarlyObservation = 10 * time.Second
	}
	return o
}

// VirtkitPolicy is the dirty-rate-aware policy: it predicts pre-copy with
// [Predict] from the measured dirty rate and bandwidth and, when pre-copy
// would not converge or would take longer than TargetSlowdown × M/B, applies
// the least disruptive remedy the permissions allow: throttle just enough
// (learning whether throttling works), post-copy once the model says pre-copy will not do,
// a higher downtime limit within the bound; and aborts at once, with the
// inequality that fails, when nothing allowed can converge.
//
// Decide tries the policy's named rules in a fixed order
// ([VirtkitPolicy.RuleNames], listed in the package documentation); the
// first that applies decides and names itself in [Action.Rule].
//
// Feasibility is judged against BandwidthBest, the highest smoothed
// bandwidth seen, so a temporary dip never turns a converging migration into
// an abort.
type VirtkitPolicy struct{ opts PolicyOptions }

// NewPolicy returns the virtkit policy.
func NewPolicy(opts PolicyOptions) *VirtkitPolicy {
	return &VirtkitPolicy{opts: opts.withDefaults()}
}

// Name is "virtkit".
func (v *VirtkitPolicy) Name() string { return "virtkit" }

// PollInterval is 250 ms: the switchover threshold is decided at the end
// of a pass, and a slow reaction costs rounds on short migrations.
func (v *VirtkitPolicy) PollInterval() time.Duration { return 250 * time.Millisecond }

// WatchSwitchover asks the engine to poll sooner while a pass is about to
// end ([Engine.NextPoll]).
func (v *VirtkitPolicy) WatchSwitchover() bool { return true }

// estimate is what the policy derives from one Progress.
type estimate struct {
	bw        float64 // BandwidthBest, or the hint while planning
	dirtyEff  float64 // effective dirty rate under the current throttle
	dirtyRaw  float64 // unthrottled dirty rate
	eps       float64 // throttle sensitivity (1 until learned)
	epsKnown  bool
	limit     time.Duration
	bound     time.Duration
	threshold float64 // bw × limit
	remaining float64
	// cap is the highest switchover threshold that keeps the real pause
	// within the configured limit (the limit less the reserve); boundCap the
	// same under the policy's bound.
	cap, boundCap time.Duration
	// slo is the configured limit; reserve the policy's switchover
	// reserve; linkOverCap Progress.LinkOverCap when the pause is bounded
	// by a cap.
	slo, reserve time.Duration
	linkOverCap  float64
}

// capText names the threshold cap for a decision's reason: the configured
// limit less the reserve, or in full when the switchover's data moves
// fast enough past a cap to need none.
func (e estimate) capText() string {
	if e.cap+e.reserve > e.slo && e.linkOverCap > 1 {
		return fmt.Sprintf("the configured limit (%v in full: the switchover moves data %.3g× faster than the cap)", e.cap, e.linkOverCap)
	}
	return fmt.Sprintf("the configured limit (%v less %v reserve)", e.cap+e.reserve, e.reserve)
}

func (v *VirtkitPolicy) estimate(p Progress) (estimate, bool) {
	e := estimate{eps: 1, limit: p.DowntimeLimit, bound: p.DowntimeBound}
	if e.limit == 0 {
		e.limit = DefaultDowntimeLimit
	}
	slo := p.ConfiguredDowntime
	if slo == 0 {
		slo = e.limit
	}
	if e.bound < slo {
		e.bound = slo
	}
	e.slo, e.reserve = slo, v.opts.SwitchoverReserve
	if p.PauseBoundedByCap {
		e.linkOverCap = p.LinkOverCap
	}
	e.cap = capUnder(slo, v.opts.SwitchoverReserve, p)
	e.boundCap = capUnder(e.bound, v.opts.SwitchoverReserve, p)
	if eps, ok := p.ThrottleSensitivity.Get(); ok {
		e.eps, e.epsKnown = eps, true
	}
	bw, ok := p.BandwidthBest.Get()
	if !ok && p.Phase == PhasePlanning {
		bw, ok = p.BandwidthHint.Get()
	}
	if !ok || bw <= 0 {
		return e, false
	}
	e.bw = bw
	factor := 1 - e.eps*float64(p.Throttle)/100
	switch {
	case p.DirtyRate.Valid:
		e.dirtyEff = p.DirtyRate.Value
		e.dirtyRaw = e.dirtyEff
		if factor > 0 {
			e.dirtyRaw = e.dirtyEff / factor
		}
		if before, ok := p.DirtyRateBefore.Get(); ok && p.Throttle > 0 && !e.epsKnown {
			// Until the throttle's effect is learned, the unthrottled
			// sample is the better guess of the raw rate.
			e.dirtyRaw = math.Max(e.dirtyRaw, before)
		}
	case p.DirtyRateBefore.Valid:
		e.dirtyRaw = p.DirtyRateBefore.Value
		e.dirtyEff = e.dirtyRaw * factor
	default:
		return e, false
	}
	e.threshold = e.bw * e.limit.Seconds()
	e.remaining = float64(p.Memory)
	if r, ok := p.Remaining.Get(); ok {
		e.remaining = float64(r)
	}
	return e, true
}

// reserveFrom is the switchover threshold for a pause of limit: limit less
// reserve, or a tenth of the limit (at least 1 ms) when that leaves less,
// never more than limit less reserve while that is positive.
func reserveFrom(limit, reserve time.Duration) time.Duration {
	if t := limit - reserve; t >= limit/10 {
		return t
	}
	return max(limit/10, time.Millisecond)
}

// capUnder is the highest switchover threshold that keeps the real pause
// within limit. QEMU's rule lets pending data up to bandwidth × threshold
// into the stop-and-copy phase; when that phase runs uncapped on a link k
// times faster than the cap (Progress.LinkOverCap), those bytes take a
// k-th of the threshold, so a threshold up to (limit − reserve) × k keeps
// the pause within limit. It never exceeds limit itself: the configured
// limit is what QEMU is told at most, as every baseline tells it.
func capUnder(limit, reserve time.Duration, p Progress) time.Duration {
	t := reserveFrom(limit, reserve)
	if k := p.LinkOverCap; p.PauseBoundedByCap && k > 1 && limit > reserve {
		t = max(t, min(limit, time.Duration(float64(limit-reserve)*k).Truncate(time.Millisecond)))
	}
	return t
}

// stalled says whether the rounds have settled at a floor: StallRounds
// rounds without the expected pause improving, spanning StallTime; or,
// sooner, a floor that is plainly one (see floorReached).
func (v *VirtkitPolicy) stalled(p Progress, e estimate) bool {
	return v.stallWindowPassed(p) || v.floorReached(p, e)
}

// stallWindowPassed: StallRounds rounds without the expected pause
// improving, spanning StallTime.
func (v *VirtkitPolicy) stallWindowPassed(p Progress) bool {
	return p.StalledRounds >= v.opts.StallRounds && p.SinceBestExpected >= v.opts.StallTime
}

// floorReached is the data rule: since the first pass ended, StallTime/2
// has passed and StallData × the memory has been resent, yet the best
// pause the job has expected after a sync (BestExpected) is still 1.5 ×
// the highest allowed, and the last rounds did not improve by even 1 %
// (rounds that shrink by a percent or two each, as a sequential writer
// just under the bandwidth makes them, are slow, not at a floor: they
// end). It holds only where no throttle may change the guest's pace (a
// climbing auto-converge moves the floor), and the link must carry what
// it carried in the first pass: during a bandwidth dip the rounds stall
// until the link recovers.
// (The job's instantaneous bandwidth is too noisy on a real link to tell
// a dip; the averages over the two spans are not.)
func (v *VirtkitPolicy) floorReached(p Progress, e estimate) bool {
	o := v.opts
	best, ok := p.BestExpected.Get()
	first, fok := p.FirstPassSent.Get()
	if !ok || !fok || o.StallData <= 0 || p.Memory == 0 || !p.FirstPassDone || p.AllowAutoConverge ||
		p.StalledRounds < revertRounds || p.RoundsSinceLowest < revertRounds || p.SinceFirstPass < o.StallTime/2 {
		return false
	}
	if float64(best) < 1.5*float64(e.cap) {
		return false
	}
	resent := float64(p.DataSent.Or(0)) - float64(first)
	firstSpan := (p.Elapsed - p.SinceFirstPass).Seconds()
	if resent < o.StallData*float64(p.Memory) || first == 0 || firstSpan <= 0 {
		return false
	}
	return resent/p.SinceFirstPass.Seconds() >= 0.9*float64(first)/firstSpan
}

// steadyRate says whether the job's own dirty rate over the rounds after
// the first pass is steady: at least three rounds, the highest within a
// quarter of the lowest.
func steadyRate(p Progress) bool {
	low, ok := p.JobDirtyRateLow.Get()
	return ok && p.JobDirtyRateSamples >= 3 && p.JobDirtyRateHigh.Value <= 1.25*low
}

// revertRounds: rounds without the expected pause improving, over the
// raised threshold, before a raised pause is taken back while QEMU's
// auto-converge climbs.
const revertRounds = 3

// stuckShrink: rounds that leave at least this share of what the previous
// one left are not shrinking.
const stuckShrink = 0.9

// nearCritical: an effective dirty rate up to this multiple of the
// bandwidth may still converge, slowly.
const nearCritical = 1.05

// QEMU's auto-converge defaults (cpu-throttle-initial, -increment).
const (
	defaultACInitial   = 20
	defaultACIncrement = 10
)
