package fluid

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// Step is the integration step.
const Step = 10 * time.Millisecond

// Region is a part of memory written at Rate bytes/s.
type Region struct {
	Size       float64
	Rate       float64
	Sequential bool
	// Burst regions write only for BurstOn out of every BurstPeriod.
	BurstPeriod, BurstOn time.Duration
}

// Dip multiplies the bandwidth by Factor during [At, At+Duration).
type Dip struct {
	At, Duration time.Duration
	Factor       float64
}

// Config describes the guest and the link.
type Config struct {
	Memory      float64
	Bandwidth   float64
	Regions     []Region
	Sensitivity float64 // ε
	Dips        []Dip
	// SwitchoverCost is added to every pause.
	SwitchoverCost time.Duration
}

// Guest is the model; it is a Migrator, a DirtyRateMeasurer and, once a
// job runs, its MigrationJob and Throttler.
type Guest struct {
	mu  sync.Mutex
	cfg Config
	now time.Time
	t0  time.Time
	job *Job
}

// New returns a guest at time start.
func New(cfg Config, start time.Time) *Guest {
	return &Guest{cfg: cfg, now: start, t0: start}
}

// Now is the model's clock.
func (g *Guest) Now() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.now
}

// MeasureDirtyRate returns the unique bytes dirtied over period divided by
// period, computed from the model (no time passes).
func (g *Guest) MeasureDirtyRate(_ context.Context, _ string, period time.Duration) (hypervisor.DirtyRate, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	throttle := 0.0
	if g.job != nil && !g.job.ended {
		throttle = g.job.throttle
	}
	dirty := make([]float64, len(g.cfg.Regions))
	for t := time.Duration(0); t < period; t += Step {
		g.dirty(dirty, g.now.Add(t), Step, throttle)
	}
	sum := 0.0
	for _, d := range dirty {
		sum += d
	}
	return hypervisor.DirtyRate{BytesPerSecond: uint64(sum / period.Seconds()), Period: period, MeasuredAt: g.now, Method: "model"}, nil
}

// Pending is a measurement that completed at once.
type Pending struct {
	rate hypervisor.DirtyRate
	err  error
	done chan struct{}
}

// Probe measures like MeasureDirtyRate and returns a finished Pending.
func (g *Guest) Probe(ctx context.Context, name string, period time.Duration) *Pending {
	r, err := g.MeasureDirtyRate(ctx, name, period)
	p := &Pending{rate: r, err: err, done: make(chan struct{})}
	close(p.done)
	return p
}

// Done is closed.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Result is the measurement.
func (p *Pending) Result(context.Context) (hypervisor.DirtyRate, error) { return p.rate, p.err }

func (g *Guest) dirty(dirty []float64, at time.Time, dt time.Duration, throttle float64) {
	f := 1 - g.cfg.Sensitivity*throttle
	since := at.Sub(g.t0)
	for i, r := range g.cfg.Regions {
		if r.BurstPeriod > 0 && since%r.BurstPeriod >= r.BurstOn {
			continue
		}
		a := r.Rate * f * dt.Seconds()
		if r.Sequential {
			dirty[i] = math.Min(r.Size, dirty[i]+a)
		} else {
			dirty[i] = r.Size - (r.Size-dirty[i])*math.Exp(-a/r.Size)
		}
	}
}

func (g *Guest) bandwidth(at time.Time) float64 {
	b := g.cfg.Bandwidth
	since := at.Sub(g.t0)
	for _, d := range g.cfg.Dips {
		if since >= d.At && since < d.At+d.Duration {
			b *= d.Factor
		}
	}
	return b
}

// StartMigration starts the one job.
func (g *Guest) StartMigration(_ context.Context, name string, params hypervisor.MigrationParams) (hypervisor.MigrationJob, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.job != nil {
		return nil, hypervisor.WrapDomain("migrate", name, fmt.Errorf("a job is running: %w", hypervisor.ErrInvalidState))
	}
	dl := params.DowntimeLimit
	if dl == 0 {
		dl = 300 * time.Millisecond
	}
	j := &Job{g: g, params: params, downtime: dl, pending: g.cfg.Memory, iteration: 1,
		dirty: make([]float64, len(g.cfg.Regions)), started: g.now, roundStart: g.now, done: make(chan struct{}),
		lastCheck: g.now}
	g.job = j
	return j, nil
}

