package migration

import "fmt"

// releaseThrottle lowers a throttle sized for a rate that has since
// fallen (a burst ended) at the first fresh measurement that shows it. It
// takes a clear fall (under 60 % of the pre-start rate the throttle was
// sized on) and a lower throttle that still keeps pre-copy within the
// budget.
func (v *VirtkitPolicy) releaseThrottle(s *situation) (Action, bool) {
	p, e := s.p, s.e
	before, ok := p.DirtyRateBefore.Get()
	if !ok || !p.CanThrottle || p.Throttle <= 0 || !p.DirtyRate.Valid || s.exhausted || e.dirtyRaw >= 0.6*before {
		return Action{}, false
	}
	target := v.targetRatio(p, e, s.budget)
	pct, ok := ThrottleFor(e.dirtyRaw, e.bw, target, e.eps)
	lower := s.in
	lower.DirtyRate = e.dirtyRaw * (1 - e.eps*float64(pct)/100)
	lower.DowntimeLimit = e.limit
	lp, err := Predict(lower)
	if !ok || pct > p.Throttle-10 || err != nil || !lp.Converges || s.offset+lp.Total.Seconds() > s.budget {
		return Action{}, false
	}
	return Action{Kind: ActionThrottle, ThrottlePercent: pct, Figures: s.f.add("targetRatio", target, ""),
		Reason: fmt.Sprintf("the dirty rate fell to %s (%s unthrottled): %d%% is enough, release the rest", formatRate(e.dirtyEff), formatRate(e.dirtyRaw), pct)}, true
}

// throttleStep sizes a direct throttle so that pre-copy finishes within
// the budget. A low learned sensitivity only makes the step bigger:
// whether throttling helps is judged by measuring the highest allowed
// throttle, since a short sample of a hot working set saturates and looks
// insensitive. Steps are at least 10 points, so each is measurable.
func (v *VirtkitPolicy) throttleStep(s *situation) (Action, bool) {
	p, e, o := s.p, s.e, v.opts
	if !p.AllowAutoConverge || !p.CanThrottle || s.exhausted || p.Throttle >= o.MaxThrottle {
		return Action{}, false
	}
	target := v.targetRatio(p, e, s.budget)
	pct, _ := ThrottleFor(e.dirtyRaw, e.bw, target, e.eps)
	if pct > o.MaxThrottle {
		pct = o.MaxThrottle
	}
	if pct <= p.Throttle || (pct < p.Throttle+10 && pct != o.MaxThrottle) {
		return Action{}, false
	}
	after := e.dirtyRaw * (1 - e.eps*float64(pct)/100)
	return Action{Kind: ActionThrottle, ThrottlePercent: pct, Figures: s.f.add("targetRatio", target, ""),
		Reason: fmt.Sprintf("%s; throttle %d%% brings the dirty rate from %s to %s (r=%.2f)",
			s.verdict(), pct, formatRate(e.dirtyRaw), formatRate(after), after/e.bw)}, true
}

// autoConvergeTooSlowRule gives up when, without a direct throttle,
// QEMU's auto-converge (enabled at the start, up to 99 %) cannot bring
// pre-copy to converge before the job's completion timeout; see
// autoConvergeTooSlow.
func (v *VirtkitPolicy) autoConvergeTooSlowRule(s *situation) (Action, bool) {
	return v.autoConvergeTooSlow(s.p, s.e, s.in, s.f)
}

// autoConvergeAtCeiling waits for a dirty rate measured under QEMU's
// auto-converge at its 99 % ceiling.
func (v *VirtkitPolicy) autoConvergeAtCeiling(s *situation) (Action, bool) {
	p := s.p
	if !p.AllowAutoConverge || p.CanThrottle || p.Throttle < 99 || s.exhausted || p.ThrottleCeiling >= 99 {
		return Action{}, false
	}
	return Action{Kind: ActionContinue, Figures: s.f,
		Reason: fmt.Sprintf("%s; QEMU's auto-converge reached %d%%: waiting for the dirty rate under it", s.verdict(), p.Throttle)}, true
}

// autoConvergeClimbing gives QEMU's auto-converge the chance to bring the
// dirty rate under the bandwidth; whether it can is judged at 99 %, not
// from a learned sensitivity.
func (v *VirtkitPolicy) autoConvergeClimbing(s *situation) (Action, bool) {
	p := s.p
	if !p.AllowAutoConverge || p.CanThrottle || p.Throttle >= 99 || s.exhausted || (s.pred.Converges && s.finish <= s.budget) {
		return Action{}, false
	}
	return Action{Kind: ActionContinue, Figures: s.f,
		Reason: fmt.Sprintf("%s; QEMU's auto-converge is throttling the guest (%d%% now) and can bring the dirty rate under the bandwidth", s.verdict(), p.Throttle)}, true
}

// throttleIneffective releases a throttle that does not slow the dirtying
// enough: it only slows the guest.
func (v *VirtkitPolicy) throttleIneffective(s *situation) (Action, bool) {
	p := s.p
	if p.Throttle <= 0 || !p.CanThrottle || !s.exhausted {
		return Action{}, false
	}
	return Action{Kind: ActionThrottle, ThrottlePercent: 0, Figures: s.f,
		Reason: fmt.Sprintf("throttling is ineffective: at %d%% the guest still dirties %s, over the bandwidth %s: release it",
			p.ThrottleCeiling, formatRate(p.RateAtCeiling.Value), formatRate(s.e.bw))}, true
}

// awaitThrottleEffect waits ThrottlePatience for the dirty rate to show a
// throttle step's effect before judging it.
func (v *VirtkitPolicy) awaitThrottleEffect(s *situation) (Action, bool) {
	p := s.p
	if !p.AllowAutoConverge || !p.CanThrottle || p.Throttle <= 0 || p.SinceThrottle >= v.opts.ThrottlePatience ||
		(s.e.epsKnown && p.ThrottleCeiling >= p.Throttle && p.RateAtCeiling.Valid) {
		return Action{}, false
	}
	return Action{Kind: ActionContinue, Figures: s.f, Reason: "waiting for the dirty rate to respond to the throttle"}, true
}

// atCeilingNearCritical: at the highest throttle with the dirty rate
// within 5 % of the bandwidth, pre-copy sits at the edge: it may still
// converge, slowly (a baseline that waits long enough gets through). The
// migration's own completion timeout bounds the wait, not an abort here.
func (v *VirtkitPolicy) atCeilingNearCritical(s *situation) (Action, bool) {
	p, e := s.p, s.e
	highest := v.highestThrottle(p)
	if !p.AllowAutoConverge || highest <= 0 || p.Throttle < highest || e.dirtyEff > nearCritical*e.bw {
		return Action{}, false
	}
	return Action{Kind: ActionContinue, Figures: s.f,
		Reason: fmt.Sprintf("at the highest throttle (%d%%) the dirty rate %s is within 5 %% of the bandwidth %s: pre-copy may still converge; the completion timeout bounds it", p.Throttle, formatRate(e.dirtyEff), formatRate(e.bw))}, true
}
