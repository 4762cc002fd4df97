package migration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit/hypervisor"
)

// Sentinel errors of the engine; test with errors.Is.
var (
	// ErrRefused: the policy declined to start the migration.
	ErrRefused = errors.New("migration refused")
	// ErrStarted: Start was called twice.
	ErrStarted = errors.New("migration engine already started")
	// ErrNotStarted: Step was called before Start.
	ErrNotStarted = errors.New("migration engine not started")
)

// Clock tells the engine the time. The benchmark passes the simulated
// hypervisor's virtual clock; nil means the wall clock. A Clock that also
// has k8s.io/utils/clock's NewTimer (clock.WithTicker does, and so does
// sim.VirtualClock) times Run's polls too; otherwise Run polls on real
// timers.
type Clock interface {
	Now() time.Time
}

// timerClock is the part of k8s.io/utils/clock.Clock Run needs.
type timerClock interface {
	NewTimer(d time.Duration) clock.Timer
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// Engine carries out one migration: measure, start as the policy says, then
// poll the job, ask the policy, act, and record every decision. Start and
// Step drive it one poll at a time (a harness on a virtual clock calls Step
// after each clock advance); Run does the same on a real ticker. One
// goroutine drives an engine (Start, Step or Run); Snapshot and Result are
// safe to call from any goroutine at any time.
type Engine struct {
	migrator hypervisor.Migrator
	measurer hypervisor.DirtyRateMeasurer
	policy   Policy
	req      Request
	opts     Options
	clock    Clock
	log      *slog.Logger

	mu  sync.Mutex
	job hypervisor.MigrationJob
	thr hypervisor.Throttler
	// caps are the migrator's reported capabilities (nil = not reported);
	// probeInJob says whether Options.Probe may run while the job does.
	caps       *hypervisor.MigrationCapabilities
	probeInJob bool
	st         state
}

// pauseMark is the expected pause after a sync that beat every earlier one
// by a margin, and the round and time it came in.
type pauseMark struct {
	value hypervisor.Measured[time.Duration]
	round uint64
	at    time.Time
}

// note records d, seen after round it's sync at now, when it is under
// margin × the mark.
func (m *pauseMark) note(d time.Duration, it uint64, now time.Time, margin float64) {
	if !m.value.Valid || float64(d) < margin*float64(m.value.Value) {
		*m = pauseMark{value: hypervisor.Some(d), round: it, at: now}
	}
}

// state is everything the engine tracks between polls.
type state struct {
	started, done bool
	aborting      bool
	startedAt     time.Time
	phase         Phase
	result        Result

	dirtyBefore hypervisor.Measured[float64]
	measureErr  string
	measuring   PendingDirtyRate // pre-start probe under way
	probe       PendingDirtyRate // in-job probe under way
	probeRate   hypervisor.Measured[float64]
	probeAt     time.Time
	probeStart  time.Time
	samples     []sample

	stats         hypervisor.JobStats
	bwAvg, bwBest hypervisor.Measured[float64]
	bwSamples     int

	prevRemaining  hypervisor.Measured[uint64]
	lastProgressAt time.Time
	minRemaining   hypervisor.Measured[uint64]
	firstPassDone  bool

	downtimeLimit time.Duration
	throttle      int
	maxThrottle   int
	// Throttle learning: the effective dirty rate and throttle before the
	// last change, the time and iteration of the change, and the learned ε.
	throttleChangedAt  time.Time
	throttleChangeIter uint64
	dirtyAtChange      hypervisor.Measured[float64]
	throttleAtChange   int
	dirtyFresh         bool
	jobRateNewer       bool // the job reported a new dirty rate after the last probe
	sensitivity        hypervisor.Measured[float64]
	// The highest throttle and the fresh dirty rate measured under it.
	ceiling     int
	ceilingRate hypervisor.Measured[float64]

	firstPassAt   time.Time
	firstPassSent hypervisor.Measured[uint64]
	lastJobRate   hypervisor.Measured[uint64]
	jobRates      rateRange
	// Stall tracking: the best expected pause after the first pass that
	// beat every earlier one by 4 % (KubeVirt's stall margin) and how many
	// rounds ago it came; lowest the same at a 1 % margin.
	best, lowest  pauseMark
	lastRound     uint64
	stalledRounds int
	// The expected pause after the previous round's sync, and the ratio of
	// the latest to it: how fast the rounds shrink.
	prevExpected hypervisor.Measured[time.Duration]
	roundShrink  hypervisor.Measured[float64]
	// workingSet is the most data a sync has left pending after the first
	// pass (seen at the first poll of a round): the writable working set,
	// as far as the rounds have shown it.
	workingSet hypervisor.Measured[uint64]

	decisions    []Decision
	last         Action
	lastProgress Progress
	prediction   *Prediction
	decisionAt   time.Duration
	strategy     string
	// deadline is the completion deadline the caller applies
	// (CompletionDeadline); extended records that a decision said so.
	deadline time.Duration
	extended bool
}

// rateRange is the spread of the job's dirty rates under one throttle.
type rateRange struct {
	throttle  int
	low, high float64
	n         int
}

func (r *rateRange) add(v float64) {
	if r.n == 0 || v < r.low {
		r.low = v
	}
	if r.n == 0 || v > r.high {
		r.high = v
	}
	r.n++
}

// sample is one short dirty-rate measurement.
type sample struct {
	at       time.Time
	rate     float64
	throttle int
}

// NewEngine returns an engine for req on m.
func NewEngine(m hypervisor.Migrator, req Request, opts Options) (*Engine, error) {
	if m == nil {
		return nil, fmt.Errorf("migrator: required: %w", ErrInvalidInput)
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if req.DowntimeLimit == 0 {
		req.DowntimeLimit = DefaultDowntimeLimit
	}
	if req.MaxDowntime < req.DowntimeLimit {
		req.MaxDowntime = req.DowntimeLimit
	}
	if opts.Policy == nil {
		opts.Policy = NewPolicy(PolicyOptions{})
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = 500 * time.Millisecond
		if pi, ok := opts.Policy.(PollIntervaler); ok && pi.PollInterval() > 0 {
			opts.PollInterval = pi.PollInterval()
		}
	}
	if opts.PollInterval < 0 {
		return nil, fmt.Errorf("options.pollInterval: must be > 0: %w", ErrInvalidInput)
	}
	if opts.MeasurePeriod <= 0 {
		opts.MeasurePeriod = time.Second
	}
	if opts.MeasureWorth <= 0 {
		opts.MeasureWorth = 20 * opts.MeasurePeriod
	}
	if opts.BandwidthSmoothing <= 0 || opts.BandwidthSmoothing > 1 {
		opts.BandwidthSmoothing = 0.4
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = 2 * time.Second
	}
	if opts.ThrottleSettle <= 0 {
		opts.ThrottleSettle = 2 * time.Second
	}
	e := &Engine{migrator: m, measurer: opts.Measurer, policy: opts.Policy, req: req, opts: opts,
		clock: opts.Clock, log: opts.Logger}
	if e.measurer == nil {
		e.measurer, _ = m.(hypervisor.DirtyRateMeasurer)
	}
	if e.clock == nil {
		e.clock = wallClock{}
	}
	if e.log == nil {
		e.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e.st.phase = PhasePlanning
	e.st.downtimeLimit = req.DowntimeLimit
	return e, nil
}

// PollInterval is the period at which Step should be called.
func (e *Engine) PollInterval() time.Duration { return e.opts.PollInterval }

// minPoll is the shortest wait NextPoll asks for.
const minPoll = 50 * time.Millisecond

// NextPoll is how long to wait before the next Step: PollInterval, or for a
// [SwitchoverWatcher] policy shorter (down to 50 ms) while the pending data
// would be sent sooner, so that a
// decision at the end of a pass (the switchover threshold) comes before
// QEMU's next sync rather than a whole poll later.
func (e *Engine) NextPoll() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	next := e.opts.PollInterval
	if w, ok := e.policy.(SwitchoverWatcher); !ok || !w.WatchSwitchover() || e.st.phase != PhasePreCopy {
		return next
	}
	rem, ok := e.st.stats.DataRemaining.Get()
	if !ok {
		rem, ok = e.st.stats.MemoryRemaining.Get()
	}
	bw, bok := e.st.bwAvg.Get()
	if !ok || !bok || bw <= 0 {
		return next
	}
	left := time.Duration(float64(rem) / bw * float64(time.Second))
	if left < next {
		next = max(minPoll, left)
	}
	return next
}

// Step polls the job once, lets the policy decide and applies the action.
// It returns true once the migration has ended (the Result is final).
func (e *Engine) Step(ctx context.Context) (bool, error) {
	e.mu.Lock()
	if e.st.done {
		e.mu.Unlock()
		return true, nil
	}
	if e.st.measuring != nil {
		pending := e.st.measuring
		select {
		case <-pending.Done():
		default:
			e.mu.Unlock()
			return false, nil
		}
		e.st.measuring = nil
		if dr, err := pending.Result(ctx); err != nil {
			e.st.measureErr = err.Error()
		} else {
			e.st.dirtyBefore = hypervisor.Some(float64(dr.BytesPerSecond))
			e.st.samples = append(e.st.samples, sample{at: e.clock.Now(), rate: float64(dr.BytesPerSecond)})
		}
		err := e.launchLocked(ctx)
		done := e.st.done
		e.mu.Unlock()
		if errors.Is(err, ErrRefused) {
			return true, nil
		}
		return done, err
	}
	if e.job == nil {
		e.mu.Unlock()
		return false, ErrNotStarted
	}
	job := e.job
	e.collectProbeLocked(ctx)
	e.mu.Unlock()

	select {
	case <-job.Done():
		return true, e.finish(ctx)
	default:
	}
	stats, err := job.Stats(ctx)
	if err != nil {
		select {
		case <-job.Done(): // ended between the check and the poll
			return true, e.finish(ctx)
		default:
		}
		if errors.Is(err, hypervisor.ErrNoJob) {
			// The job is ending; Done closes at a later poll.
			return false, nil
		}
		return false, fmt.Errorf("poll migration job of %q: %w", e.req.Domain, err)
	}

	e.mu.Lock()
	now := e.clock.Now()
	e.observeLocked(now, stats)
	if e.st.aborting {
		// The abort is under way; the job ends on its own time.
		e.mu.Unlock()
		return false, nil
	}
	p := e.progressLocked(now)
	act := e.policy.Decide(p)
	e.recordLocked(now, p, act)
	e.mu.Unlock()

	if err := e.apply(ctx, job, act); err != nil {
		select {
		case <-job.Done():
			return true, e.finish(ctx)
		default:
		}
		if errors.Is(err, hypervisor.ErrNoJob) {
			return false, nil // ended while the policy decided
		}
		if errors.Is(err, hypervisor.ErrInvalidState) && (act.Kind == ActionThrottle || act.Kind == ActionRaiseDowntime) {
			// The job moved on (stop-and-copy began) between the poll
			// and the action; the next poll sees it.
			e.log.Debug("migration action overtaken by the job", "domain", e.req.Domain, "action", act.Kind, "err", err)
			return false, nil
		}
		return false, err
	}
	e.mu.Lock()
	probeDue := e.probeInJob && e.st.probe == nil && e.st.phase == PhasePreCopy && (!e.st.firstPassDone || e.st.throttle > 0) &&
		!e.st.aborting && e.clock.Now().Sub(e.st.probeStart) >= e.opts.ProbeInterval
	e.mu.Unlock()
	if probeDue {
		e.startProbe(ctx)
	}
	return false, nil
}

// Run carries out the migration on the engine's clock with a real ticker:
// Start, then Step every PollInterval until the job ends. Cancelling ctx
// aborts the job (the guest stays on the source) and returns ctx's error.
// The Result's Err tells how a finished migration ended.
func (e *Engine) Run(ctx context.Context) (res Result, err error) {
	ctx, span := e.startSpan(ctx)
	defer func() { e.endSpan(ctx, span, res, err) }()
	if err := e.Start(ctx); err != nil {
		return e.Result(), err
	}
	var t clock.Timer
	if tc, ok := e.clock.(timerClock); ok {
		t = tc.NewTimer(e.opts.PollInterval)
	} else {
		t = clock.RealClock{}.NewTimer(e.opts.PollInterval)
	}
	defer t.Stop()
	for {
		e.mu.Lock()
		job, done := e.job, e.st.done
		e.mu.Unlock()
		if done {
			r := e.Result()
			return r, r.Err()
		}
		var jobDone <-chan struct{}
		if job != nil {
			jobDone = job.Done()
		}
		select {
		case <-ctx.Done():
			e.cancel(job, "cancelled: "+context.Cause(ctx).Error())
			return e.Result(), ctx.Err()
		case <-jobDone:
		case <-t.C():
		}
		if ctx.Err() != nil {
			// Cancelled while a poll was due as well (a select with both
			// ready picks one at random): the cancel wins.
			e.cancel(job, "cancelled: "+context.Cause(ctx).Error())
			return e.Result(), ctx.Err()
		}
		_, err := e.Step(ctx)
		t.Reset(e.NextPoll())
		if err != nil {
			if ctx.Err() != nil {
				e.cancel(job, "cancelled: "+context.Cause(ctx).Error())
				return e.Result(), ctx.Err()
			}
			// A failed poll or action is retried at the next tick; the job
			// keeps running meanwhile.
			e.log.Warn("migration step failed", "domain", e.req.Domain, "err", err)
		}
	}
}

// Abort asks the running job to stop for reason (a caller's own limit, such
// as KubeVirt's completion or progress timeout that bounds any policy); the
// guest stays on the source. It is recorded as a decision, and the Result
// is final at a later Step once the job has ended. A job already in
// post-copy cannot be aborted and returns the backend's error.
func (e *Engine) Abort(ctx context.Context, reason string) error {
	e.mu.Lock()
	job := e.job
	if job == nil || e.st.done {
		e.mu.Unlock()
		return fmt.Errorf("abort %q: %w", e.req.Domain, ErrNotStarted)
	}
	now := e.clock.Now()
	act := Action{Kind: ActionAbort, Rule: RuleAbortRequested, Reason: reason}
	e.recordLocked(now, e.progressLocked(now), act)
	e.mu.Unlock()
	return e.apply(ctx, job, act)
}

// cancel aborts the job after the caller's ctx ended, with a short context
// of its own, and waits for the result.
func (e *Engine) cancel(job hypervisor.MigrationJob, reason string) {
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	e.mu.Lock()
	now := e.clock.Now()
	act := Action{Kind: ActionAbort, Rule: RuleCancelled, Reason: reason}
	e.recordLocked(now, e.progressLocked(now), act)
	if job == nil {
		// Still measuring: nothing to abort.
		e.st.measuring = nil
		e.finishRefusedLocked(act)
		e.st.strategy = "Aborted"
		e.st.result.Refused = false
		e.st.result.Aborted = true
		e.st.result.err = fmt.Errorf("%s: %s: %w", e.req.Domain, reason, hypervisor.ErrMigrationAborted)
		e.mu.Unlock()
		return
	}
	e.st.aborting = true
	e.mu.Unlock()
	if err := job.Abort(ctx); err != nil {
		e.log.Warn("abort after cancel failed", "domain", e.req.Domain, "err", err)
	}
	_ = e.finish(ctx)
}
