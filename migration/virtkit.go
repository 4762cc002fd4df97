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
// (learning whether throttling works), post-copy after the first full pass,
// a higher downtime limit within the bound; and aborts at once, with the
// inequality that fails, when nothing allowed can converge.
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

// Decide is the virtkit rule set; see [VirtkitPolicy].
func (v *VirtkitPolicy) Decide(p Progress) Action {
	o := v.opts
	if p.Phase == PhasePostCopy {
		return Action{Kind: ActionContinue, Reason: "post-copy: the guest runs on the target, memory follows; never abort now"}
	}
	e, ok := v.estimate(p)
	if p.Phase == PhasePlanning {
		return v.plan(p, e, ok)
	}
	if !ok {
		// (A step of QEMU's auto-converge makes the rate stale; rounds
		// that stay stuck over the limit keep the pause short, see below.)
		stuck := p.AllowAutoConverge && !p.CanThrottle && p.Throttle < 99 && v.roundsStuck(p) && p.ExpectedDowntime.Or(0) > e.cap
		if act, raise := v.raiseForSpeed(p, e); raise && !stuck {
			return act
		}
		return Action{Kind: ActionContinue, Reason: "waiting for a bandwidth and dirty-rate measurement"}
	}
	m := float64(p.Memory)
	lowerBound := m / e.bw
	budget := o.TargetSlowdown * lowerBound
	elapsed := p.Elapsed.Seconds()
	f := figures{}.
		add("dirtyRate", e.dirtyEff, "B/s").
		add("bandwidth", e.bw, "B/s").
		add("remaining", e.remaining, "B").
		add("throttle", float64(p.Throttle), "%")
	if e.epsKnown {
		f = f.add("throttleSensitivity", e.eps, "")
	}

	// Pre-copy as it runs now. Before the first pass ends the whole-memory
	// model applies from t = 0; afterwards the rounds start from what is left.
	in := ModelInput{Memory: p.Memory, Bandwidth: e.bw, DirtyRate: e.dirtyEff, DowntimeLimit: e.limit}
	offset := 0.0
	if p.FirstPassDone && e.remaining > 0 {
		in.Memory = uint64(math.Max(1, math.Min(e.remaining, m)))
		offset = elapsed
	}
	// Where the dirty rate is at or above the bandwidth, what a round
	// leaves is bounded by the working set the rounds have shown, not by
	// all of memory: a hot set that fits the threshold converges.
	if ws, ok := p.WorkingSet.Get(); ok && e.dirtyEff >= e.bw && ws > 0 {
		in.WorkingSet = min(ws, in.Memory)
	}
	cur, err := Predict(in)
	if err != nil {
		return Action{Kind: ActionContinue, Reason: "cannot model this progress: " + err.Error()}
	}
	// The remedies below judge pre-copy at the highest threshold allowed.
	pred := cur
	if e.limit < e.cap {
		in.DowntimeLimit = e.cap
		if pred, err = Predict(in); err != nil {
			return Action{Kind: ActionContinue, Reason: "cannot model this progress: " + err.Error()}
		}
	}
	// Evidence beats the model: a pre-copy whose expected pause has not
	// improved for many rounds sits at a floor the rates do not show (a hot
	// set rewritten every round).
	stalled := v.stalled(p, e)
	if exp, ok := p.ExpectedDowntime.Get(); ok && p.FirstPassDone && stalled && exp > e.cap {
		why := fmt.Sprintf("the pause expected at switchover has stayed at %v or more for %d rounds, over the %v limit", exp.Round(time.Millisecond), p.StalledRounds, e.cap)
		if !v.stallWindowPassed(p) {
			resent := float64(p.DataSent.Or(0)-p.FirstPassSent.Or(0)) / float64(p.Memory)
			why += fmt.Sprintf("; since the first pass the rounds have resent %.1f× the memory and the best pause expected was %v", resent, p.BestExpected.Or(0).Round(time.Millisecond))
		}
		for _, pr := range []*Prediction{&cur, &pred} {
			pr.Converges, pr.Why = false, why
		}
	}
	curFinish := offset + cur.Total.Seconds()
	finish := offset + pred.Total.Seconds()
	f = f.add("ratio", pred.Ratio, "").add("lowerBound", lowerBound, "s")
	if pred.Converges {
		f = f.add("predictedTotal", finish, "s").add("predictedDowntime", pred.Downtime.Seconds()*1000, "ms")
	}
	if p.AllowPostCopy && p.FirstPassDone && pred.Converges {
		// Post-copy is allowed: it sends what is left exactly once. Take it
		// when that saves a noticeable share of the lower bound.
		post := elapsed + e.remaining/e.bw
		if gain := finish - post; gain > o.PostCopyGain*lowerBound {
			return Action{Kind: ActionSwitchPostCopy, Figures: f.add("postCopyFinish", post, "s"),
				Reason: fmt.Sprintf("first pass done; post-copy of the remaining %s finishes at %.0f s, %.0f s before pre-copy would", formatBytes(e.remaining), post, gain)}
		}
	}
	// While QEMU's auto-converge still has to bring the dirty rate down
	// (pre-copy at the configured limit does not finish within the budget
	// at today's throttle), the pause stays short: a high switchover
	// threshold ends each pass while much of the working set is still
	// pending, pages dirtied again then are not new to QEMU's bitmap, and
	// its trigger (dirtied over half of what was sent) fires less often,
	// so the throttle climbs slower and the migration takes longer.
	acStuck := v.autoConvergeRamping(p, pred, finish, budget) && v.roundsStuck(p)
	if acStuck && p.ExpectedDowntime.Or(0) > e.limit {
		if short := v.shortLimit(e); e.limit > short {
			return Action{Kind: ActionRaiseDowntime, DowntimeLimit: short, Figures: f,
				Reason: fmt.Sprintf("%s; QEMU's auto-converge is throttling the guest (%d%% now): back to a %v pause, so every pass ends with the guest's dirtying counted in full and the throttle climbs at QEMU's pace",
					preCopyVerdict(pred, finish, budget), p.Throttle, short+o.SwitchoverReserve)}
		}
	}
	// The short target pause is kept only while it costs (almost) no time:
	// once the configured limit (less the reserve) is predicted to finish
	// more than 2 % earlier, allow it. The rounds' measured shrink judges
	// too: when what the last sync left already fits the configured
	// threshold, every further round at the short one is time the
	// switchover could have saved.
	if act, raise := v.raiseForSpeed(p, e); raise && !(acStuck && p.ExpectedDowntime.Or(0) > e.cap) {
		return act
	}
	// A throttle sized for a rate that has since fallen (a burst ended) is
	// lowered at the first fresh measurement that shows it.
	// It takes a clear fall (under 60 % of the pre-start rate the throttle
	// was sized on) and a lower throttle that still keeps pre-copy within
	// the budget.
	if before, ok := p.DirtyRateBefore.Get(); ok && p.CanThrottle && p.Throttle > 0 && p.DirtyRate.Valid &&
		!v.throttleExhausted(p, e) && e.dirtyRaw < 0.6*before {
		target := v.targetRatio(p, e, budget)
		pct, ok := ThrottleFor(e.dirtyRaw, e.bw, target, e.eps)
		lower := in
		lower.DirtyRate = e.dirtyRaw * (1 - e.eps*float64(pct)/100)
		lower.DowntimeLimit = e.limit
		lp, err := Predict(lower)
		if ok && pct <= p.Throttle-10 && err == nil && lp.Converges && offset+lp.Total.Seconds() <= budget {
			return Action{Kind: ActionThrottle, ThrottlePercent: pct, Figures: f.add("targetRatio", target, ""),
				Reason: fmt.Sprintf("the dirty rate fell to %s (%s unthrottled): %d%% is enough, release the rest", formatRate(e.dirtyEff), formatRate(e.dirtyRaw), pct)}
		}
	}
	// Nor is it raised again while the rounds show that what each sync
	// leaves would not fit the configured limit either.
	if e.limit < e.cap && pred.Converges && !(acStuck && p.ExpectedDowntime.Or(0) > e.cap) && (!cur.Converges || finish < curFinish-0.02*finish) {
		return Action{Kind: ActionRaiseDowntime, DowntimeLimit: e.cap, Figures: f,
			Reason: fmt.Sprintf("a %v pause would take pre-copy to %s; %s finishes at %.1f s",
				e.limit+o.SwitchoverReserve, finishText(cur, curFinish), e.capText(), finish)}
	}
	// 5 % slack so a prediction hovering at the budget does not flip the
	// decision from poll to poll.
	if cur.Converges && curFinish <= budget*1.05 {
		return Action{Kind: ActionContinue, Figures: f,
			Reason: fmt.Sprintf("pre-copy converges: r=%.2f, predicted %.3g s within the budget %.3g s (%.3g × M/B), pause %v",
				cur.Ratio, curFinish, budget, o.TargetSlowdown, cur.Downtime.Round(time.Millisecond))}
	}

	// Post-copy after the first full pass: every page has moved once, what
	// is left moves once more, at B.
	if p.AllowPostCopy && p.FirstPassDone {
		post := elapsed + e.remaining/e.bw
		if !pred.Converges || post < finish {
			return Action{Kind: ActionSwitchPostCopy, Figures: f.add("postCopyFinish", post, "s"),
				Reason: fmt.Sprintf("%s; post-copy of the remaining %s finishes at %.0f s", preCopyVerdict(pred, finish, budget), formatBytes(e.remaining), post)}
		}
	}

	// Throttle: size it so that pre-copy finishes within the budget. A low
	// learned sensitivity only makes the step bigger: whether throttling
	// helps is judged by measuring the highest allowed throttle, since a
	// short sample of a hot working set saturates and looks insensitive.
	exhausted := v.throttleExhausted(p, e)
	throttleUseful := p.AllowAutoConverge && p.CanThrottle && !exhausted
	if throttleUseful && p.Throttle < o.MaxThrottle {
		target := v.targetRatio(p, e, budget)
		pct, _ := ThrottleFor(e.dirtyRaw, e.bw, target, e.eps)
		if pct > o.MaxThrottle {
			pct = o.MaxThrottle
		}
		// Step in at least 10 points so each step is measurable.
		if pct > p.Throttle && (pct >= p.Throttle+10 || pct == o.MaxThrottle) {
			return Action{Kind: ActionThrottle, ThrottlePercent: pct, Figures: f.add("targetRatio", target, ""),
				Reason: fmt.Sprintf("%s; throttle %d%% brings the dirty rate from %s to %s (r=%.2f)",
					preCopyVerdict(pred, finish, budget), pct, formatRate(e.dirtyRaw),
					formatRate(e.dirtyRaw*(1-e.eps*float64(pct)/100)), e.dirtyRaw*(1-e.eps*float64(pct)/100)/e.bw)}
		}
	}

	// Without a direct throttle, QEMU's auto-converge (enabled at the start)
	// raises the throttle itself, up to 99 %; give it the chance while that
	// can work, and give up at once when at QEMU's pace it cannot before
	// the job's completion timeout.
	if act, ok := v.autoConvergeTooSlow(p, e, in, f); ok {
		return act
	}
	if p.AllowAutoConverge && !p.CanThrottle && p.Throttle >= 99 && !exhausted && p.ThrottleCeiling < 99 {
		return Action{Kind: ActionContinue, Figures: f,
			Reason: fmt.Sprintf("%s; QEMU's auto-converge reached %d%%: waiting for the dirty rate under it", preCopyVerdict(pred, finish, budget), p.Throttle)}
	}
	if p.AllowAutoConverge && !p.CanThrottle && p.Throttle < 99 && !exhausted {
		// Whether it can is judged at 99 %, not from a learned sensitivity.
		if !pred.Converges || finish > budget {
			return Action{Kind: ActionContinue, Figures: f,
				Reason: fmt.Sprintf("%s; QEMU's auto-converge is throttling the guest (%d%% now) and can bring the dirty rate under the bandwidth", preCopyVerdict(pred, finish, budget), p.Throttle)}
		}
	}

	// A throttle that does not slow the dirtying enough only slows the guest.
	if p.Throttle > 0 && p.CanThrottle && exhausted {
		return Action{Kind: ActionThrottle, ThrottlePercent: 0, Figures: f,
			Reason: fmt.Sprintf("throttling is ineffective: at %d%% the guest still dirties %s, over the bandwidth %s: release it",
				p.ThrottleCeiling, formatRate(p.RateAtCeiling.Value), formatRate(e.bw))}
	}

	// A higher downtime limit helps once the remaining data has settled at a
	// floor that fits the bound.
	if !pred.Converges && p.FirstPassDone && e.boundCap > e.cap {
		if floor, ok := p.MinRemaining.Get(); ok {
			need := time.Duration(float64(floor) / e.bw * 1.25 * float64(time.Second)).Round(time.Millisecond)
			if need > e.limit && need <= e.boundCap {
				return Action{Kind: ActionRaiseDowntime, DowntimeLimit: need, Figures: f.add("floor", float64(floor), "B"),
					Reason: fmt.Sprintf("remaining data settles at %s: a %v downtime limit (bound %v) lets the switchover happen", formatBytes(float64(floor)), need, e.bound)}
			}
		}
	}

	// A migration that converges is never aborted, however slowly it goes.
	if pred.Converges {
		return Action{Kind: ActionContinue, Figures: f,
			Reason: fmt.Sprintf("pre-copy converges but slower than the budget (predicted %.0f s > %.0f s) and no remedy is left", finish, budget)}
	}
	if p.AllowAutoConverge && p.CanThrottle && p.Throttle > 0 && p.SinceThrottle < o.ThrottlePatience &&
		(!e.epsKnown || p.ThrottleCeiling < p.Throttle || !p.RateAtCeiling.Valid) {
		return Action{Kind: ActionContinue, Figures: f, Reason: "waiting for the dirty rate to respond to the throttle"}
	}
	if p.Elapsed < o.MinObservation {
		return Action{Kind: ActionContinue, Figures: f, Reason: "observing before deciding that nothing converges"}
	}
	if act, ok := v.hopelessEarly(p, e, f); ok {
		return act
	}
	if !p.FirstPassDone && !p.Probing {
		// Without probes during the job the pre-start sample is the only
		// dirty rate until the first pass ends; it may have caught a burst,
		// and aborting on it would fail a guest the baselines migrate.
		return Action{Kind: ActionContinue, Figures: f,
			Reason: "pre-copy looks hopeless on the pre-start sample; the job's own dirty rate after the first pass decides"}
	}
	if !p.FirstPassDone && float64(p.DataSent.Or(0)) < o.AbortDataShare*m {
		span := p.Elapsed
		if p.Probing {
			span = p.DirtyRateSpan
		}
		if span < o.SamplePatience {
			return Action{Kind: ActionContinue, Figures: f.seconds("observed", span),
				Reason: "pre-copy looks hopeless; observing a while longer in case a burst or a bandwidth dip passes"}
		}
	}
	// Before the first pass ends only short samples exist: if the lowest
	// of them converges, the high one may be a burst. Afterwards the job's
	// own rate over whole rounds decides.
	if low, ok := p.DirtyRateLow.Get(); ok && !p.FirstPassDone && low < e.dirtyEff {
		lp, err := Predict(ModelInput{Memory: in.Memory, Bandwidth: e.bw, DirtyRate: low, DowntimeLimit: e.cap})
		if err == nil && lp.Converges {
			return Action{Kind: ActionContinue, Figures: f.add("dirtyRateLow", low, "B/s"),
				Reason: fmt.Sprintf("pre-copy converges at the lowest sampled dirty rate %s: the high rate may be a burst", formatRate(low))}
		}
	}
	if p.AllowPostCopy && !p.FirstPassDone {
		return Action{Kind: ActionContinue, Figures: f, Reason: "pre-copy cannot converge; post-copy once the first pass completes"}
	}
	if low, ok := p.JobDirtyRateLow.Get(); ok && p.FirstPassDone && !stalled {
		lp, err := Predict(ModelInput{Memory: in.Memory, Bandwidth: e.bw, DirtyRate: low, DowntimeLimit: e.cap})
		if err == nil && lp.Converges {
			return Action{Kind: ActionContinue, Figures: f.add("jobDirtyRateLow", low, "B/s"),
				Reason: fmt.Sprintf("pre-copy converges in the quieter rounds (dirty rate %s): waiting for one", formatRate(low))}
		}
		if !steadyRate(p) && p.SinceFirstPass < o.BurstPatience {
			return Action{Kind: ActionContinue, Figures: f.add("jobDirtyRateLow", low, "B/s").add("jobDirtyRateHigh", p.JobDirtyRateHigh.Value, "B/s"),
				Reason: fmt.Sprintf("pre-copy looks hopeless but the dirty rate is not steady yet (%s to %s over %d rounds): observing", formatRate(low), formatRate(p.JobDirtyRateHigh.Value), p.JobDirtyRateSamples)}
		}
	} else if p.FirstPassDone && !stalled && p.SinceFirstPass < o.BurstPatience && !p.Iteration.Valid {
		return Action{Kind: ActionContinue, Figures: f, Reason: "pre-copy looks hopeless; waiting for the job's own dirty rate"}
	}
	// At the highest throttle with the dirty rate within 5 % of the
	// bandwidth, pre-copy sits at the edge: it may still converge, slowly
	// (a baseline that waits long enough gets through). The migration's own
	// completion timeout bounds the wait, not an abort here.
	if highest := v.highestThrottle(p); p.AllowAutoConverge && highest > 0 && p.Throttle >= highest && e.dirtyEff <= nearCritical*e.bw {
		return Action{Kind: ActionContinue, Figures: f,
			Reason: fmt.Sprintf("at the highest throttle (%d%%) the dirty rate %s is within 5 %% of the bandwidth %s: pre-copy may still converge; the completion timeout bounds it", p.Throttle, formatRate(e.dirtyEff), formatRate(e.bw))}
	}
	return Action{Kind: ActionAbort, Figures: f, Reason: v.hopeless(p, e, pred)}
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
