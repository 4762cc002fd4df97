package migration

import (
	"fmt"
	"math"
	"time"
)

// targetRatio is the effective r at which the remaining pre-copy fits the
// budget: (R/B)/(1 − r) ≤ budget − elapsed, clamped to [0.1, 0.5].
func (v *VirtkitPolicy) targetRatio(p Progress, e estimate, budget float64) float64 {
	left := budget - p.Elapsed.Seconds()
	send := e.remaining / e.bw
	if !p.FirstPassDone {
		left = budget
		send = float64(p.Memory) / e.bw
	}
	r := 0.1
	if left > send {
		r = 1 - send/left
	}
	return math.Max(0.1, math.Min(0.5, r))
}

func finishText(p Prediction, finish float64) string {
	if !p.Converges {
		return "no end"
	}
	return fmt.Sprintf("%.0f s", finish)
}

func preCopyVerdict(pred Prediction, finish, budget float64) string {
	if !pred.Converges {
		return "pre-copy cannot converge: " + pred.Why
	}
	return fmt.Sprintf("pre-copy predicted to take %.3g s, over the budget of %.3g s", finish, budget)
}

// hopeless explains why nothing allowed converges.
func (v *VirtkitPolicy) hopeless(p Progress, e estimate, pred Prediction) string {
	why := "pre-copy cannot converge: " + pred.Why
	switch {
	case !p.AllowAutoConverge:
		why += "; throttling is not allowed"
	case !p.CanThrottle && p.Throttle >= 99:
		why += fmt.Sprintf("; QEMU's auto-converge reached %d%% and the dirty rate is still %s", p.Throttle, formatRate(e.dirtyEff))
	case !p.CanThrottle:
		why += "; QEMU's auto-converge cannot throttle enough"
	case v.throttleExhausted(p, e):
		why += fmt.Sprintf("; throttling is ineffective: at %d%% the guest still dirtied %s", p.ThrottleCeiling, formatRate(p.RateAtCeiling.Value))
	default:
		why += fmt.Sprintf("; even a %d%% throttle leaves %s", p.Throttle, formatRate(e.dirtyEff))
	}
	if !p.AllowPostCopy {
		why += "; post-copy is not allowed"
	}
	return why
}

// throttleExhausted reports that the highest throttle the policy may use
// (MaxThrottle directly, 99 % through QEMU's auto-converge) was applied and
// measured, and the guest still dirtied memory as fast as it moves.
func (v *VirtkitPolicy) throttleExhausted(p Progress, e estimate) bool {
	rate, ok := p.RateAtCeiling.Get()
	return ok && p.ThrottleCeiling >= v.highestThrottle(p) && rate > nearCritical*e.bw
}

// highestThrottle is the highest throttle the policy can have: MaxThrottle
// directly, 99 % through QEMU's auto-converge.
func (v *VirtkitPolicy) highestThrottle(p Progress) int {
	if p.CanThrottle {
		return v.opts.MaxThrottle
	}
	return 99
}

// raiseForSpeed raises a short target pause to the configured limit (less
// the reserve) once the first pass is done and what is pending already fits
// the configured threshold: every further round at the short one is time
// the switchover could have saved, and it is worth it only while the rounds
// shrink fast enough to cost under 2 % of the migration. It needs only the
// bandwidth, so it acts before the job has a dirty rate.
func (v *VirtkitPolicy) raiseForSpeed(p Progress, e estimate) (Action, bool) {
	rem, ok := p.Remaining.Get()
	if !ok || !p.FirstPassDone || e.bw <= 0 || e.limit >= e.cap {
		return Action{}, false
	}
	exp := float64(rem) / e.bw
	if exp > e.cap.Seconds() || exp <= e.limit.Seconds() {
		return Action{}, false
	}
	q := p.RoundShrink.Or(0.5)
	extra := math.Inf(1)
	if q < 0.9 {
		k := math.Ceil(math.Log(e.limit.Seconds()/exp) / math.Log(q))
		extra = exp * q * (1 - math.Pow(q, k)) / (1 - q)
	}
	if extra <= 0.02*math.Max(p.Elapsed.Seconds(), float64(p.Memory)/e.bw) {
		return Action{}, false
	}
	f := figures{}.add("remaining", float64(rem), "B").add("bandwidth", e.bw, "B/s").add("roundShrink", q, "")
	return Action{Kind: ActionRaiseDowntime, DowntimeLimit: e.cap, Figures: f,
		Reason: fmt.Sprintf("what is pending (%v at the bandwidth) fits %s; a %v pause would cost %.2f s more rounds",
			seconds(exp).Round(time.Millisecond), e.capText(), e.limit+v.opts.SwitchoverReserve, extra)}, true
}

