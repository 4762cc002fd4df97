package migration

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// apply carries out an action on the job.
func (e *Engine) apply(ctx context.Context, job hypervisor.MigrationJob, act Action) error {
	var err error
	switch act.Kind {
	case ActionContinue, ActionStart:
		return nil
	case ActionThrottle:
		if e.thr == nil {
			return fmt.Errorf("throttle %d%%: %w", act.ThrottlePercent, hypervisor.NotSupportedError("direct vCPU throttle", "the job does not implement hypervisor.Throttler"))
		}
		e.mu.Lock()
		before := e.st.throttle
		e.mu.Unlock()
		if err = e.thr.SetThrottle(ctx, act.ThrottlePercent); err == nil {
			e.mu.Lock()
			e.noteThrottleLocked(e.clock.Now(), before, act.ThrottlePercent)
			e.mu.Unlock()
			e.startProbe(ctx)
		}
	case ActionRaiseDowntime:
		if err = job.SetMaxDowntime(ctx, act.DowntimeLimit); err == nil {
			e.mu.Lock()
			e.st.downtimeLimit = act.DowntimeLimit
			e.mu.Unlock()
		}
	case ActionSwitchPostCopy:
		if err = job.StartPostCopy(ctx); err == nil {
			e.mu.Lock()
			e.st.phase = PhasePostCopy
			e.mu.Unlock()
		}
	case ActionAbort:
		e.mu.Lock()
		e.st.aborting = true
		e.mu.Unlock()
		err = job.Abort(ctx)
		if errors.Is(err, hypervisor.ErrNoJob) {
			err = nil
		}
	case ActionRefuse:
		return fmt.Errorf("policy %s refused a running job: %w", e.policy.Name(), ErrInvalidInput)
	default:
		return fmt.Errorf("policy %s: unknown action %q: %w", e.policy.Name(), act.Kind, ErrInvalidInput)
	}
	if err != nil {
		return fmt.Errorf("%s on migration of %q: %w", act.Kind, e.req.Domain, err)
	}
	return nil
}

