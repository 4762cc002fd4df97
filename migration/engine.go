package migration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"time"

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
// hypervisor's virtual clock; nil means the wall clock.
type Clock interface {
	Now() time.Time
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// Request is one migration for the engine to carry out.
type Request struct {
	// Domain is the libvirt name of the guest.
	Domain string
	// Memory is the guest memory in bytes (M); required.
	Memory uint64
	// Params address the target and carry fixed knobs (bandwidth cap,
	// parallel connections). The engine sets DowntimeLimit, PostCopy and
	// AutoConverge from the policy's start action.
	Params hypervisor.MigrationParams
	// AllowPostCopy and AllowAutoConverge are the permissions of the
	// migration configuration.
	AllowPostCopy     bool
	AllowAutoConverge bool
	// DowntimeLimit is the configured limit (0 = 300 ms); MaxDowntime the
	// highest a policy may raise it to (0 = DowntimeLimit).
	DowntimeLimit time.Duration
	MaxDowntime   time.Duration
	// BandwidthHint is an expected transfer rate in bytes/s known before the
	// start (0 = unknown), letting a policy refuse before any byte moves.
	BandwidthHint float64
}

// Validate reports the first bad field.
func (r Request) Validate() error {
	switch {
	case r.Domain == "":
		return fmt.Errorf("domain: required: %w", ErrInvalidInput)
	case r.Memory == 0:
		return fmt.Errorf("memory: must be > 0: %w", ErrInvalidInput)
	case r.DowntimeLimit < 0:
		return fmt.Errorf("downtimeLimit: must be >= 0: %w", ErrInvalidInput)
	case r.MaxDowntime < 0:
		return fmt.Errorf("maxDowntime: must be >= 0: %w", ErrInvalidInput)
	case r.BandwidthHint < 0 || math.IsNaN(r.BandwidthHint):
		return fmt.Errorf("bandwidthHint: must be >= 0: %w", ErrInvalidInput)
	}
	return nil
}

// Options configure an [Engine]; the zero value is the default.
type Options struct {
	// Policy decides; nil = NewPolicy(PolicyOptions{}).
	Policy Policy
	// PollInterval is the time between job polls; 0 = the policy's own
	// period ([PollIntervaler]) or 500 ms.
	PollInterval time.Duration
	// Measurer measures the dirty rate before the start; nil = the migrator
	// if it implements [hypervisor.DirtyRateMeasurer], else no measurement.
	Measurer hypervisor.DirtyRateMeasurer
	// Probe, when set, measures without blocking (libvirt's
	// virDomainStartDirtyRateCalc, sim's StartDirtyRateCalc): Start only
	// begins the pre-start measurement and Step starts the job once it is
	// in, so a harness that drives a virtual clock never blocks. The engine
	// also probes once after each throttle change to learn how much the
	// throttle slowed the dirtying. Leave it nil where sampling contends
	// with the migration's own dirty tracking (QEMU page sampling).
	Probe DirtyRateProbe
	// QEMUAutoConverge makes the engine leave throttling to QEMU's
	// auto-converge (the policy's start flag) even when the job can be
	// throttled directly. Set it for backends whose jobs do not implement
	// [hypervisor.Throttler] (libvirt): the engine only finds out once the
	// job runs, too late to enable auto-converge.
	QEMUAutoConverge bool
	// MeasurePeriod is the sampling period of that measurement; 0 = 1 s.
	MeasurePeriod time.Duration
	// SkipMeasurement starts the job without the pre-start dirty-rate
	// measurement (for policies that do not use it: the baselines).
	SkipMeasurement bool
	// ProbeInterval is the time between probes while the first pass runs
	// (when Probe is set); 0 = 2 s.
	ProbeInterval time.Duration
	// BandwidthSmoothing is the EWMA weight of a new bandwidth sample;
	// 0 = 0.4 (KubeVirt VEP 248's ewmaAlpha).
	BandwidthSmoothing float64
	// ThrottleSettle is how long after a throttle change the job's dirty
	// rate is treated as stale unless a new iteration reported it; 0 = 2 s.
	ThrottleSettle time.Duration
	// Clock is the time source; nil = wall clock.
	Clock Clock
	// Logger receives one line per strategic decision; nil = discard.
	Logger *slog.Logger
}

// DirtyRateProbe starts a dirty-rate measurement and returns at once.
type DirtyRateProbe interface {
	StartDirtyRateProbe(ctx context.Context, domain string, period time.Duration) (PendingDirtyRate, error)
}

// PendingDirtyRate is a measurement under way.
type PendingDirtyRate interface {
	// Done is closed once the result is in.
	Done() <-chan struct{}
	// Result returns it (it blocks until Done, or ctx ends).
	Result(ctx context.Context) (hypervisor.DirtyRate, error)
}

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

	firstPassAt time.Time
	lastJobRate hypervisor.Measured[uint64]
	jobRates    rateRange
	// Stall tracking: the best expected downtime after the first pass and
	// how many rounds ago it last improved by more than the margin.
	bestExpected  hypervisor.Measured[time.Duration]
	bestRound     uint64
	lastRound     uint64
	stalledRounds int

	decisions    []Decision
	last         Action
	lastProgress Progress
	prediction   *Prediction
	decisionAt   time.Duration
	strategy     string
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
	measured := e.st.dirtyBefore.Valid || e.st.measureErr != "" || e.opts.SkipMeasurement
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
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.launchLocked(ctx)
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
			note := Action{Kind: ActionContinue, Reason: "the job cannot be throttled directly and QEMU auto-converge was not enabled at the start: no throttling for this migration (set Options.QEMUAutoConverge for this backend)"}
			e.log.Warn("migration cannot be throttled", "domain", e.req.Domain)
			e.st.decisions = append(e.st.decisions, Decision{Time: now, Action: note})
		}
	}
	e.st.startedAt = e.clock.Now()
	e.st.lastProgressAt = e.st.startedAt
	e.st.phase = PhasePreCopy
	return nil
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
		return false, err
	}
	e.mu.Lock()
	probeDue := e.probeInJob && e.st.probe == nil && e.st.phase == PhasePreCopy && !e.st.firstPassDone &&
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
func (e *Engine) Run(ctx context.Context) (Result, error) {
	if err := e.Start(ctx); err != nil {
		return e.Result(), err
	}
	t := time.NewTicker(e.opts.PollInterval)
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
		case <-t.C:
		}
		if _, err := e.Step(ctx); err != nil {
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
	act := Action{Kind: ActionAbort, Reason: reason}
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
	act := Action{Kind: ActionAbort, Reason: reason}
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
		r.Reason = e.abortReasonLocked(res.Reason)
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

// abortReasonLocked prefers the policy's reason over the backend's.
func (e *Engine) abortReasonLocked(backend string) string {
	for i := len(e.st.decisions) - 1; i >= 0; i-- {
		if e.st.decisions[i].Action.Kind == ActionAbort {
			return e.st.decisions[i].Action.Reason
		}
	}
	if backend == "" {
		return "aborted"
	}
	return backend
}

func (e *Engine) finishRefusedLocked(act Action) {
	e.st.done = true
	e.st.strategy = "Refused"
	e.st.result = Result{Policy: e.policy.Name(), Outcome: OutcomeFailed, Refused: true,
		Mode: hypervisor.ModePreCopy, Reason: act.Reason, Decisions: e.decisionsLocked(),
		err: fmt.Errorf("%s: %s: %w", e.req.Domain, act.Reason, ErrRefused)}
}

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
		st.lastJobRate = s.MemoryDirtyRate // the first pass's rate is diluted by its length
	}
	// A round that does not bring the pause after the sync below 96 % of
	// the best so far counts towards a stall (KubeVirt VEP 248's 4 % margin,
	// counted in rounds rather than seconds).
	if it, ok := s.MemoryIteration.Get(); ok && st.firstPassDone && wasDone && it != st.lastRound {
		st.lastRound = it
		if d, ok := s.Downtime.Get(); ok && s.Mode != hypervisor.ModePostCopy {
			if !st.bestExpected.Valid || float64(d) < 0.96*float64(st.bestExpected.Value) {
				st.bestExpected, st.bestRound = hypervisor.Some(d), it
			}
			st.stalledRounds = int(it - st.bestRound)
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
		// auto-converge steps.
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

// progressLocked builds the policy's view.
func (e *Engine) progressLocked(now time.Time) Progress {
	st := &e.st
	s := st.stats
	p := Progress{
		Phase:               st.phase,
		Memory:              e.req.Memory,
		DataSent:            s.DataProcessed,
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
		DowntimeLimit:       st.downtimeLimit,
		ConfiguredDowntime:  e.req.DowntimeLimit,
		DowntimeBound:       e.req.MaxDowntime,
		ExpectedDowntime:    s.Downtime,
		MinRemaining:        st.minRemaining,
		AllowPostCopy:       e.req.AllowPostCopy,
		AllowAutoConverge:   e.req.AllowAutoConverge,
	}
	if !p.DataSent.Valid {
		p.DataSent = s.MemoryProcessed
	}
	if !p.Remaining.Valid {
		p.Remaining = s.MemoryRemaining
	}
	if e.req.BandwidthHint > 0 {
		p.BandwidthHint = hypervisor.Some(e.req.BandwidthHint)
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
	return p
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
	if n := len(st.decisions); n > 0 && act.Kind == ActionContinue &&
		st.decisions[n-1].Action.Kind == ActionContinue && st.decisions[n-1].Action.Reason == act.Reason {
		st.last = act
		return
	}
	if n := len(st.decisions); n > 0 && act.Kind == ActionContinue && sameRule(st.decisions[n-1].Action.Reason, act.Reason) {
		st.last = act
		return
	}
	st.last = act
	st.decisions = append(st.decisions, Decision{Time: now, Elapsed: p.Elapsed, Iteration: p.Iteration, Action: act})
	if act.Kind != ActionContinue {
		e.log.Info("migration decision", "domain", e.req.Domain, "policy", e.policy.Name(),
			"elapsed", p.Elapsed, "action", act.String())
	}
}

// sameRule treats two Continue reasons as the same decision when they
// differ only in the numbers they quote (the first 24 bytes name the rule).
func sameRule(a, b string) bool {
	const n = 24
	if len(a) < n || len(b) < n {
		return a == b
	}
	return a[:n] == b[:n]
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
