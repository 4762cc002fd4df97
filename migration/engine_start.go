package migration

import (
	"context"
	"fmt"

	"github.com/virtkit/virtkit/hypervisor"
)

// Starting a migration: measuring the dirty rate, asking the policy, and
// launching the job on the backend.

// Measure samples the guest's dirty rate before the start. Start calls it
// when it has not run; a harness on a virtual clock may call it itself while
// advancing the clock. A backend without the capability leaves the rate
// unmeasured, which is not an error.
func (e *Engine) Measure(ctx context.Context) error {
	if e.measurer == nil {
		e.mu.Lock()
		e.st.measureErr = "no dirty-rate measurer"
		e.mu.Unlock()
		return nil
	}
	dr, err := e.measurer.MeasureDirtyRate(ctx, e.req.Domain, e.opts.MeasurePeriod)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("measure dirty rate of %q: %w", e.req.Domain, err)
		}
		// The migration can run without it; the policy falls back to the
		// job's own dirty rate.
		e.st.measureErr = err.Error()
		e.log.Warn("dirty-rate measurement failed", "domain", e.req.Domain, "err", err)
		return nil
	}
	e.st.dirtyBefore = hypervisor.Some(float64(dr.BytesPerSecond))
	e.st.samples = append(e.st.samples, sample{at: e.clock.Now(), rate: float64(dr.BytesPerSecond)})
	return nil
}

// Start measures (unless Measure already ran), asks the policy, and either
// refuses (the Result is final, the error matches ErrRefused) or starts the
// job.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	if e.st.started {
		e.mu.Unlock()
		return ErrStarted
	}
	// Without a hint the job's own cap is the expected speed (the node
	// agent and the real-QEMU bench give only the cap).
	hint := e.req.BandwidthHint
	if hint <= 0 {
		hint = float64(e.req.Params.Bandwidth)
	}
	worth := e.opts.MeasureWorth
	if e.req.AllowPostCopy || e.req.AllowAutoConverge {
		// A remedy sized at the start (post-copy at once, a first
		// auto-converge step) pays for the delay on a shorter first pass.
		worth /= 2
	}
	measured := e.st.dirtyBefore.Valid || e.st.measureErr != "" || e.opts.SkipMeasurement ||
		(hint > 0 && float64(e.req.Memory)/hint < worth.Seconds())
	e.st.started = true
	e.mu.Unlock()
	e.learnCapabilities(ctx)
	if !measured && e.opts.Probe != nil {
		pending, err := e.opts.Probe.StartDirtyRateProbe(ctx, e.req.Domain, e.opts.MeasurePeriod)
		e.mu.Lock()
		defer e.mu.Unlock()
		if err != nil {
			if ctx.Err() != nil {
				e.st.started = false
				return fmt.Errorf("measure dirty rate of %q: %w", e.req.Domain, err)
			}
			e.st.measureErr = err.Error()
			return e.launchLocked(ctx)
		}
		e.st.measuring = pending
		return nil
	}
	if !measured {
		if err := e.Measure(ctx); err != nil {
			e.mu.Lock()
			e.st.started = false
			e.mu.Unlock()
			return err
		}
		if e.wantConfirmSample() {
			if err := e.Measure(ctx); err != nil {
				e.mu.Lock()
				e.st.started = false
				e.mu.Unlock()
				return err
			}
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.launchLocked(ctx)
}

// wantConfirmSample reports that a second pre-start sample is worth its
// MeasurePeriod: the dirty rate cannot be sampled while the job runs, the
// permissions allow neither post-copy nor a throttle, and the first sample
// is over the expected bandwidth (Request.BandwidthHint, else the job's
// bandwidth cap). The policy may then refuse early on two samples instead
// of waiting for the first pass to end ([PolicyOptions.HopelessMargin]).
// Without either no second sample is taken: the extra second would delay every such migration,
// mostly on links far faster than any guest dirties.
func (e *Engine) wantConfirmSample() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.probeInJob || e.req.AllowPostCopy || e.req.AllowAutoConverge || len(e.st.samples) != 1 {
		return false
	}
	d, ok := e.st.dirtyBefore.Get()
	hint := e.req.BandwidthHint
	if hint <= 0 {
		hint = float64(e.req.Params.Bandwidth)
	}
	return ok && hint > 0 && d > hint
}