// cappedPauseNote explains a start at the configured limit under a
// bandwidth cap.
const cappedPauseNote = "; the bandwidth is capped and the switchover moves what is left uncapped, so the pause at the cap bounds the real one and a shorter aim would only cost time"

// hopelessEarly gives up before the first pass ends when nothing allowed
// can help and the dirty-rate samples (at least two) all exceed the
// bandwidth the job has shown by HopelessMargin, with pre-copy not
// converging even at the lowest sample divided by the margin; see
// [PolicyOptions.HopelessMargin].
func (v *VirtkitPolicy) hopelessEarly(p Progress, e estimate, f figures) (Action, bool) {
	o := v.opts
	if o.HopelessMargin < 0 || p.FirstPassDone || p.AllowPostCopy || p.Elapsed < o.EarlyObservation ||
		p.DirtyRateSamples < 2 || p.Throttle > 0 && !v.throttleExhausted(p, e) {
		return Action{}, false
	}
	if p.AllowAutoConverge && !v.throttleExhausted(p, e) {
		return Action{}, false
	}
	low, ok := p.DirtyRateLow.Get()
	if !ok || e.bw <= 0 || low < o.HopelessMargin*e.bw {
		return Action{}, false
	}
	pred, err := Predict(ModelInput{Memory: p.Memory, Bandwidth: e.bw, DirtyRate: low / o.HopelessMargin, DowntimeLimit: e.boundCap})
	if err != nil || pred.Converges {
		return Action{}, false
	}
	why := fmt.Sprintf("all %d dirty-rate samples (lowest %s) are at least %.3g× the bandwidth the job has shown (%s after %v), "+
		"and pre-copy would not converge even at %s (the lowest sample over that margin): %s",
		p.DirtyRateSamples, formatRate(low), o.HopelessMargin, formatRate(e.bw), p.Elapsed.Round(100*time.Millisecond),
		formatRate(low/o.HopelessMargin), v.hopeless(p, e, pred))
	return Action{Kind: ActionAbort, Reason: why,
		Figures: f.add("dirtyRateLow", low, "B/s").add("hopelessMargin", o.HopelessMargin, "").add("dirtyRateSamples", float64(p.DirtyRateSamples), "")}, true
}

// autoConvergeRamping reports that only QEMU's auto-converge can bring
// pre-copy within the budget and has not yet: it runs (no direct
// throttle), is below its 99 % ceiling, and pre-copy at the configured
// limit and today's throttle does not finish within the budget.
func (v *VirtkitPolicy) autoConvergeRamping(p Progress, pred Prediction, finish, budget float64) bool {
	return p.AllowAutoConverge && !p.CanThrottle && p.FirstPassDone && p.Throttle < 99 &&
		(!pred.Converges || finish > budget)
}

// shortLimit is the switchover threshold of the short target pause (the
// configured one when no target is set or the target is not shorter).
func (v *VirtkitPolicy) shortLimit(e estimate) time.Duration {
	if t := reserveFrom(v.opts.TargetDowntime, v.opts.SwitchoverReserve); v.opts.TargetDowntime > 0 && t < e.cap {
		return t
	}
	return e.cap
}

