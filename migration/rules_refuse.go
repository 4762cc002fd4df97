package migration

import "fmt"

// The start rules decide the start: refuse when a known bandwidth already
// shows that nothing allowed converges, otherwise start with post-copy
// enabled when allowed (so the switch stays possible) and the configured
// limit.
//
// The job starts aiming at the short target pause, except when the pause
// is bounded by a bandwidth cap ([Progress.PauseBoundedByCap]): then a
// shorter threshold only keeps the cap on bytes the switchover would move
// faster, so it costs time on every guest, and the configured limit (less
// the reserve) still bounds the real pause. A first auto-converge step
// sized at the start keeps the short pause (see autoConvergeRamping).

// assessStart builds the start action the start rules refine.
func (v *VirtkitPolicy) assessStart(s *situation, known bool) {
	p, e := s.p, s.e
	limit := v.shortLimit(e)
	s.capped = p.PauseBoundedByCap && limit < e.cap
	if s.capped {
		limit = e.cap
	}
	s.start = Action{Kind: ActionStart, PostCopy: p.AllowPostCopy,
		AutoConverge:  p.AllowAutoConverge && !p.CanThrottle,
		DowntimeLimit: limit}
	if s.startKnown = known; !known {
		return
	}
	f := figures{}.add("dirtyRate", e.dirtyRaw, "B/s").add("bandwidth", e.bw, "B/s")
	pred, err := Predict(ModelInput{Memory: p.Memory, Bandwidth: e.bw, DirtyRate: e.dirtyRaw, DowntimeLimit: e.cap})
	if err != nil {
		s.startErr = err
		return
	}
	s.startP = pred
	s.start.Figures = f.add("ratio", pred.Ratio, "")
	if s.start.AutoConverge {
		// Only QEMU can throttle: size its first step from the pre-start
		// rate, as a direct throttle would be sized, when pre-copy would
		// not finish within the budget unthrottled.
		budget := v.opts.TargetSlowdown * float64(p.Memory) / e.bw
		if !pred.Converges || pred.Total.Seconds() > budget {
			target := v.targetRatio(p, e, budget)
			if pct, _ := ThrottleFor(e.dirtyRaw, e.bw, target, 1); pct > defaultACInitial {
				// QEMU's auto-converge climbs to its own 99 % whatever
				// MaxThrottle says (libvirt sets no max-cpu-throttle), so
				// MaxThrottle does not bound the first step either: QEMU
				// corrects a step that is too short only two bitmap syncs
				// later (33 s on the real TCG guest at 8 MiB/s).
				s.start.AutoConvergeInitial = min(pct, 99)
				s.start.AutoConvergeIncrement = defaultACIncrement
				s.start.Figures = figures(s.start.Figures).add("autoConvergeInitial", float64(s.start.AutoConvergeInitial), "%")
				s.start.DowntimeLimit, s.capped = v.shortLimit(e), false
			}
		}
	}
}

// startUnmeasured starts without a bandwidth or dirty rate; the job's own
// numbers decide.
func (v *VirtkitPolicy) startUnmeasured(s *situation) (Action, bool) {
	if s.startKnown {
		return Action{}, false
	}
	start := s.start
	start.Reason = fmt.Sprintf("start pre-copy with a %v switchover threshold (%s; the reserve is for the switchover's fixed costs); decide once the job reports its bandwidth", start.DowntimeLimit, s.e.capText())
	if s.capped {
		start.Reason += cappedPauseNote
	}
	return start, true
}

// startUnmodelled starts when the model rejects the pre-start numbers.
func (v *VirtkitPolicy) startUnmodelled(s *situation) (Action, bool) {
	if s.startErr == nil {
		return Action{}, false
	}
	start := s.start
	start.Reason = "start pre-copy; cannot model it yet: " + s.startErr.Error()
	return start, true
}

// startPreCopy starts when pre-copy converges at the configured limit or
// a remedy (post-copy, a higher pause) is there.
func (v *VirtkitPolicy) startPreCopy(s *situation) (Action, bool) {
	if !s.startP.Converges && !s.p.AllowPostCopy && s.e.boundCap <= s.e.cap {
		return Action{}, false
	}
	start := s.start
	start.Reason = fmt.Sprintf("start pre-copy (r=%.2f) aiming at a %v pause", s.startP.Ratio, start.DowntimeLimit)
	if s.capped {
		start.Reason += cappedPauseNote
	}
	return start, true
}

// startOnOneSample starts although the sample looks hopeless: one short
// sample may be a burst; only the job can tell.
func (v *VirtkitPolicy) startOnOneSample(s *situation) (Action, bool) {
	if s.p.Probing {
		return Action{}, false
	}
	start := s.start
	start.Reason = fmt.Sprintf("start pre-copy although the pre-start sample looks hopeless (r=%.2f): one sample may be a burst; the job's own dirty rate decides", s.startP.Ratio)
	return start, true
}

// startThrottleCanHelp starts when a throttle can bring the dirty rate
// under the bandwidth: a direct throttle goes up to MaxThrottle, QEMU's
// auto-converge up to 99 %; before any throttle the sensitivity is taken
// as 1.
func (v *VirtkitPolicy) startThrottleCanHelp(s *situation) (Action, bool) {
	if !s.p.AllowAutoConverge {
		return Action{}, false
	}
	highest := 99
	if s.p.CanThrottle {
		highest = v.opts.MaxThrottle
	}
	if pct, ok := ThrottleFor(s.e.dirtyRaw, s.e.bw, 0.9, 1); !ok || pct > highest {
		return Action{}, false
	}
	start := s.start
	start.Reason = fmt.Sprintf("start pre-copy (r=%.2f); a throttle can bring the dirty rate under the bandwidth", s.startP.Ratio)
	return start, true
}

// refuseHopeless refuses the start: nothing allowed converges.
func (v *VirtkitPolicy) refuseHopeless(s *situation) (Action, bool) {
	return Action{Kind: ActionRefuse, Figures: s.start.Figures, Reason: v.hopeless(s.p, s.e, s.startP)}, true
}
