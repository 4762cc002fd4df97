package migration

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// StallOptions configure [StallPolicy]; the zero value is KubeVirt's
// default for its stall detector (VEP 248, alpha in v1.9).
type StallOptions struct {
	// StallProgressTimeout is the look-back window of the stall test;
	// 0 = 40 s. StallMargin is the share R must fall below the window's
	// minimum to count as progress; 0 = 0.04.
	StallProgressTimeout time.Duration
	StallMargin          float64
	// MaxDowntime is maxDowntimeMs, the pause the soft stop-and-copy
	// allows; 0 = the migration's downtime bound (Progress.DowntimeBound),
	// else 900 ms. PrecopyPossibleFactor bounds the implied pause that the
	// soft stop-and-copy accepts (× MaxDowntime); 0 = 1.5.
	MaxDowntime           time.Duration
	PrecopyPossibleFactor float64
	// PatienceDecay shrinks the patience window at every relaxation;
	// 0 = 0.5. SwitchoverTimeout is how long a forced switchover may take
	// before the migration is aborted; 0 = 60 s.
	PatienceDecay     float64
	SwitchoverTimeout time.Duration
	// CompletionTimeoutPerGiB is KubeVirt's completion budget per GB
	// (0 = 150 s); CompletionTimeoutFactor how far past it a forced
	// switchover may run (0 = 2).
	CompletionTimeoutPerGiB time.Duration
	CompletionTimeoutFactor float64
	// AllowPostCopy and AllowAutoConverge are the migration configuration's
	// flags; allowWorkloadDisruption follows AllowPostCopy.
	AllowPostCopy     bool
	AllowAutoConverge bool
}

func (o StallOptions) withDefaults() StallOptions {
	if o.StallProgressTimeout == 0 {
		o.StallProgressTimeout = 40 * time.Second
	}
	if o.StallMargin == 0 {
		o.StallMargin = 0.04
	}
	if o.PrecopyPossibleFactor == 0 {
		o.PrecopyPossibleFactor = 1.5
	}
	if o.PatienceDecay == 0 {
		o.PatienceDecay = 0.5
	}
	if o.SwitchoverTimeout == 0 {
		o.SwitchoverTimeout = 60 * time.Second
	}
	if o.CompletionTimeoutPerGiB == 0 {
		o.CompletionTimeoutPerGiB = 150 * time.Second
	}
	if o.CompletionTimeoutFactor == 0 {
		o.CompletionTimeoutFactor = 2
	}
	return o
}

// StallPolicy re-implements KubeVirt's stall detector (VEP 248): the
// bandwidth is an EWMA (α 0.4) of the job's transfer rate; at every new
// iteration it records (elapsed, R) and
//
//   - calls the iteration stalled when R ≥ (1 − margin) × the lowest R
//     recorded more than StallProgressTimeout ago;
//   - on a stall takes as the target the lowest R seen (outside and inside
//     the window); at a local minimum (R ≤ target × (1 + margin)) with the
//     implied pause R/bw within 2 × the completion budget − elapsed it
//     forces the switchover: post-copy when allowed, otherwise, when the
//     implied pause is at most PrecopyPossibleFactor × MaxDowntime, a soft
//     stop-and-copy (the limit raised to MaxDowntime, SwitchoverTimeout to
//     finish), otherwise it aborts early;
//   - when no local minimum comes within the patience window (initially
//     StallProgressTimeout), relaxes the target to the next-lowest R seen
//     since the stall and halves the window;
//   - past the completion budget: post-copy if allowed and R/bw fits the
//     extended budget, otherwise abort. Post-copy is never aborted.
//
// It keeps the records of one migration: use a new policy per migration.
type StallPolicy struct {
	opts StallOptions
	name string

	lastIter     uint64
	records      []stallRecord
	inStall      bool
	target       float64
	history      []float64
	patience     time.Duration
	patienceFrom time.Duration
	forcedAt     time.Duration
	forced       bool
}

type stallRecord struct {
	at        time.Duration
	remaining float64
}

// NewStallPolicy returns KubeVirt's stall detector with opts.
func NewStallPolicy(opts StallOptions) *StallPolicy {
	name := "kubevirt-stall"
	if opts.AllowPostCopy {
		name = "kubevirt-stall-pc"
	}
	return &StallPolicy{opts: opts.withDefaults(), name: name}
}

// Name is "kubevirt-stall", or "kubevirt-stall-pc" with post-copy allowed.
func (s *StallPolicy) Name() string { return s.name }

// PollInterval is KubeVirt's monitorSleepPeriodMS.
func (s *StallPolicy) PollInterval() time.Duration { return 400 * time.Millisecond }

func (s *StallPolicy) maxDowntime(p Progress) time.Duration {
	switch {
	case s.opts.MaxDowntime > 0:
		return s.opts.MaxDowntime
	case p.DowntimeBound > 0:
		return p.DowntimeBound
	}
	return 900 * time.Millisecond
}

