package migration

import "fmt"

// The rules from observeBeforeAbort on stand between a pre-copy that
// cannot converge and the abort: each names the evidence still missing.
// Aborting is the one decision that cannot be taken back.

// observeBeforeAbort: the job has not run MinObservation yet.
func (v *VirtkitPolicy) observeBeforeAbort(s *situation) (Action, bool) {
	if s.p.Elapsed >= v.opts.MinObservation {
		return Action{}, false
	}
	return Action{Kind: ActionContinue, Figures: s.f, Reason: "observing before deciding that nothing converges"}, true
}

// hopelessEarlyRule gives up before the first pass ends when nothing
// allowed can help; see hopelessEarly.
func (v *VirtkitPolicy) hopelessEarlyRule(s *situation) (Action, bool) {
	return v.hopelessEarly(s.p, s.e, s.f)
}

// awaitJobDirtyRate: without probes during the job the pre-start sample is
// the only dirty rate until the first pass ends; it may have caught a
// burst, and aborting on it would fail a guest the baselines migrate.
func (v *VirtkitPolicy) awaitJobDirtyRate(s *situation) (Action, bool) {
	if s.p.FirstPassDone || s.p.Probing {
		return Action{}, false
	}
	return Action{Kind: ActionContinue, Figures: s.f,
		Reason: "pre-copy looks hopeless on the pre-start sample; the job's own dirty rate after the first pass decides"}, true
}

// observeForBurst: before the first pass ends, while less than
// AbortDataShare of the memory was sent, the samples (or the job) must
// span SamplePatience, so a burst or a bandwidth dip can show itself.
func (v *VirtkitPolicy) observeForBurst(s *situation) (Action, bool) {
	p, o := s.p, v.opts
	if p.FirstPassDone || float64(p.DataSent.Or(0)) >= o.AbortDataShare*s.m {
		return Action{}, false
	}
	span := p.Elapsed
	if p.Probing {
		span = p.DirtyRateSpan
	}
	if span >= o.SamplePatience {
		return Action{}, false
	}
	return Action{Kind: ActionContinue, Figures: s.f.seconds("observed", span),
		Reason: "pre-copy looks hopeless; observing a while longer in case a burst or a bandwidth dip passes"}, true
}

// lowestSampleConverges: before the first pass ends only short samples
// exist; if the lowest of them converges, the high one may be a burst.
func (v *VirtkitPolicy) lowestSampleConverges(s *situation) (Action, bool) {
	p, e := s.p, s.e
	low, ok := p.DirtyRateLow.Get()
	if !ok || p.FirstPassDone || low >= e.dirtyEff {
		return Action{}, false
	}
	lp, err := Predict(ModelInput{Memory: s.in.Memory, Bandwidth: e.bw, DirtyRate: low, DowntimeLimit: e.cap})
	if err != nil || !lp.Converges {
		return Action{}, false
	}
	return Action{Kind: ActionContinue, Figures: s.f.add("dirtyRateLow", low, "B/s"),
		Reason: fmt.Sprintf("pre-copy converges at the lowest sampled dirty rate %s: the high rate may be a burst", formatRate(low))}, true
}

// jobRateJudges: after the first pass, short of a floor, the job's own
// rates over whole rounds judge.
func (s *situation) jobRateJudges() (float64, bool) {
	low, ok := s.p.JobDirtyRateLow.Get()
	return low, ok && s.p.FirstPassDone && !s.stalled
}

// quieterRoundsConverge waits for a quieter round when pre-copy converges
// at the lowest of the job's per-round dirty rates.
func (v *VirtkitPolicy) quieterRoundsConverge(s *situation) (Action, bool) {
	low, ok := s.jobRateJudges()
	if !ok {
		return Action{}, false
	}
	lp, err := Predict(ModelInput{Memory: s.in.Memory, Bandwidth: s.e.bw, DirtyRate: low, DowntimeLimit: s.e.cap})
	if err != nil || !lp.Converges {
		return Action{}, false
	}
	return Action{Kind: ActionContinue, Figures: s.f.add("jobDirtyRateLow", low, "B/s"),
		Reason: fmt.Sprintf("pre-copy converges in the quieter rounds (dirty rate %s): waiting for one", formatRate(low))}, true
}

// dirtyRateUnsteady waits up to BurstPatience after the first pass while
// the job's per-round dirty rates vary: a phase-driven workload may reach
// a quiet phase.
func (v *VirtkitPolicy) dirtyRateUnsteady(s *situation) (Action, bool) {
	p := s.p
	low, ok := s.jobRateJudges()
	if !ok || steadyRate(p) || p.SinceFirstPass >= v.opts.BurstPatience {
		return Action{}, false
	}
	return Action{Kind: ActionContinue, Figures: s.f.add("jobDirtyRateLow", low, "B/s").add("jobDirtyRateHigh", p.JobDirtyRateHigh.Value, "B/s"),
		Reason: fmt.Sprintf("pre-copy looks hopeless but the dirty rate is not steady yet (%s to %s over %d rounds): observing", formatRate(low), formatRate(p.JobDirtyRateHigh.Value), p.JobDirtyRateSamples)}, true
}

// awaitRounds waits up to BurstPatience after the first pass for the
// job's own dirty rate when no round has reported one.
func (v *VirtkitPolicy) awaitRounds(s *situation) (Action, bool) {
	p := s.p
	if _, ok := s.jobRateJudges(); ok || !p.FirstPassDone || s.stalled || p.SinceFirstPass >= v.opts.BurstPatience || p.Iteration.Valid {
		return Action{}, false
	}
	return Action{Kind: ActionContinue, Figures: s.f, Reason: "pre-copy looks hopeless; waiting for the job's own dirty rate"}, true
}

// hopelessAbort aborts, with the inequality that fails: nothing allowed
// converges.
func (v *VirtkitPolicy) hopelessAbort(s *situation) (Action, bool) {
	return Action{Kind: ActionAbort, Figures: s.f, Reason: v.hopeless(s.p, s.e, s.pred)}, true
}
