package migration

import (
	"fmt"
	"math"
	"time"
)

// The virtkit policy's rules, in the order [VirtkitPolicy.Decide] tries
// them: the first that applies decides, and its name becomes the action's
// [Action.Rule]. The names are stable and machine-readable, as a
// condition's Reason is; the action's Reason is the sentence for people.
const (
	// Post-copy already runs.
	RulePostCopyRunning = "PostCopyRunning"

	// Planning: start or refuse.
	RuleStartUnmeasured      = "StartUnmeasured"
	RuleStartUnmodelled      = "StartUnmodelled"
	RuleStartPreCopy         = "StartPreCopy"
	RuleStartOnOneSample     = "StartOnOneSample"
	RuleStartThrottleCanHelp = "StartThrottleCanHelp"
	RuleRefuseHopeless       = "RefuseHopeless"

	// Pre-copy without a usable estimate or model.
	RuleUnmodelled = "Unmodelled"

	// Pre-copy: remedies, waits and the abort.
	RulePostCopyFaster         = "PostCopyFaster"
	RuleAutoConvergeShortPause = "AutoConvergeShortPause"
	RuleRaiseForSpeed          = "RaiseForSpeed"
	RuleAwaitMeasurement       = "AwaitMeasurement"
	RuleReleaseThrottle        = "ReleaseThrottle"
	RuleRaiseToConfigured      = "RaiseToConfigured"
	RulePreCopyConverges       = "PreCopyConverges"
	RulePostCopyAfterFirstPass = "PostCopyAfterFirstPass"
	RuleThrottleStep           = "ThrottleStep"
	RuleAutoConvergeTooSlow    = "AutoConvergeTooSlow"
	RuleAutoConvergeAtCeiling  = "AutoConvergeAtCeiling"
	RuleAutoConvergeClimbing   = "AutoConvergeClimbing"
	RuleThrottleIneffective    = "ThrottleIneffective"
	RuleRaiseToFloor           = "RaiseToFloor"
	RuleConvergesSlowly        = "ConvergesSlowly"
	RuleAwaitThrottleEffect    = "AwaitThrottleEffect"
	RuleObserveBeforeAbort     = "ObserveBeforeAbort"
	RuleHopelessEarly          = "HopelessEarly"
	RuleAwaitJobDirtyRate      = "AwaitJobDirtyRate"
	RuleObserveForBurst        = "ObserveForBurst"
	RuleLowestSampleConverges  = "LowestSampleConverges"
	RuleQuieterRoundsConverge  = "QuieterRoundsConverge"
	RuleDirtyRateUnsteady      = "DirtyRateUnsteady"
	RuleAwaitRounds            = "AwaitRounds"
	RuleNearCritical           = "NearCritical"
	RuleHopeless               = "Hopeless"
)

// stage is how far a Progress gets the policy: which rules can apply.
type stage uint8

const (
	// stagePostCopy: the job runs in post-copy.
	stagePostCopy stage = 1 << iota
	// stagePlanning: before the start.
	stagePlanning
	// stageUnmeasured: pre-copy with no bandwidth or no dirty rate yet.
	stageUnmeasured
	// stageUnmodelled: pre-copy whose estimate the model rejects.
	stageUnmodelled
	// stageModelled: pre-copy with an estimate and a prediction.
	stageModelled
)

// rule is one step of the virtkit policy: it applies in the stages of
// its mask and, when its condition holds, returns the action.
type rule struct {
	name   string
	stages stage
	decide func(v *VirtkitPolicy, s *situation) (Action, bool)
}

