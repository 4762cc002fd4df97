package node

import (
	"context"
	"sync"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// postCopyFaults is the job's count of post-copy page faults for the
// status once it runs in post-copy: from final (the ended job's counters)
// when they have it, else from the counters the engine polled last.
func postCopyFaults(postCopy bool, final hypervisor.JobStats, rec *recordingMigrator) hypervisor.Measured[uint64] {
	if !postCopy {
		return hypervisor.Measured[uint64]{}
	}
	if final.PostcopyRequests.Valid {
		return final.PostcopyRequests
	}
	if rec == nil {
		return hypervisor.Measured[uint64]{}
	}
	st, _, ok := rec.latest()
	if !ok {
		return hypervisor.Measured[uint64]{}
	}
	return st.PostcopyRequests
}

// recordingMigrator remembers the latest job counters the engine polled,
// for MigrationSnapshots.
type recordingMigrator struct {
	inner hypervisor.Migrator
	now   func() time.Time

	mu    sync.Mutex
	stats hypervisor.JobStats
	at    time.Time
	have  bool
}

func (r *recordingMigrator) latest() (hypervisor.JobStats, time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats, r.at, r.have
}

func (r *recordingMigrator) record(s hypervisor.JobStats) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats, r.at, r.have = s, r.now(), true
}

// StartMigration starts the inner job and wraps it; a job that can be
// throttled directly stays throttleable.
func (r *recordingMigrator) StartMigration(ctx context.Context, name string, p hypervisor.MigrationParams) (hypervisor.MigrationJob, error) {
	job, err := r.inner.StartMigration(ctx, name, p)
	if err != nil {
		return nil, err
	}
	rj := &recordingJob{MigrationJob: job, rec: r}
	if thr, ok := job.(hypervisor.Throttler); ok {
		return &recordingThrottleJob{recordingJob: rj, thr: thr}, nil
	}
	return rj, nil
}

// migrator is r as the engine sees it: a hypervisor that reports its
// migration capabilities up front still does through r, so the engine
// plans with them (libvirt: no direct throttle, so QEMU's auto-converge is
// enabled at the start when the configuration allows throttling).
func (r *recordingMigrator) migrator() hypervisor.Migrator {
	if cr, ok := r.inner.(hypervisor.MigrationCapabilityReporter); ok {
		return &recordingCapMigrator{recordingMigrator: r, caps: cr}
	}
	return r
}

type recordingCapMigrator struct {
	*recordingMigrator
	caps hypervisor.MigrationCapabilityReporter
}

func (r *recordingCapMigrator) MigrationCapabilities(ctx context.Context) (hypervisor.MigrationCapabilities, error) {
	return r.caps.MigrationCapabilities(ctx)
}

type recordingJob struct {
	hypervisor.MigrationJob
	rec *recordingMigrator
}

func (j *recordingJob) Stats(ctx context.Context) (hypervisor.JobStats, error) {
	s, err := j.MigrationJob.Stats(ctx)
	if err == nil {
		j.rec.record(s)
	}
	return s, err
}

func (j *recordingJob) Result(ctx context.Context) (hypervisor.MigrationResult, error) {
	res, err := j.MigrationJob.Result(ctx)
	if res.Stats.Type != "" {
		j.rec.record(res.Stats)
	}
	return res, err
}

type recordingThrottleJob struct {
	*recordingJob
	thr hypervisor.Throttler
}

func (j *recordingThrottleJob) SetThrottle(ctx context.Context, percent int) error {
	return j.thr.SetThrottle(ctx, percent)
}