// learnCapabilities asks the migrator what its migrations offer, so the
// policy plans with the throttle and measurements it will really have.
func (e *Engine) learnCapabilities(ctx context.Context) {
	var caps *hypervisor.MigrationCapabilities
	if r, ok := e.migrator.(hypervisor.MigrationCapabilityReporter); ok {
		if c, err := r.MigrationCapabilities(ctx); err == nil {
			caps = &c
		} else {
			e.log.Debug("migration capabilities unknown", "domain", e.req.Domain, "err", err)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.caps = caps
	e.probeInJob = e.opts.Probe != nil && (caps == nil || caps.DirtyRateDuringJob)
}

// noDirectThrottle reports that only QEMU's auto-converge can throttle.
func (e *Engine) noDirectThrottle() bool {
	return e.opts.QEMUAutoConverge || (e.caps != nil && !e.caps.DirectThrottle)
}

// launchLocked asks the policy for the plan and starts the job or refuses.
// The lock is released while the backend starts the job (libvirt may take
// seconds), so Snapshot never waits for it; only one goroutine drives the
// engine, so nothing else changes the state meanwhile.
func (e *Engine) launchLocked(ctx context.Context) error {
	now := e.clock.Now()
	e.st.startedAt = now
	p := e.progressLocked(now)
	act := e.policy.Decide(p)
	e.recordLocked(now, p, act)
	if act.Kind == ActionRefuse || act.Kind == ActionAbort {
		e.finishRefusedLocked(act)
		return fmt.Errorf("%s: %s: %w", e.req.Domain, act.Reason, ErrRefused)
	}
	if act.Kind != ActionStart {
		return fmt.Errorf("policy %s answered %s while planning, want Start or Refuse: %w", e.policy.Name(), act.Kind, ErrInvalidInput)
	}
	params := e.req.Params
	params.PostCopy = act.PostCopy
	params.AutoConverge = act.AutoConverge
	if act.AutoConverge {
		params.AutoConvergeInitial = act.AutoConvergeInitial
		params.AutoConvergeIncrement = act.AutoConvergeIncrement
	}
	params.DowntimeLimit = e.req.DowntimeLimit
	if act.DowntimeLimit > 0 {
		params.DowntimeLimit = act.DowntimeLimit
	}
	e.st.downtimeLimit = params.DowntimeLimit
	e.mu.Unlock()
	job, err := e.migrator.StartMigration(ctx, e.req.Domain, params)
	e.mu.Lock()
	if err != nil {
		e.st.done = true
		e.st.result = Result{Policy: e.policy.Name(), Outcome: OutcomeFailed, Mode: hypervisor.ModePreCopy,
			Reason: "start: " + err.Error(), Decisions: e.decisionsLocked()}
		return fmt.Errorf("start migration of %q: %w", e.req.Domain, err)
	}
	e.job = job
	if !e.noDirectThrottle() {
		e.thr, _ = job.(hypervisor.Throttler)
		if e.thr == nil && e.req.AllowAutoConverge && !act.AutoConverge {
			// The policy counted on setting the throttle itself; this
			// backend's jobs cannot, and QEMU's own auto-converge can only
			// be enabled at the start.
			note := Action{Kind: ActionContinue, Rule: RuleNoDirectThrottle, Reason: "the job cannot be throttled directly and QEMU auto-converge was not enabled at the start: no throttling for this migration (set Options.QEMUAutoConverge for this backend)"}
			e.log.Warn("migration cannot be throttled", "domain", e.req.Domain)
			e.st.decisions = append(e.st.decisions, Decision{Time: now, Action: note})
		}
	}
	e.st.startedAt = e.clock.Now()
	e.st.lastProgressAt = e.st.startedAt
	e.st.phase = PhasePreCopy
	return nil
}
