package realqemu

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// callLog records the migration calls one engine makes on the source host,
// with their times from the engine's start, so that the policies' runs can
// be compared call for call (what the job was started with, which
// parameters were changed during it and when, how often it was polled).
type callLog struct {
	mu      sync.Mutex
	began   time.Time
	calls   []string
	polls   int
	firstAt time.Duration // first Stats answer, 0 = none yet
	lastAt  time.Duration
}

func (l *callLog) since() time.Duration { return time.Since(l.began) }

func (l *callLog) add(at time.Duration, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, fmt.Sprintf("%.2f ", at.Seconds())+fmt.Sprintf(format, args...))
}

func (l *callLog) poll(at time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.polls == 0 {
		l.firstAt = at
	}
	l.polls++
	l.lastAt = at
}

// String lists the calls in order, then the job polls.
func (l *callLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := strings.Join(l.calls, ", ")
	if l.polls > 0 {
		out += fmt.Sprintf(", Stats x%d (%.2f to %.2f)", l.polls, l.firstAt.Seconds(), l.lastAt.Seconds())
	}
	return out
}

// describeParams is the part of a start that differs between policies.
func describeParams(p hypervisor.MigrationParams) string {
	var b strings.Builder
	fmt.Fprintf(&b, "StartMigration{bandwidth %d MiB/s, downtime %v", (p.Bandwidth+(1<<20)-1)>>20, p.DowntimeLimit)
	if p.AutoConverge {
		fmt.Fprintf(&b, ", auto-converge %d+%d", p.AutoConvergeInitial, p.AutoConvergeIncrement)
	}
	if p.PostCopy {
		b.WriteString(", post-copy")
	}
	if p.ParallelConnections > 1 {
		fmt.Fprintf(&b, ", %d connections", p.ParallelConnections)
	}
	if p.TLS {
		b.WriteString(", TLS")
	}
	b.WriteString("}")
	return b.String()
}

// recordingMigrator is the source host's migrator as the engine sees it,
// with every migration call recorded. It offers MigrationCapabilities
// whether or not the host does: a host without it answers an error, which
// the engine treats as not knowing (the same as the method's absence).
type recordingMigrator struct {
	m   hypervisor.Migrator
	log *callLog
	// started, when set, receives the job StartMigration started (the
	// pass sampler's).
	started chan hypervisor.MigrationJob
}

func (r *recordingMigrator) MigrationCapabilities(ctx context.Context) (hypervisor.MigrationCapabilities, error) {
	cr, ok := r.m.(hypervisor.MigrationCapabilityReporter)
	if !ok {
		return hypervisor.MigrationCapabilities{}, fmt.Errorf("source host does not report migration capabilities: %w", hypervisor.ErrNotSupported)
	}
	at := r.log.since()
	c, err := cr.MigrationCapabilities(ctx)
	r.log.add(at, "MigrationCapabilities (%.0f ms)", float64(r.log.since()-at)/float64(time.Millisecond))
	return c, err
}

func (r *recordingMigrator) StartMigration(ctx context.Context, name string, p hypervisor.MigrationParams) (hypervisor.MigrationJob, error) {
	at := r.log.since()
	job, err := r.m.StartMigration(ctx, name, p)
	r.log.add(at, "%s (job seen after %.0f ms)", describeParams(p), float64(r.log.since()-at)/float64(time.Millisecond))
	if err != nil {
		return nil, err
	}
	if r.started != nil {
		select {
		case r.started <- job:
		default: // one job per engine; the sampler follows the first
		}
	}
	rj := &recordingJob{MigrationJob: job, log: r.log}
	if t, ok := job.(hypervisor.Throttler); ok {
		return &recordingThrottleJob{recordingJob: rj, t: t}, nil
	}
	return rj, nil
}

// recordingMeasurer records the pre-start dirty-rate samples.
type recordingMeasurer struct {
	m   hypervisor.DirtyRateMeasurer
	log *callLog
}

func (r *recordingMeasurer) MeasureDirtyRate(ctx context.Context, name string, period time.Duration) (hypervisor.DirtyRate, error) {
	at := r.log.since()
	dr, err := r.m.MeasureDirtyRate(ctx, name, period)
	r.log.add(at, "MeasureDirtyRate %v (%.0f ms)", period, float64(r.log.since()-at)/float64(time.Millisecond))
	return dr, err
}

// recordingJob records the calls that steer a job; Stats only counts.
type recordingJob struct {
	hypervisor.MigrationJob
	log *callLog
}

func (j *recordingJob) Stats(ctx context.Context) (hypervisor.JobStats, error) {
	st, err := j.MigrationJob.Stats(ctx)
	if err == nil {
		j.log.poll(j.log.since())
	}
	return st, err
}

func (j *recordingJob) Abort(ctx context.Context) error {
	j.log.add(j.log.since(), "Abort")
	return j.MigrationJob.Abort(ctx)
}

func (j *recordingJob) SetMaxDowntime(ctx context.Context, d time.Duration) error {
	j.log.add(j.log.since(), "SetMaxDowntime %v", d)
	return j.MigrationJob.SetMaxDowntime(ctx, d)
}

func (j *recordingJob) SetMaxSpeed(ctx context.Context, bytesPerSecond uint64) error {
	j.log.add(j.log.since(), "SetMaxSpeed %d MiB/s", (bytesPerSecond+(1<<20)-1)>>20)
	return j.MigrationJob.SetMaxSpeed(ctx, bytesPerSecond)
}

func (j *recordingJob) StartPostCopy(ctx context.Context) error {
	j.log.add(j.log.since(), "StartPostCopy")
	return j.MigrationJob.StartPostCopy(ctx)
}

// recordingThrottleJob is a recorded job that can be throttled directly.
type recordingThrottleJob struct {
	*recordingJob
	t hypervisor.Throttler
}

func (j *recordingThrottleJob) SetThrottle(ctx context.Context, percent int) error {
	j.log.add(j.log.since(), "SetThrottle %d%%", percent)
	return j.t.SetThrottle(ctx, percent)
}