// Advance moves the model forward by d.
func (g *Guest) Advance(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for end := g.now.Add(d); g.now.Before(end); g.now = g.now.Add(Step) {
		if g.job != nil {
			g.job.step(g.now, Step)
		}
	}
}

// Job is the running migration.
type Job struct {
	g      *Guest
	params hypervisor.MigrationParams

	downtime   time.Duration
	throttle   float64
	pending    float64 // bytes to send in this round
	dirty      []float64
	iteration  uint64
	sent       float64
	rate       float64 // bytes/s sent in the last step
	dirtyRate  hypervisor.Measured[uint64]
	roundStart time.Time
	postCopy   bool
	started    time.Time

	// QEMU auto-converge: dirtied vs sent per ≥1 s period.
	lastCheck                   time.Time
	periodDirty, periodSent     float64
	acCount                     int
	ended                       bool
	result                      hypervisor.MigrationResult
	err                         error
	done                        chan struct{}
	MaxThrottle                 int
	abortRequested, switchAsked bool
}

func (j *Job) dirtyTotal() float64 {
	s := 0.0
	for _, d := range j.dirty {
		s += d
	}
	return s
}

func (j *Job) step(now time.Time, dt time.Duration) {
	if j.ended {
		return
	}
	b := j.g.bandwidth(now)
	if cap := float64(j.params.Bandwidth); cap > 0 && cap < b {
		b = cap
	}
	if j.abortRequested {
		j.end(now, false, true, "aborted", 0)
		return
	}
	send := math.Min(j.pending, b*dt.Seconds())
	j.pending -= send
	j.sent += send
	j.periodSent += send
	j.rate = send / dt.Seconds()
	if j.postCopy {
		if j.pending <= 0 {
			j.end(now.Add(dt), true, false, "", 0)
		}
		return
	}
	before := j.dirtyTotal()
	j.g.dirty(j.dirty, now, dt, j.throttle)
	j.periodDirty += j.dirtyTotal() - before

	threshold := b * j.downtime.Seconds()
	if j.switchAsked {
		// Post-copy: a short pause, then everything left moves once.
		j.pending += j.dirtyTotal()
		clear(j.dirty)
		j.postCopy = true
		j.result.Stats.Downtime = hypervisor.Some(50*time.Millisecond + j.g.cfg.SwitchoverCost)
		return
	}
	if j.pending <= threshold {
		// Bitmap sync: the dirtied pages join the pending ones.
		elapsed := now.Add(dt).Sub(j.roundStart).Seconds()
		if elapsed > 0 {
			j.dirtyRate = hypervisor.Some(uint64(j.dirtyTotal() / elapsed))
		}
		j.pending += j.dirtyTotal()
		clear(j.dirty)
		j.roundStart = now.Add(dt)
		j.iteration++
		j.autoConverge(now.Add(dt))
		if j.pending <= threshold {
			pause := time.Duration(j.pending/b*float64(time.Second)) + j.g.cfg.SwitchoverCost
			j.sent += j.pending
			j.pending = 0
			j.end(now.Add(dt).Add(pause), true, false, "", pause)
		}
	}
}

// autoConverge is QEMU's rule: on a sync at least 1 s after the last check,
// count a period in which dirtied > 50 % of sent; every second such period
// raises the throttle (20, then +10, up to 99).
func (j *Job) autoConverge(now time.Time) {
	if !j.params.AutoConverge || now.Sub(j.lastCheck) < time.Second {
		return
	}
	if j.periodDirty > 0.5*j.periodSent {
		j.acCount++
		if j.acCount >= 2 {
			j.acCount = 0
			initial, inc := j.params.AutoConvergeInitial, j.params.AutoConvergeIncrement
			if initial == 0 {
				initial = 20
			}
			if inc == 0 {
				inc = 10
			}
			p := int(math.Round(j.throttle * 100))
			if p == 0 {
				p = initial
			} else {
				p = min(99, p+inc)
			}
			j.setThrottle(p)
		}
	}
	j.lastCheck, j.periodDirty, j.periodSent = now, 0, 0
}

func (j *Job) setThrottle(p int) {
	j.throttle = float64(p) / 100
	if p > j.MaxThrottle {
		j.MaxThrottle = p
	}
}