// virtkitRules is the virtkit policy's rule list, in order; the package
// documentation lists the same names in the same order.
func virtkitRules() []rule {
	return []rule{
		{RulePostCopyRunning, stagePostCopy, (*VirtkitPolicy).postCopyRunning},

		{RuleStartUnmeasured, stagePlanning, (*VirtkitPolicy).startUnmeasured},
		{RuleStartUnmodelled, stagePlanning, (*VirtkitPolicy).startUnmodelled},
		{RuleStartPreCopy, stagePlanning, (*VirtkitPolicy).startPreCopy},
		{RuleStartOnOneSample, stagePlanning, (*VirtkitPolicy).startOnOneSample},
		{RuleStartThrottleCanHelp, stagePlanning, (*VirtkitPolicy).startThrottleCanHelp},
		{RuleRefuseHopeless, stagePlanning, (*VirtkitPolicy).refuseHopeless},

		{RuleUnmodelled, stageUnmodelled, (*VirtkitPolicy).unmodelled},
		{RulePostCopyFaster, stageModelled, (*VirtkitPolicy).postCopyFaster},
		{RuleAutoConvergeShortPause, stageModelled, (*VirtkitPolicy).autoConvergeShortPause},
		{RuleRaiseForSpeed, stageUnmeasured | stageModelled, (*VirtkitPolicy).raiseForSpeedRule},
		{RuleAwaitMeasurement, stageUnmeasured, (*VirtkitPolicy).awaitMeasurement},
		{RuleReleaseThrottle, stageModelled, (*VirtkitPolicy).releaseThrottle},
		{RuleRaiseToConfigured, stageModelled, (*VirtkitPolicy).raiseToConfigured},
		{RulePreCopyConverges, stageModelled, (*VirtkitPolicy).preCopyConverges},
		{RulePostCopyAfterFirstPass, stageModelled, (*VirtkitPolicy).postCopyAfterFirstPass},
		{RuleThrottleStep, stageModelled, (*VirtkitPolicy).throttleStep},
		{RuleAutoConvergeTooSlow, stageModelled, (*VirtkitPolicy).autoConvergeTooSlowRule},
		{RuleAutoConvergeAtCeiling, stageModelled, (*VirtkitPolicy).autoConvergeAtCeiling},
		{RuleAutoConvergeClimbing, stageModelled, (*VirtkitPolicy).autoConvergeClimbing},
		{RuleThrottleIneffective, stageModelled, (*VirtkitPolicy).throttleIneffective},
		{RuleRaiseToFloor, stageModelled, (*VirtkitPolicy).raiseToFloor},
		{RuleConvergesSlowly, stageModelled, (*VirtkitPolicy).convergesSlowly},
		{RuleAwaitThrottleEffect, stageModelled, (*VirtkitPolicy).awaitThrottleEffect},
		{RuleObserveBeforeAbort, stageModelled, (*VirtkitPolicy).observeBeforeAbort},
		{RuleHopelessEarly, stageModelled, (*VirtkitPolicy).hopelessEarlyRule},
		{RuleAwaitJobDirtyRate, stageModelled, (*VirtkitPolicy).awaitJobDirtyRate},
		{RuleObserveForBurst, stageModelled, (*VirtkitPolicy).observeForBurst},
		{RuleLowestSampleConverges, stageModelled, (*VirtkitPolicy).lowestSampleConverges},
		{RuleQuieterRoundsConverge, stageModelled, (*VirtkitPolicy).quieterRoundsConverge},
		{RuleDirtyRateUnsteady, stageModelled, (*VirtkitPolicy).dirtyRateUnsteady},
		{RuleAwaitRounds, stageModelled, (*VirtkitPolicy).awaitRounds},
		{RuleNearCritical, stageModelled, (*VirtkitPolicy).atCeilingNearCritical},
		{RuleHopeless, stageModelled, (*VirtkitPolicy).hopelessAbort},
	}
}

// RuleNames lists the virtkit policy's rules in the order Decide tries
// them.
func (v *VirtkitPolicy) RuleNames() []string {
	rules := virtkitRules()
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.name
	}
	return names
}

// Decide is the virtkit rule set; see [VirtkitPolicy]. It tries the rules
// in order ([VirtkitPolicy.RuleNames]) and returns the first action one
// gives, named by [Action.Rule].
func (v *VirtkitPolicy) Decide(p Progress) Action {
	s := v.assess(p)
	for _, r := range virtkitRules() {
		if r.stages&s.stage == 0 {
			continue
		}
		if act, ok := r.decide(v, s); ok {
			act.Rule = r.name
			return act
		}
	}
	// Unreachable: every stage ends with a rule that always applies.
	return Action{Kind: ActionContinue, Reason: "no rule applies"}
}

// situation is what the rules share about one Progress: the estimate and,
// in pre-copy, the predictions they judge by.
type situation struct {
	p     Progress
	stage stage
	e     estimate

	// Planning: the start action the start rules refine, whether the
	// estimate is known and the model takes it, the prediction at the
	// configured limit and whether the start is sized for a bandwidth cap.
	start      Action
	startKnown bool
	startErr   error
	startP     Prediction
	capped     bool

	// Pre-copy.
	modelErr                       error
	f                              figures
	m, lowerBound, budget, elapsed float64
	in                             ModelInput
	offset                         float64
	cur, pred                      Prediction
	curFinish, finish              float64
	stalled, acStuck, exhausted    bool
}