// Decide applies the stall detector's rules.
func (s *StallPolicy) Decide(p Progress) Action {
	o := s.opts
	postCopy := o.AllowPostCopy && p.AllowPostCopy
	maxDown := s.maxDowntime(p)
	budget := (&KubeVirtPolicy{opts: KubeVirtOptions{CompletionTimeoutPerGiB: o.CompletionTimeoutPerGiB}}).AcceptableCompletionTime(p.Memory)
	f := figures{}.seconds("elapsed", p.Elapsed).seconds("acceptableCompletionTime", budget)
	switch p.Phase {
	case PhasePlanning:
		return Action{Kind: ActionStart, Rule: RuleStart, PostCopy: postCopy, AutoConverge: o.AllowAutoConverge && p.AllowAutoConverge,
			DowntimeLimit: min(maxDown, DefaultDowntimeLimit),
			Reason:        "start with min(maxDowntime, 300 ms); watch every iteration for a stall", Figures: f}
	case PhasePostCopy:
		return Action{Kind: ActionContinue, Rule: RulePostCopyRunning, Reason: "in post-copy: never abort", Figures: f}
	}
	bw := p.BandwidthAvg.Or(0)
	rem := float64(p.Remaining.Or(p.Memory))
	if s.forced {
		if p.Elapsed-s.forcedAt > o.SwitchoverTimeout {
			return Action{Kind: ActionAbort, Rule: RuleSwitchoverTimeout, Figures: f,
				Reason: fmt.Sprintf("forced switchover did not complete within %v", o.SwitchoverTimeout)}
		}
		return Action{Kind: ActionContinue, Rule: RuleSwitchoverUnderway, Reason: "forced switchover under way", Figures: f}
	}
	if p.Elapsed > budget {
		extended := time.Duration(o.CompletionTimeoutFactor * float64(budget))
		if postCopy && bw > 0 && rem/bw <= (extended-p.Elapsed).Seconds() {
			return Action{Kind: ActionSwitchPostCopy, Rule: RuleCompletionTimeoutPostCopy, Figures: f,
				Reason: fmt.Sprintf("not completed within %v: post-copy of %s fits the extended budget", budget, formatBytes(rem))}
		}
		return Action{Kind: ActionAbort, Rule: RuleCompletionTimeout, Figures: f,
			Reason: fmt.Sprintf("live migration is not completed after %d s", int(budget.Seconds()))}
	}
	it, ok := p.Iteration.Get()
	if !ok || it == s.lastIter || !p.Remaining.Valid {
		return Action{Kind: ActionContinue, Rule: RuleAwaitIteration, Reason: "waiting for the next iteration", Figures: f}
	}
	s.lastIter = it
	now := p.Elapsed
	minOld := math.Inf(1)
	minAll := rem
	for _, r := range s.records {
		if r.at <= now-o.StallProgressTimeout {
			minOld = math.Min(minOld, r.remaining)
		}
		minAll = math.Min(minAll, r.remaining)
	}
	s.records = append(s.records, stallRecord{at: now, remaining: rem})
	if math.IsInf(minOld, 1) || rem < minOld*(1-o.StallMargin) {
		s.inStall = false
		return Action{Kind: ActionContinue, Rule: RuleIterationProgressed, Reason: "iteration made progress", Figures: f}
	}
	if !s.inStall {
		s.inStall, s.target, s.history = true, minAll, nil
		s.patience, s.patienceFrom = o.StallProgressTimeout, now
	}
	s.history = append(s.history, rem)
	f = f.add("remaining", rem, "B").add("target", s.target, "B")
	if rem > s.target*(1+o.StallMargin) {
		if now-s.patienceFrom > s.patience {
			s.target = s.nextLowest()
			s.patience = time.Duration(float64(s.patience) * o.PatienceDecay)
			s.patienceFrom = now
		}
		return Action{Kind: ActionContinue, Rule: RuleAwaitLocalMinimum, Reason: "stalled: waiting for a local minimum", Figures: f}
	}
	if bw <= 0 {
		return Action{Kind: ActionContinue, Rule: RuleStallNoBandwidth, Reason: "stalled at a local minimum: no bandwidth yet", Figures: f}
	}
	implied := time.Duration(rem / bw * float64(time.Second))
	f = f.seconds("impliedDowntime", implied)
	extended := time.Duration(o.CompletionTimeoutFactor * float64(budget))
	switch {
	case implied > extended-now:
		return Action{Kind: ActionContinue, Rule: RuleStallOverBudget, Reason: "stalled at a local minimum; the implied pause exceeds the budget left", Figures: f}
	case postCopy:
		s.forced, s.forcedAt = true, now
		return Action{Kind: ActionSwitchPostCopy, Rule: RuleStallPostCopy, Figures: f,
			Reason: fmt.Sprintf("stalled at a local minimum (%s left): post-copy", formatBytes(rem))}
	case float64(implied) <= o.PrecopyPossibleFactor*float64(maxDown):
		s.forced, s.forcedAt = true, now
		return Action{Kind: ActionRaiseDowntime, Rule: RuleStallStopAndCopy, DowntimeLimit: maxDown, Figures: f,
			Reason: fmt.Sprintf("stalled at a local minimum, implied pause %v: soft stop-and-copy with a %v limit", implied.Round(time.Millisecond), maxDown)}
	}
	return Action{Kind: ActionAbort, Rule: RuleStallAbort, Figures: f,
		Reason: fmt.Sprintf("stalled: the implied pause %v exceeds %.1f × %v and post-copy is not allowed: abort early", implied.Round(time.Millisecond), o.PrecopyPossibleFactor, maxDown)}
}

// nextLowest is the lowest R since the stall above the current target.
func (s *StallPolicy) nextLowest() float64 {
	h := slices.Clone(s.history)
	slices.Sort(h)
	for _, v := range h {
		if v > s.target*(1+s.opts.StallMargin) {
			return v
		}
	}
	return s.target
}
