package migration

import (
	"fmt"
	"time"
)

// autoConvergeShortPause keeps the pause short while QEMU's auto-converge
// still has to bring the dirty rate down (pre-copy at the configured limit
// does not finish within the budget at today's throttle): a high
// switchover threshold ends each pass while much of the working set is
// still pending, pages dirtied again then are not new to QEMU's bitmap,
// and its trigger (dirtied over half of what was sent) fires less often,
// so the throttle climbs slower and the migration takes longer.
func (v *VirtkitPolicy) autoConvergeShortPause(s *situation) (Action, bool) {
	p, e := s.p, s.e
	if !s.acStuck || p.ExpectedDowntime.Or(0) <= e.limit {
		return Action{}, false
	}
	short := v.shortLimit(e)
	if e.limit <= short {
		return Action{}, false
	}
	return Action{Kind: ActionRaiseDowntime, DowntimeLimit: short, Figures: s.f,
		Reason: fmt.Sprintf("%s; QEMU's auto-converge is throttling the guest (%d%% now): back to a %v pause, so every pass ends with the guest's dirtying counted in full and the throttle climbs at QEMU's pace",
			s.verdict(), p.Throttle, short+v.opts.SwitchoverReserve)}, true
}

// raiseForSpeedRule ends the short target pause once it costs time (see
// raiseForSpeed): the rounds' measured shrink judges, so it applies
// before the job has a dirty rate too. Not while QEMU's auto-converge
// climbs over rounds stuck above the configured threshold (a step of it
// makes the rate stale; such rounds keep the pause short).
func (v *VirtkitPolicy) raiseForSpeedRule(s *situation) (Action, bool) {
	p, e := s.p, s.e
	hold := s.acHoldsPause()
	if s.stage == stageUnmeasured {
		hold = p.AllowAutoConverge && !p.CanThrottle && p.Throttle < 99 && v.roundsStuck(p) && p.ExpectedDowntime.Or(0) > e.cap
	}
	act, raise := v.raiseForSpeed(p, e)
	if !raise || hold {
		return Action{}, false
	}
	return act, true
}

// raiseToConfigured allows the configured limit (less the reserve) once it
// is predicted to finish more than 2 % earlier than the short target
// pause; not while the rounds show that what each sync leaves would not
// fit the configured limit either.
func (v *VirtkitPolicy) raiseToConfigured(s *situation) (Action, bool) {
	e := s.e
	if e.limit >= e.cap || !s.pred.Converges || s.acHoldsPause() || (s.cur.Converges && s.finish >= s.curFinish-0.02*s.finish) {
		return Action{}, false
	}
	return Action{Kind: ActionRaiseDowntime, DowntimeLimit: e.cap, Figures: s.f,
		Reason: fmt.Sprintf("a %v pause would take pre-copy to %s; %s finishes at %.1f s",
			e.limit+v.opts.SwitchoverReserve, finishText(s.cur, s.curFinish), e.capText(), s.finish)}, true
}

// raiseToFloor raises the downtime limit within the bound once the
// remaining data has settled at a floor that fits it.
func (v *VirtkitPolicy) raiseToFloor(s *situation) (Action, bool) {
	p, e := s.p, s.e
	if s.pred.Converges || !p.FirstPassDone || e.boundCap <= e.cap {
		return Action{}, false
	}
	floor, ok := p.MinRemaining.Get()
	if !ok {
		return Action{}, false
	}
	need := time.Duration(float64(floor) / e.bw * 1.25 * float64(time.Second)).Round(time.Millisecond)
	if need <= e.limit || need > e.boundCap {
		return Action{}, false
	}
	return Action{Kind: ActionRaiseDowntime, DowntimeLimit: need, Figures: s.f.add("floor", float64(floor), "B"),
		Reason: fmt.Sprintf("remaining data settles at %s: a %v downtime limit (bound %v) lets the switchover happen", formatBytes(float64(floor)), need, e.bound)}, true
}