// assess derives the situation the rules judge.
func (v *VirtkitPolicy) assess(p Progress) *situation {
	s := &situation{p: p}
	if p.Phase == PhasePostCopy {
		s.stage = stagePostCopy
		return s
	}
	e, known := v.estimate(p)
	s.e = e
	if p.Phase == PhasePlanning {
		s.stage = stagePlanning
		v.assessStart(s, known)
		return s
	}
	if !known {
		s.stage = stageUnmeasured
		return s
	}
	o := v.opts
	s.m = float64(p.Memory)
	s.lowerBound = s.m / e.bw
	s.budget = o.TargetSlowdown * s.lowerBound
	s.elapsed = p.Elapsed.Seconds()
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
	if p.FirstPassDone && e.remaining > 0 {
		in.Memory = uint64(math.Max(1, math.Min(e.remaining, s.m)))
		s.offset = s.elapsed
	}
	// Where the dirty rate is at or above the bandwidth, what a round
	// leaves is bounded by the working set the rounds have shown, not by
	// all of memory: a hot set that fits the threshold converges.
	if ws, ok := p.WorkingSet.Get(); ok && e.dirtyEff >= e.bw && ws > 0 {
		in.WorkingSet = min(ws, in.Memory)
	}
	cur, err := Predict(in)
	if err != nil {
		s.stage, s.modelErr = stageUnmodelled, err
		return s
	}
	// The remedies judge pre-copy at the highest threshold allowed.
	pred := cur
	if e.limit < e.cap {
		in.DowntimeLimit = e.cap
		if pred, err = Predict(in); err != nil {
			s.stage, s.modelErr = stageUnmodelled, err
			return s
		}
	}
	// Evidence beats the model: a pre-copy whose expected pause has not
	// improved for many rounds sits at a floor the rates do not show (a hot
	// set rewritten every round).
	s.stalled = v.stalled(p, e)
	if exp, ok := p.ExpectedDowntime.Get(); ok && p.FirstPassDone && s.stalled && exp > e.cap {
		why := fmt.Sprintf("the pause expected at switchover has stayed at %v or more for %d rounds, over the %v limit", exp.Round(time.Millisecond), p.StalledRounds, e.cap)
		if !v.stallWindowPassed(p) {
			resent := float64(p.DataSent.Or(0)-p.FirstPassSent.Or(0)) / float64(p.Memory)
			why += fmt.Sprintf("; since the first pass the rounds have resent %.1f× the memory and the best pause expected was %v", resent, p.BestExpected.Or(0).Round(time.Millisecond))
		}
		for _, pr := range []*Prediction{&cur, &pred} {
			pr.Converges, pr.Why = false, why
		}
	}
	s.curFinish = s.offset + cur.Total.Seconds()
	s.finish = s.offset + pred.Total.Seconds()
	f = f.add("ratio", pred.Ratio, "").add("lowerBound", s.lowerBound, "s")
	if pred.Converges {
		f = f.add("predictedTotal", s.finish, "s").add("predictedDowntime", pred.Downtime.Seconds()*1000, "ms")
	}
	s.stage, s.f, s.in, s.cur, s.pred = stageModelled, f, in, cur, pred
	s.acStuck = v.autoConvergeRamping(p, pred, s.finish, s.budget) && v.roundsStuck(p)
	s.exhausted = v.throttleExhausted(p, e)
	return s
}

// verdict is preCopyVerdict for the situation's prediction.
func (s *situation) verdict() string { return preCopyVerdict(s.pred, s.finish, s.budget) }

// acHoldsPause: QEMU's auto-converge is ramping over rounds that are
// stuck with the expected pause over the configured threshold, so the
// short pause is kept (see autoConvergeShortPause).
func (s *situation) acHoldsPause() bool {
	return s.acStuck && s.p.ExpectedDowntime.Or(0) > s.e.cap
}

func (v *VirtkitPolicy) postCopyRunning(*situation) (Action, bool) {
	return Action{Kind: ActionContinue, Reason: "post-copy: the guest runs on the target, memory follows; never abort now"}, true
}

func (v *VirtkitPolicy) unmodelled(s *situation) (Action, bool) {
	return Action{Kind: ActionContinue, Reason: "cannot model this progress: " + s.modelErr.Error()}, true
}

func (v *VirtkitPolicy) awaitMeasurement(*situation) (Action, bool) {
	return Action{Kind: ActionContinue, Reason: "waiting for a bandwidth and dirty-rate measurement"}, true
}

// preCopyConverges leaves a pre-copy alone that finishes within the
// budget; 5 % slack so a prediction hovering at the budget does not flip
// the decision from poll to poll.
func (v *VirtkitPolicy) preCopyConverges(s *situation) (Action, bool) {
	if !s.cur.Converges || s.curFinish > s.budget*1.05 {
		return Action{}, false
	}
	return Action{Kind: ActionContinue, Figures: s.f,
		Reason: fmt.Sprintf("pre-copy converges: r=%.2f, predicted %.3g s within the budget %.3g s (%.3g × M/B), pause %v",
			s.cur.Ratio, s.curFinish, s.budget, v.opts.TargetSlowdown, s.cur.Downtime.Round(time.Millisecond))}, true
}

// convergesSlowly: a migration that converges is never aborted, however
// slowly it goes.
func (v *VirtkitPolicy) convergesSlowly(s *situation) (Action, bool) {
	if !s.pred.Converges {
		return Action{}, false
	}
	return Action{Kind: ActionContinue, Figures: s.f,
		Reason: fmt.Sprintf("pre-copy converges but slower than the budget (predicted %.0f s > %.0f s) and no remedy is left", s.finish, s.budget)}, true
}
