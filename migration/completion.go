package migration

import (
	"fmt"
	"math"
	"time"
)

// RuleCompletionExtended names the engine's decision to let a job the
// policy predicts to converge run past the completion timeout.
const RuleCompletionExtended = "CompletionExtended"

// completionSlack is the margin over the predicted finish that an
// extended deadline allows: a prediction made mid-flight is an estimate.
const (
	completionSlackFactor = 1.25
	completionSlackFixed  = 10 * time.Second
)

// CompletionDeadline is how long the caller lets the job run before it
// aborts it, counted from the job's start (0 = no deadline): the request's
// CompletionTimeout, extended up to MaxCompletionTimeout while the
// policy's latest decision that modelled pre-copy predicts that it
// converges (its "predictedTotal" figure) by then, with a margin; a
// decision that did not model pre-copy (no "ratio" figure) leaves the
// deadline as it was. A job the model says cannot converge, or not by the
// upper bound, keeps the plain timeout, so it stops as soon as the
// prediction says so.
func (e *Engine) CompletionDeadline() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.st.deadline == 0 {
		return e.req.CompletionTimeout
	}
	return e.st.deadline
}

// extendLocked recomputes the completion deadline after a decision and
// records, once, that the job runs past the timeout because it converges.
func (e *Engine) extendLocked(now time.Time, p Progress, act Action) {
	st := &e.st
	base, ceiling := e.req.CompletionTimeout, e.req.MaxCompletionTimeout
	if base <= 0 || ceiling <= base || p.Phase != PhasePreCopy {
		st.deadline = base
		return
	}
	predicted, modelled := math.NaN(), false
	for _, f := range act.Figures {
		switch f.Name {
		case "predictedTotal":
			predicted = f.Value
		case "ratio":
			modelled = true
		}
	}
	switch {
	case act.Kind == ActionAbort:
		st.deadline = base
		return
	case math.IsNaN(predicted) && modelled:
		// The model judged pre-copy and found it does not converge: the
		// extension, if any, is withdrawn.
		st.deadline = base
		return
	case math.IsNaN(predicted):
		// A decision that did not model pre-copy (a threshold raised for
		// the last round, say) keeps the deadline as it was.
		if st.deadline == 0 {
			st.deadline = base
		}
		return
	}
	want := time.Duration(predicted*completionSlackFactor*float64(time.Second)) + completionSlackFixed
	if time.Duration(predicted*float64(time.Second)) > ceiling {
		st.deadline = base
		return
	}
	st.deadline = max(base, min(want, ceiling))
	if st.extended || p.Elapsed < base || st.deadline <= base {
		return
	}
	st.extended = true
	ext := Action{Kind: ActionContinue, Rule: RuleCompletionExtended, Figures: figures{}.
		add("predictedTotal", predicted, "s").
		seconds("completionTimeout", base).
		seconds("deadline", st.deadline).
		seconds("maxCompletionTimeout", ceiling),
		Reason: fmt.Sprintf("past the completion timeout of %v: pre-copy converges (predicted to end at %.0f s), so it keeps going until %v at most (the upper bound is %v)",
			base, predicted, st.deadline.Round(time.Second), ceiling)}
	st.decisions = append(st.decisions, Decision{Time: now, Elapsed: p.Elapsed, Iteration: p.Iteration, Action: ext})
	e.log.Info("migration decision", "domain", e.req.Domain, "policy", e.policy.Name(),
		"elapsed", p.Elapsed, "rule", ext.Rule, "action", ext.String())
}
