package migration

import (
	"context"
	"math"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// observeLocked folds one poll's job stats into the tracked state.
func (e *Engine) observeLocked(now time.Time, s hypervisor.JobStats) {
	st := &e.st
	// QEMU computes the job's dirty rate at a bitmap sync; until the first
	// one after the setup sync (iteration 2) libvirt reports 0, which is no
	// measurement: the pre-start sample stands until then.
	if it, ok := s.MemoryIteration.Get(); ok && it < 2 {
		s.MemoryDirtyRate = hypervisor.Measured[uint64]{}
	}
	if d, ok := s.MemoryDirtyRate.Get(); ok && st.probeRate.Valid && (!st.stats.MemoryDirtyRate.Valid || st.stats.MemoryDirtyRate.Value != d) {
		st.jobRateNewer = true
	}
	st.stats = s
	if s.Mode == hypervisor.ModePostCopy {
		st.phase = PhasePostCopy
	}
	if bps, ok := s.MemoryBps.Get(); ok {
		b := float64(bps)
		if avg, ok := st.bwAvg.Get(); ok {
			a := e.opts.BandwidthSmoothing
			st.bwAvg = hypervisor.Some(a*b + (1-a)*avg)
		} else {
			st.bwAvg = hypervisor.Some(b)
		}
		st.bwSamples++
		if st.bwAvg.Value > st.bwBest.Or(0) {
			st.bwBest = st.bwAvg
		}
	}
	if r, ok := s.DataRemaining.Get(); ok {
		if prev, ok := st.prevRemaining.Get(); !ok || r < prev {
			st.lastProgressAt = now
		}
		st.prevRemaining = s.DataRemaining
	} else if r, ok := s.MemoryRemaining.Get(); ok {
		if prev, ok := st.prevRemaining.Get(); !ok || r < prev {
			st.lastProgressAt = now
		}
		st.prevRemaining = s.MemoryRemaining
	}
	wasDone := st.firstPassDone
	if it, ok := s.MemoryIteration.Get(); ok && it >= 2 {
		st.firstPassDone = true
	}
	if !st.firstPassDone {
		if proc, ok := s.MemoryProcessed.Get(); ok && proc >= e.req.Memory {
			st.firstPassDone = true
		}
	}
	if st.firstPassDone && !wasDone {
		st.firstPassAt = now
		st.firstPassSent = dataSent(s)
		st.lastJobRate = s.MemoryDirtyRate // the first pass's rate is diluted by its length
	}
	// A round that does not bring the pause after the sync below 96 % of
	// the best so far counts towards a stall (KubeVirt VEP 248's 4 % margin,
	// counted in rounds rather than seconds).
	if it, ok := s.MemoryIteration.Get(); ok && st.firstPassDone && wasDone && it != st.lastRound {
		st.lastRound = it
		if r, ok := s.DataRemaining.Get(); ok && r > st.workingSet.Or(0) {
			st.workingSet = hypervisor.Some(r)
		}
		if d, ok := s.Downtime.Get(); ok && s.Mode != hypervisor.ModePostCopy {
			if prev, ok := st.prevExpected.Get(); ok && prev > 0 {
				st.roundShrink = hypervisor.Some(float64(d) / float64(prev))
			}
			st.prevExpected = hypervisor.Some(d)
			st.best.note(d, it, now, 0.96)
			st.stalledRounds = int(it - st.best.round)
			st.lowest.note(d, it, now, 0.99)
		}
	}
	// The job's rates over later rounds, under one throttle: how steady the
	// dirtying is at the time scale of the rounds.
	if d, ok := s.MemoryDirtyRate.Get(); ok && st.firstPassDone && wasDone &&
		(!st.lastJobRate.Valid || st.lastJobRate.Value != d) {
		st.lastJobRate = s.MemoryDirtyRate
		if st.jobRates.throttle != st.throttle {
			st.jobRates = rateRange{throttle: st.throttle}
		}
		st.jobRates.add(float64(d))
	}
	if st.firstPassDone {
		if r, ok := st.prevRemaining.Get(); ok && (!st.minRemaining.Valid || r < st.minRemaining.Value) {
			st.minRemaining = hypervisor.Some(r)
		}
	}
	if t, ok := s.AutoConvergeThrottle.Get(); ok && int(t) > st.maxThrottle {
		st.maxThrottle = int(t)
	}
	if t, ok := s.AutoConvergeThrottle.Get(); ok {
		// The job's own figure: what the engine set, or QEMU's
		// auto-converge steps. A step QEMU took makes the job's dirty rate
		// stale as one the engine took does.
		if e.thr == nil && int(t) != st.throttle {
			st.dirtyAtChange = measuredFloat(st.lastJobRate)
			st.throttleAtChange = st.throttle
			st.throttleChangedAt = now
			st.throttleChangeIter = s.MemoryIteration.Or(0)
			st.dirtyFresh = false
		}
		st.throttle = int(t)
	}
	// The job's dirty rate is fresh once a new iteration reported it after
	// the last throttle change, or once it moved after the settle time.
	if d, ok := s.MemoryDirtyRate.Get(); ok && !st.dirtyFresh && !st.throttleChangedAt.IsZero() {
		it := s.MemoryIteration.Or(0)
		settled := now.Sub(st.throttleChangedAt) >= e.opts.ThrottleSettle
		moved := !st.dirtyAtChange.Valid || float64(d) != st.dirtyAtChange.Value
		if (s.MemoryIteration.Valid && it >= st.throttleChangeIter+2) || (settled && moved) {
			st.dirtyFresh = true
			e.learnSensitivityLocked(float64(d))
		}
	}
}

// startProbe measures the dirty rate under the new throttle, when the
// engine has a non-blocking probe. A failure only means ε is learned from
// the job's own dirty rate instead.
func (e *Engine) startProbe(ctx context.Context) {
	e.mu.Lock()
	inJob := e.probeInJob
	e.mu.Unlock()
	if !inJob {
		return
	}
	pending, err := e.opts.Probe.StartDirtyRateProbe(ctx, e.req.Domain, e.opts.MeasurePeriod)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.st.probeStart = e.clock.Now()
	if err != nil {
		e.log.Debug("dirty-rate probe failed", "domain", e.req.Domain, "err", err)
		return
	}
	e.st.probe = pending
}

// collectProbeLocked takes an in-job probe's result once it is in.
func (e *Engine) collectProbeLocked(ctx context.Context) {
	st := &e.st
	if st.probe == nil {
		return
	}
	select {
	case <-st.probe.Done():
	default:
		return
	}
	dr, err := st.probe.Result(ctx)
	st.probe = nil
	if err != nil {
		return
	}
	st.probeRate = hypervisor.Some(float64(dr.BytesPerSecond))
	st.probeAt = e.clock.Now()
	st.samples = append(st.samples, sample{at: st.probeAt, rate: float64(dr.BytesPerSecond), throttle: st.throttle})
	st.jobRateNewer = false
	if !st.dirtyFresh {
		st.dirtyFresh = true
		e.learnSensitivityLocked(float64(dr.BytesPerSecond))
	}
}

// noteThrottleLocked remembers a throttle change for learning ε.
func (e *Engine) noteThrottleLocked(now time.Time, before, after int) {
	st := &e.st
	// The reference rate under the old throttle must be measured the way the
	// rate under the new one will be: short samples (probes, the pre-start
	// measurement) with a probe, the job's per-round rate without one.
	st.dirtyAtChange = hypervisor.Measured[float64]{}
	switch {
	case e.probeInJob && st.probeRate.Valid && st.dirtyFresh:
		st.dirtyAtChange = st.probeRate
	case e.probeInJob && before == 0:
		st.dirtyAtChange = st.dirtyBefore
	case !e.probeInJob && (st.throttleChangedAt.IsZero() || st.dirtyFresh):
		st.dirtyAtChange = measuredFloat(st.stats.MemoryDirtyRate)
	}
	st.throttleAtChange = before
	st.throttle = after
	if after > st.maxThrottle {
		st.maxThrottle = after
	}
	st.throttleChangedAt = now
	st.throttleChangeIter = st.stats.MemoryIteration.Or(0)
	st.dirtyFresh = false
	st.probeRate = hypervisor.Measured[float64]{}
}

// learnSensitivityLocked solves D_after/D_before = (1 − ε p_a)/(1 − ε p_b)
// for ε.
func (e *Engine) learnSensitivityLocked(after float64) {
	st := &e.st
	before, ok := st.dirtyAtChange.Get()
	if !ok || before <= 0 {
		return
	}
	pb, pa := float64(st.throttleAtChange)/100, float64(st.throttle)/100
	den := before*pa - after*pb
	if den <= 0 {
		return
	}
	eps := (before - after) / den
	eps = math.Max(0, math.Min(1, eps))
	st.sensitivity = hypervisor.Some(eps)
}

// dataSent is what the job has sent: all of it where the backend reports
// it, else the memory part.
func dataSent(s hypervisor.JobStats) hypervisor.Measured[uint64] {
	if s.DataProcessed.Valid {
		return s.DataProcessed
	}
	return s.MemoryProcessed
}

// progressLocked builds the policy's view.
func (e *Engine) progressLocked(now time.Time) Progress {
	st := &e.st
	s := st.stats
	p := Progress{
		Phase:               st.phase,
		Memory:              e.req.Memory,
		DataSent:            dataSent(s),
		Remaining:           s.DataRemaining,
		Iteration:           s.MemoryIteration,
		FirstPassDone:       st.firstPassDone,
		DirtyRateBefore:     st.dirtyBefore,
		Bandwidth:           measuredFloat(s.MemoryBps),
		BandwidthAvg:        st.bwAvg,
		BandwidthBest:       st.bwBest,
		Throttle:            st.throttle,
		ThrottleSensitivity: st.sensitivity,
		CanThrottle:         e.thr != nil || (e.job == nil && !e.noDirectThrottle()),
		PauseBoundedByCap:   e.caps != nil && e.caps.StopCopyUncapped && e.req.Params.Bandwidth > 0,
		DowntimeLimit:       st.downtimeLimit,
		ConfiguredDowntime:  e.req.DowntimeLimit,
		DowntimeBound:       e.req.MaxDowntime,
		ExpectedDowntime:    s.Downtime,
		MinRemaining:        st.minRemaining,
		AllowPostCopy:       e.req.AllowPostCopy,
		AllowAutoConverge:   e.req.AllowAutoConverge,
		CompletionTimeout:   e.req.CompletionTimeout,
	}
	if !p.Remaining.Valid {
		p.Remaining = s.MemoryRemaining
	}
	if e.req.BandwidthHint > 0 {
		p.BandwidthHint = hypervisor.Some(e.req.BandwidthHint)
	} else if c := e.req.Params.Bandwidth; c > 0 {
		// Without a hint the job's own cap bounds its bandwidth: planning
		// with it sizes QEMU's first auto-converge step (the only one a
		// libvirt job can set) no larger than needed.
		p.BandwidthHint = hypervisor.Some(float64(c))
	}
	if c := e.req.Params.Bandwidth; p.PauseBoundedByCap && e.req.LinkBandwidth > 0 {
		p.LinkOverCap = e.req.LinkBandwidth / float64(c)
	}
	if st.phase != PhasePlanning {
		p.Elapsed = now.Sub(st.startedAt)
		p.SinceProgress = now.Sub(st.lastProgressAt)
		if !st.throttleChangedAt.IsZero() {
			p.SinceThrottle = now.Sub(st.throttleChangedAt)
		}
	}
	// A dirty rate measured before the last throttle change does not
	// describe the guest now; leave it unmeasured until a fresh one comes.
	if d, ok := s.MemoryDirtyRate.Get(); ok && (st.throttleChangedAt.IsZero() || st.dirtyFresh) {
		p.DirtyRate = hypervisor.Some(float64(d))
	}
	p.Probing = e.probeInJob
	var first, last time.Time
	for _, smp := range st.samples {
		if smp.throttle != st.throttle {
			continue
		}
		p.DirtyRateSamples++
		if !p.DirtyRateLow.Valid || smp.rate < p.DirtyRateLow.Value {
			p.DirtyRateLow = hypervisor.Some(smp.rate)
		}
		if first.IsZero() {
			first = smp.at
		}
		last = smp.at
	}
	p.DirtyRateSpan = last.Sub(first)
	if st.firstPassDone {
		p.SinceFirstPass = now.Sub(st.firstPassAt)
	}
	p.StalledRounds = st.stalledRounds
	if st.lowest.value.Valid {
		p.RoundsSinceLowest = int(st.lastRound - st.lowest.round)
	}
	if !st.best.at.IsZero() {
		p.SinceBestExpected = now.Sub(st.best.at)
	}
	p.FirstPassSent = st.firstPassSent
	p.BestExpected = st.best.value
	p.RoundShrink = st.roundShrink
	p.WorkingSet = st.workingSet
	if jr := st.jobRates; jr.n > 0 && jr.throttle == st.throttle {
		p.JobDirtyRateLow, p.JobDirtyRateHigh = hypervisor.Some(jr.low), hypervisor.Some(jr.high)
		p.JobDirtyRateSamples = jr.n
	}
	if st.probeRate.Valid && st.dirtyFresh {
		// The probe samples the guest over one short period, like the
		// pre-start measurement; it is the freshest view of the throttled
		// guest until the job's own rate moves on.
		if !p.DirtyRate.Valid || !st.jobRateNewer {
			p.DirtyRate = st.probeRate
		}
	}
	if p.DirtyRate.Valid && st.throttle > 0 && st.throttle >= st.ceiling {
		st.ceiling, st.ceilingRate = st.throttle, p.DirtyRate
	}
	p.ThrottleCeiling, p.RateAtCeiling = st.ceiling, st.ceilingRate
	return p
}