// autoConvergeTooSlow gives up when only QEMU's auto-converge can help (no
// direct throttle, no post-copy), the passes have stopped shrinking, and
// either a whole pass under QEMU's 99 % showed it, or at
// the pace QEMU has shown (a step every second bitmap sync at most, a sync
// per pass) the throttle at which pre-copy converges, or 99 %, cannot be
// reached and the rest sent before the caller's completion timeout, even if
// the guest slows in full proportion to the throttle. Waiting
// for the timeout would only send the same pages again.
func (v *VirtkitPolicy) autoConvergeTooSlow(p Progress, e estimate, in ModelInput, f figures) (Action, bool) {
	// Evidence, not a moment: rounds stuck for a few syncs, and a job
	// dirty rate steady over the syncs under today's throttle (a bursty
	// guest may reach a quiet phase): two of them at QEMU's 99 %, which
	// takes whole passes to reach, three below.
	need := 3
	if p.Throttle >= 99 {
		need = 2
	}
	steady := p.JobDirtyRateSamples >= need && p.JobDirtyRateHigh.Or(math.Inf(1)) <= 1.25*p.JobDirtyRateLow.Or(0)
	if !p.AllowAutoConverge || p.CanThrottle || p.AllowPostCopy || !p.FirstPassDone || !v.roundsStuck(p) || !steady {
		return Action{}, false
	}
	// At QEMU's highest throttle, after one whole pass under it (a rate
	// measured there), the passes shrink too slowly to reach what the
	// limit lets switch over before the completion timeout: nothing is
	// left to try. A rate measured over a pass saturates at the working
	// set, so the passes themselves are the evidence, not the rate.
	if exp, ok := p.ExpectedDowntime.Get(); ok && p.Throttle >= 99 && p.ThrottleCeiling >= 99 && p.RateAtCeiling.Valid &&
		exp > e.cap && p.CompletionTimeout > 0 {
		q := p.RoundShrink.Value
		need := math.Inf(1) // geometric passes from exp down to the threshold
		if q < 1 {
			need = (exp - e.cap).Seconds() / (1 - q)
		}
		if left := p.CompletionTimeout.Seconds() - p.Elapsed.Seconds(); need > left {
			f = f.add("roundShrink", q, "").seconds("expectedPause", exp).add("completionLeft", left, "s")
			return Action{Kind: ActionAbort, Figures: f,
				Reason: fmt.Sprintf("the passes have stopped shrinking: a whole pass under QEMU's highest auto-converge throttle (%d%%) left %.0f %% of what the one before left, %v of sending at the bandwidth, over the %v the switchover may take; at that pace the passes would not get there before the completion timeout in %.0f s; post-copy is not allowed",
					p.Throttle, 100*q, exp.Round(time.Millisecond), e.cap, left)}, true
		}
	}
	if p.CompletionTimeout <= 0 || p.Throttle >= 99 || !p.DirtyRate.Valid {
		return Action{}, false
	}
	// The first pass ends with the job's second iteration; each later
	// bitmap sync adds one.
	syncs := int64(p.Iteration.Or(0)) - 2
	if syncs < 1 {
		return Action{}, false
	}
	interval := math.Max(1, p.SinceFirstPass.Seconds()/float64(syncs))
	step := 2 * interval
	left := p.CompletionTimeout.Seconds() - p.Elapsed.Seconds()
	in.DowntimeLimit = e.cap
	need, eta := 0, math.Inf(1)
	for pct, steps := p.Throttle, 0; pct <= 99; pct, steps = min(pct+defaultACIncrement, 99), steps+1 {
		// Full sensitivity: a learned one rests on samples that a hot
		// working set saturates, and the verdict must not be pessimistic.
		in.DirtyRate = e.dirtyRaw * (1 - float64(pct)/100)
		if pr, err := Predict(in); err == nil && pr.Converges {
			need, eta = pct, float64(steps)*step+pr.Total.Seconds()
			break
		}
		if pct == 99 {
			break
		}
	}
	if eta <= left {
		return Action{}, false
	}
	f = f.seconds("syncInterval", seconds(interval)).add("completionLeft", left, "s").add("roundShrink", p.RoundShrink.Value, "")
	why := fmt.Sprintf("the passes have stopped shrinking (each leaves %.0f %% of the one before) at a %d%% throttle, and QEMU's auto-converge, one step every second bitmap sync (a sync every %.1f s here), ",
		100*p.RoundShrink.Value, p.Throttle, interval)
	if math.IsInf(eta, 1) {
		why += fmt.Sprintf("would not bring pre-copy to converge even at 99 %% (dirty rate %s unthrottled, bandwidth %s)", formatRate(e.dirtyRaw), formatRate(e.bw))
	} else {
		f = f.add("throttleNeeded", float64(need), "%").add("predictedFinish", eta, "s")
		why += fmt.Sprintf("would need about %.0f s to reach %d%% and finish, past the completion timeout in %.0f s", eta, need, left)
	}
	why += "; post-copy is not allowed"
	return Action{Kind: ActionAbort, Figures: f, Reason: why}, true
}

// roundsStuck: the last rounds have not shrunk and the expected pause has
// not improved for a few of them.
func (v *VirtkitPolicy) roundsStuck(p Progress) bool {
	return p.RoundShrink.Or(0) >= stuckShrink && p.StalledRounds >= revertRounds
}