func (j *Job) end(at time.Time, ok, aborted bool, reason string, pause time.Duration) {
	j.ended = true
	mode := hypervisor.ModePreCopy
	if j.postCopy {
		mode = hypervisor.ModePostCopy
	}
	j.result.Succeeded, j.result.Aborted, j.result.Mode, j.result.Reason = ok, aborted, mode, reason
	j.result.Started, j.result.Ended = j.started, at
	if !j.postCopy && ok {
		j.result.Stats.Downtime = hypervisor.Some(pause)
	}
	j.result.Stats.DataProcessed = hypervisor.Some(uint64(j.sent))
	j.result.Stats.AutoConvergeThrottle = hypervisor.Some(int64(j.MaxThrottle))
	if aborted {
		j.err = fmt.Errorf("%s: %w", reason, hypervisor.ErrMigrationAborted)
	}
	close(j.done)
}

// Stats reports the job's counters.
func (j *Job) Stats(context.Context) (hypervisor.JobStats, error) {
	j.g.mu.Lock()
	defer j.g.mu.Unlock()
	if j.ended {
		return hypervisor.JobStats{}, hypervisor.ErrNoJob
	}
	mode := hypervisor.ModePreCopy
	if j.postCopy {
		mode = hypervisor.ModePostCopy
	}
	rem := j.pending
	return hypervisor.JobStats{
		Type: hypervisor.JobUnbounded, Mode: mode,
		Elapsed:              hypervisor.Some(j.g.now.Sub(j.started)),
		DataProcessed:        hypervisor.Some(uint64(j.sent)),
		DataRemaining:        hypervisor.Some(uint64(rem)),
		MemoryTotal:          hypervisor.Some(uint64(j.g.cfg.Memory)),
		MemoryProcessed:      hypervisor.Some(uint64(j.sent)),
		MemoryRemaining:      hypervisor.Some(uint64(rem)),
		MemoryDirtyRate:      j.dirtyRate,
		MemoryBps:            hypervisor.Some(uint64(j.rate)),
		MemoryIteration:      hypervisor.Some(j.iteration),
		AutoConvergeThrottle: hypervisor.Some(int64(math.Round(j.throttle * 100))),
	}, nil
}

// Abort cancels the job at the next step.
func (j *Job) Abort(context.Context) error {
	j.g.mu.Lock()
	defer j.g.mu.Unlock()
	if j.ended {
		return hypervisor.ErrNoJob
	}
	if j.postCopy {
		return fmt.Errorf("abort in post-copy: %w", hypervisor.ErrInvalidState)
	}
	j.abortRequested = true
	return nil
}

// SetMaxDowntime changes the switchover threshold.
func (j *Job) SetMaxDowntime(_ context.Context, d time.Duration) error {
	j.g.mu.Lock()
	defer j.g.mu.Unlock()
	j.downtime = d
	return nil
}

// SetMaxSpeed caps the bandwidth.
func (j *Job) SetMaxSpeed(_ context.Context, bps uint64) error {
	j.g.mu.Lock()
	defer j.g.mu.Unlock()
	j.params.Bandwidth = bps
	return nil
}

// StartPostCopy switches at the next step.
func (j *Job) StartPostCopy(context.Context) error {
	j.g.mu.Lock()
	defer j.g.mu.Unlock()
	if !j.params.PostCopy {
		return fmt.Errorf("post-copy not enabled at start: %w", hypervisor.ErrInvalidState)
	}
	j.switchAsked = true
	return nil
}

// SetThrottle sets the vCPU throttle directly.
func (j *Job) SetThrottle(_ context.Context, percent int) error {
	j.g.mu.Lock()
	defer j.g.mu.Unlock()
	j.setThrottle(percent)
	return nil
}

// Done is closed when the job ended.
func (j *Job) Done() <-chan struct{} { return j.done }

// Result returns the outcome once the job ended.
func (j *Job) Result(ctx context.Context) (hypervisor.MigrationResult, error) {
	select {
	case <-j.done:
	case <-ctx.Done():
		return hypervisor.MigrationResult{}, ctx.Err()
	}
	j.g.mu.Lock()
	defer j.g.mu.Unlock()
	return j.result, j.err
}