// finish collects the job's result.
func (e *Engine) finish(ctx context.Context) error {
	e.mu.Lock()
	if e.st.done {
		e.mu.Unlock()
		return nil
	}
	job := e.job
	e.mu.Unlock()
	res, jobErr := job.Result(ctx)
	if jobErr != nil && ctx.Err() != nil {
		return fmt.Errorf("wait for migration result of %q: %w", e.req.Domain, jobErr)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.st.done = true
	r := Result{
		Policy:      e.policy.Name(),
		Mode:        res.Mode,
		Total:       res.Ended.Sub(res.Started),
		Downtime:    res.Stats.Downtime,
		BytesSent:   res.Stats.DataProcessed.Or(res.Stats.MemoryProcessed.Or(e.st.stats.DataProcessed.Or(0))),
		DecisionAt:  e.st.decisionAt,
		MaxThrottle: e.st.maxThrottle,
		Job:         res,
	}
	if t, ok := res.Stats.AutoConvergeThrottle.Get(); ok && int(t) > r.MaxThrottle {
		r.MaxThrottle = int(t)
	}
	if r.Mode == "" {
		r.Mode = hypervisor.ModePreCopy
	}
	if res.Started.IsZero() || res.Ended.IsZero() {
		r.Total = e.clock.Now().Sub(e.st.startedAt)
	}
	switch {
	case res.Succeeded && jobErr == nil:
		r.Outcome = OutcomeSucceeded
		r.Reason = "completed: " + e.strategyLocked()
	case res.Aborted || errors.Is(jobErr, hypervisor.ErrMigrationAborted):
		r.Outcome = OutcomeFailed
		r.Aborted = true
		r.Reason, r.Rule = e.abortReasonLocked(res.Reason)
		r.err = fmt.Errorf("%s: %s: %w", e.req.Domain, r.Reason, hypervisor.ErrMigrationAborted)
	default:
		r.Outcome = OutcomeFailed
		r.Reason = res.Reason
		if r.Reason == "" && jobErr != nil {
			r.Reason = jobErr.Error()
		}
		r.err = fmt.Errorf("%s: %s: %w", e.req.Domain, r.Reason, hypervisor.ErrMigrationFailed)
	}
	switch r.Outcome {
	case OutcomeSucceeded:
		e.st.strategy = e.strategyLocked() + "Completed"
	default:
		e.st.strategy = "Failed"
		if r.Aborted {
			e.st.strategy = "Aborted"
		}
	}
	r.Decisions = e.decisionsLocked()
	e.st.result = r
	e.log.Info("migration ended", "domain", e.req.Domain, "policy", r.Policy, "outcome", r.Outcome, "reason", r.Reason)
	return nil
}

// abortReasonLocked prefers the policy's reason (and its rule) over the
// backend's.
func (e *Engine) abortReasonLocked(backend string) (reason, rule string) {
	for i := len(e.st.decisions) - 1; i >= 0; i-- {
		if a := e.st.decisions[i].Action; a.Kind == ActionAbort {
			return a.Reason, a.Rule
		}
	}
	if backend == "" {
		return "aborted", ""
	}
	return backend, ""
}

func (e *Engine) finishRefusedLocked(act Action) {
	e.st.done = true
	e.st.strategy = "Refused"
	e.st.result = Result{Policy: e.policy.Name(), Outcome: OutcomeFailed, Refused: true,
		Mode: hypervisor.ModePreCopy, Reason: act.Reason, Rule: act.Rule, Decisions: e.decisionsLocked(),
		err: fmt.Errorf("%s: %s: %w", e.req.Domain, act.Reason, ErrRefused)}
}

// recordLocked logs a decision when it differs from the previous one, so
// the log holds every change of course, not one line per poll.
func (e *Engine) recordLocked(now time.Time, p Progress, act Action) {
	st := &e.st
	st.lastProgress = p
	if st.phase != PhasePlanning || act.Kind == ActionRefuse {
		if act.Kind != ActionContinue && act.Kind != ActionStart {
			st.decisionAt = p.Elapsed
		}
	}
	switch act.Kind {
	case ActionThrottle:
		st.strategy = "PreCopyThrottled"
	case ActionSwitchPostCopy:
		st.strategy = "PostCopyAfterFirstPass"
		if !p.FirstPassDone {
			st.strategy = "PostCopy"
		}
	case ActionRefuse:
		st.strategy = "Refused"
	case ActionAbort:
		st.strategy = "Aborting"
	case ActionStart:
		st.strategy = "PreCopy"
	}
	if bw, ok := p.BandwidthBest.Get(); ok {
		if d, ok := p.DirtyRate.Get(); ok || p.DirtyRateBefore.Valid {
			if !ok {
				d = p.DirtyRateBefore.Value * (1 - p.ThrottleSensitivity.Or(1)*float64(p.Throttle)/100)
			}
			rem := p.Remaining.Or(p.Memory)
			if rem == 0 {
				rem = 1
			}
			if pred, err := Predict(ModelInput{Memory: rem, Bandwidth: bw, DirtyRate: d, DowntimeLimit: p.DowntimeLimit}); err == nil {
				pred.Total += p.Elapsed
				st.prediction = &pred
			}
		}
	}
	e.extendLocked(now, p, act)
	if n := len(st.decisions); n > 0 && sameRule(st.decisions[n-1].Action, act) {
		st.last = act
		return
	}
	st.last = act
	st.decisions = append(st.decisions, Decision{Time: now, Elapsed: p.Elapsed, Iteration: p.Iteration, Action: act})
	if act.Kind != ActionContinue {
		e.log.Info("migration decision", "domain", e.req.Domain, "policy", e.policy.Name(),
			"elapsed", p.Elapsed, "rule", act.Rule, "action", act.String())
	}
}

// sameRule reports whether two Continue actions are the same decision:
// the same rule gave both ([Action.Rule]), whatever numbers their reasons
// quote. For a policy that names no rules, equal reasons.
func sameRule(a, b Action) bool {
	if a.Kind != ActionContinue || b.Kind != ActionContinue {
		return false
	}
	if a.Rule != "" || b.Rule != "" {
		return a.Rule == b.Rule
	}
	return a.Reason == b.Reason
}

func (e *Engine) decisionsLocked() []Decision {
	return append([]Decision(nil), e.st.decisions...)
}

func (e *Engine) strategyLocked() string {
	switch {
	case e.st.phase == PhasePostCopy:
		return "PostCopy"
	case e.st.throttle > 0:
		return "PreCopyThrottled"
	default:
		return "PreCopy"
	}
}

// Result is the outcome so far: final once Step returned true or Run
// returned.
func (e *Engine) Result() Result {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.st.result
	if !e.st.done {
		r.Policy = e.policy.Name()
		r.Decisions = e.decisionsLocked()
	}
	return r
}
