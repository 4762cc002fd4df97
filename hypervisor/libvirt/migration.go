//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

const (
	// jobPoll is how often StartMigration looks for the job to appear.
	jobPoll = 20 * time.Millisecond
	// finalStatsTimeout bounds collecting a finished job's counters.
	finalStatsTimeout = 15 * time.Second
	// settleWait is how long a refused job call waits to learn whether the
	// job just ended.
	settleWait = time.Second
	// defaultPageSize converts QEMU's dirty pages/s when libvirt omits the
	// page size.
	defaultPageSize = 4096
)

// migrationArgs turns MigrationParams into libvirt's typed parameters and
// flags. Migration is always live and peer-to-peer: the source libvirtd
// connects to DestinationURI itself (the only mode virDomainMigrateToURI3
// has for QEMU). ParallelConnections is ignored when PostCopy is set.
func migrationArgs(p hypervisor.MigrationParams) (*lv.DomainMigrateParameters, lv.DomainMigrateFlags, error) {
	if p.DestinationURI == "" {
		return nil, 0, fmt.Errorf("DestinationURI: required: %w", hypervisor.ErrInvalidArgument)
	}
	if p.AutoConvergeInitial < 0 || p.AutoConvergeInitial > 100 {
		return nil, 0, fmt.Errorf("AutoConvergeInitial: %d not in [0, 100]: %w", p.AutoConvergeInitial, hypervisor.ErrInvalidArgument)
	}
	if p.AutoConvergeIncrement < 0 || p.AutoConvergeIncrement > 100 {
		return nil, 0, fmt.Errorf("AutoConvergeIncrement: %d not in [0, 100]: %w", p.AutoConvergeIncrement, hypervisor.ErrInvalidArgument)
	}
	if p.ParallelConnections < 0 {
		return nil, 0, fmt.Errorf("ParallelConnections: %d is negative: %w", p.ParallelConnections, hypervisor.ErrInvalidArgument)
	}
	if p.DowntimeLimit < 0 {
		return nil, 0, fmt.Errorf("DowntimeLimit: %v is negative: %w", p.DowntimeLimit, hypervisor.ErrInvalidArgument)
	}
	if !p.AutoConverge && (p.AutoConvergeInitial != 0 || p.AutoConvergeIncrement != 0) {
		return nil, 0, fmt.Errorf("AutoConvergeInitial/AutoConvergeIncrement: set without AutoConverge: %w", hypervisor.ErrInvalidArgument)
	}
	params := &lv.DomainMigrateParameters{}
	flags := lv.MIGRATE_LIVE | lv.MIGRATE_PEER2PEER
	if p.MigrateURI != "" {
		params.URISet, params.URI = true, p.MigrateURI
	}
	if p.DestinationXML != "" {
		params.DestXMLSet, params.DestXML = true, p.DestinationXML
	}
	if p.Bandwidth > 0 {
		params.BandwidthSet, params.Bandwidth = true, bytesToMiB(p.Bandwidth)
	}
	if p.AutoConverge {
		flags |= lv.MIGRATE_AUTO_CONVERGE
		if p.AutoConvergeInitial > 0 {
			params.AutoConvergeInitialSet, params.AutoConvergeInitial = true, p.AutoConvergeInitial
		}
		if p.AutoConvergeIncrement > 0 {
			params.AutoConvergeIncrementSet, params.AutoConvergeIncrement = true, p.AutoConvergeIncrement
		}
	}
	if p.PostCopy {
		flags |= lv.MIGRATE_POSTCOPY
	}
	// Post-copy takes precedence over multifd: QEMU 7.2 accepts both, but
	// the destination QEMU aborts (yank_unregister_instance assertion) when
	// such a job switches to post-copy, and the guest is lost.
	if p.ParallelConnections > 1 && !p.PostCopy {
		flags |= lv.MIGRATE_PARALLEL
		params.ParallelConnectionsSet, params.ParallelConnections = true, p.ParallelConnections
	}
	if p.TLS {
		// QEMU's migrate TLS with the hosts' migrate_tls_x509_cert_dir
		// certificates; libvirt fails the start when they are missing.
		flags |= lv.MIGRATE_TLS
	}
	if p.Persist {
		flags |= lv.MIGRATE_PERSIST_DEST
	}
	if p.UndefineSource {
		flags |= lv.MIGRATE_UNDEFINE_SOURCE
	}
	if p.Unsafe {
		flags |= lv.MIGRATE_UNSAFE
	}
	if len(p.CopyDisks) > 0 {
		for i, d := range p.CopyDisks {
			if d == "" {
				return nil, 0, fmt.Errorf("CopyDisks[%d]: empty target device: %w", i, hypervisor.ErrInvalidArgument)
			}
		}
		// A full copy (the destination storage is new, it holds none of
		// the data) of only the listed disks, over NBD to the target's
		// libvirtd; zero blocks are detected and not sent.
		flags |= lv.MIGRATE_NON_SHARED_DISK
		params.MigrateDisksSet, params.MigrateDisks = true, append([]string(nil), p.CopyDisks...)
		params.MigrateDisksDetectZeroesSet = true
		params.MigrateDisksDetectZeroesList = append([]string(nil), p.CopyDisks...)
	}
	return params, flags, nil
}

// bytesToMiB rounds a rate in bytes/s up to libvirt's MiB/s (0 stays 0,
// unlimited).
func bytesToMiB(b uint64) uint64 { return (b + (1 << 20) - 1) >> 20 }

// StartMigration starts a live migration of name to params.DestinationURI
// and returns once libvirt reports the job (or the job already ended).
// virDomainMigrateToURI3 blocks for the whole migration; it runs in a
// goroutine owned by the returned job. When ctx
// ends before the job shows up, the job is aborted and ctx.Err() returned.
//
// params.Bandwidth caps pre-copy and post-copy alike: the bindings send the
// one value as both VIR_MIGRATE_PARAM_BANDWIDTH and _BANDWIDTH_POSTCOPY.
// After StartPostCopy, SetMaxSpeed changes the post-copy cap.
func (h *Hypervisor) StartMigration(ctx context.Context, name string, p hypervisor.MigrationParams) (hypervisor.MigrationJob, error) {
	params, flags, err := migrationArgs(p)
	if err != nil {
		return nil, hypervisor.WrapDomain("migrate", name, err)
	}
	st, _, err := h.state(ctx, name)
	if err != nil {
		return nil, wrap("migrate", name, errors.Unwrap(err))
	}
	if !st.IsActive() {
		return nil, hypervisor.WrapDomain("migrate", name, fmt.Errorf("domain is %s: %w", st, hypervisor.ErrInvalidState))
	}
	j := &migrationJob{h: h, name: name, params: p, started: time.Now(), done: make(chan struct{})}
	go j.run(params, flags)

	tick := time.NewTicker(jobPoll)
	defer tick.Stop()
	for {
		select {
		case <-j.done:
			j.mu.Lock()
			seen := j.seen
			j.mu.Unlock()
			if j.err != nil && !seen && !j.result.Aborted {
				// Failed before any job showed up (not running, refused
				// by the destination, unsupported): a start error.
				return nil, j.startErr
			}
			return j.public(), nil
		case <-ctx.Done():
			go j.abortUntilEnded()
			return nil, hypervisor.WrapDomain("migrate", name, ctx.Err())
		case <-tick.C:
		}
		js, err := j.poll(ctx)
		if err == nil && js.Type != hypervisor.JobNone {
			j.mu.Lock()
			j.seen = true
			j.mu.Unlock()
			if p.DowntimeLimit > 0 {
				if err := j.SetMaxDowntime(ctx, p.DowntimeLimit); err != nil && !errors.Is(err, hypervisor.ErrNoJob) {
					_ = j.Abort(context.Background())
					return nil, err
				}
			}
			return j.public(), nil
		}
	}
}

// public is the job as StartMigration returns it: a job started with
// auto-converge can be throttled (steered, see throttleJob).
func (j *migrationJob) public() hypervisor.MigrationJob {
	if j.params.AutoConverge {
		return &throttleJob{j}
	}
	return j
}

// abortUntilEnded aborts a job nobody holds any more (its start was
// cancelled). libvirt refuses the abort until the job exists, so it retries
// until the job has ended, for at most finalStatsTimeout.
func (j *migrationJob) abortUntilEnded() {
	ctx, cancel := context.WithTimeout(context.Background(), finalStatsTimeout)
	defer cancel()
	for {
		err := j.Abort(ctx)
		if err != nil {
			j.h.log.Debug("libvirt abort of a cancelled migration start", "domain", j.name, "err", err)
		}
		select {
		case <-j.done:
			return
		case <-ctx.Done():
			return
		case <-time.After(10 * jobPoll):
		}
	}
}

// migrationJob is one outgoing migration seen from the source.
type migrationJob struct {
	h       *Hypervisor
	name    string
	params  hypervisor.MigrationParams
	started time.Time
	done    chan struct{}

	postCopy       atomic.Bool
	abortRequested atomic.Bool

	mu   sync.Mutex
	seen bool // libvirt reported the job at least once
	last hypervisor.JobStats

	// Set before done is closed.
	result   hypervisor.MigrationResult
	err      error
	startErr error // the translated libvirt error, for failures before the job existed
}

var _ hypervisor.MigrationJob = (*migrationJob)(nil)

// run performs the migration and records the outcome.
func (j *migrationJob) run(params *lv.DomainMigrateParameters, flags lv.DomainMigrateFlags) {
	defer close(j.done)
	migErr := j.migrate(params, flags)
	ended := time.Now()
	stats := j.finalStats(migErr == nil)
	res := hypervisor.MigrationResult{
		Succeeded: migErr == nil,
		Mode:      hypervisor.ModePreCopy,
		Started:   j.started,
		Ended:     ended,
		Stats:     stats,
	}
	if j.postCopy.Load() {
		res.Mode = hypervisor.ModePostCopy
	}
	if migErr != nil {
		translated := translate(migErr)
		if j.params.TLS && !j.abortRequested.Load() && !errors.Is(translated, hypervisor.ErrMigrationAborted) && mayBeTLS(migErr) {
			// The destination only sees a broken stream; the TLS reason
			// (untrusted or mismatched certificate, missing files) is in
			// the source QEMU's log.
			translated = fmt.Errorf("TLS migration failed (QEMU migrate TLS needs certificates in migrate_tls_x509_cert_dir on both hosts, valid for the migrate URI's host; the source domain's QEMU log has the TLS error): %w", translated)
		}
		j.startErr = hypervisor.WrapDomain("migrate", j.name, translated)
		res.Reason = translated.Error()
		if errors.Is(translated, hypervisor.ErrMigrationAborted) || j.abortRequested.Load() {
			res.Aborted = true
			j.err = hypervisor.WrapDomain("migrate", j.name, fmt.Errorf("%w: %w", hypervisor.ErrMigrationAborted, translated))
		} else {
			j.err = hypervisor.WrapDomain("migrate", j.name, fmt.Errorf("%w: %w", hypervisor.ErrMigrationFailed, translated))
		}
		switch {
		case res.Aborted:
			res.Stats.Type = hypervisor.JobCancelled
		default:
			res.Stats.Type = hypervisor.JobFailed
		}
	} else {
		res.Stats.Type = hypervisor.JobCompleted
	}
	j.result = res
}

// migrate runs virDomainMigrateToURI3, which blocks for the whole
// migration, on a pool connection that job control calls do not share.
func (j *migrationJob) migrate(params *lv.DomainMigrateParameters, flags lv.DomainMigrateFlags) error {
	_, err := call(context.Background(), j.h, func(c *lv.Connect) (struct{}, error) {
		d, err := c.LookupDomainByName(j.name)
		if err != nil {
			return struct{}{}, err
		}
		defer freeDomain(j.h.log, d)
		return struct{}{}, d.MigrateToURI3(j.params.DestinationURI, params, flags)
	})
	return err
}

// finalStats collects the finished job's counters: from the source, else
// (a transient source is gone) from the destination's incoming job, else
// the last counters polled while it ran.
func (j *migrationJob) finalStats(succeeded bool) hypervisor.JobStats {
	ctx, cancel := context.WithTimeout(context.Background(), finalStatsTimeout)
	defer cancel()
	if st, err := j.completedStats(ctx, j.h); err == nil {
		return st
	}
	if succeeded {
		dest, err := New(ctx, Options{URI: j.params.DestinationURI, Logger: j.h.log})
		if err == nil {
			defer func() { _ = dest.Close() }()
			if st, err := j.completedStats(ctx, dest); err == nil {
				return st
			}
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.last
}

func (j *migrationJob) completedStats(ctx context.Context, h *Hypervisor) (hypervisor.JobStats, error) {
	return withDomain(ctx, h, "job stats", j.name, func(_ *lv.Connect, d *lv.Domain) (hypervisor.JobStats, error) {
		info, err := d.GetJobStats(lv.DOMAIN_JOB_STATS_COMPLETED)
		if err != nil {
			return hypervisor.JobStats{}, err
		}
		if info.Type == lv.DOMAIN_JOB_NONE {
			return hypervisor.JobStats{}, fmt.Errorf("no completed job: %w", hypervisor.ErrNoJob)
		}
		return j.convert(info), nil
	})
}

// poll reads the running job's counters from the source and remembers them.
func (j *migrationJob) poll(ctx context.Context) (hypervisor.JobStats, error) {
	st, err := withDomain(ctx, j.h, "job stats", j.name, func(_ *lv.Connect, d *lv.Domain) (hypervisor.JobStats, error) {
		info, err := d.GetJobStats(0)
		if err != nil {
			return hypervisor.JobStats{}, err
		}
		return j.convert(info), nil
	})
	if err == nil && st.Type == hypervisor.JobUnbounded {
		j.mu.Lock()
		j.last = st
		j.mu.Unlock()
	}
	return st, err
}

func (j *migrationJob) convert(info *lv.DomainJobInfo) hypervisor.JobStats {
	return convertJobStats(info, j.postCopy.Load())
}

func jobType(t lv.DomainJobType) hypervisor.JobType {
	switch t {
	case lv.DOMAIN_JOB_BOUNDED, lv.DOMAIN_JOB_UNBOUNDED:
		return hypervisor.JobUnbounded
	case lv.DOMAIN_JOB_COMPLETED:
		return hypervisor.JobCompleted
	case lv.DOMAIN_JOB_FAILED:
		return hypervisor.JobFailed
	case lv.DOMAIN_JOB_CANCELLED:
		return hypervisor.JobCancelled
	}
	return hypervisor.JobNone
}

func (j *migrationJob) ended() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

func (j *migrationJob) noJob(op string) error {
	return hypervisor.WrapDomain(op, j.name, fmt.Errorf("migration job has ended: %w", hypervisor.ErrNoJob))
}

// Stats returns the job's counters; after the end, the final ones.
func (j *migrationJob) Stats(ctx context.Context) (hypervisor.JobStats, error) {
	if j.ended() {
		return j.result.Stats, nil
	}
	st, err := j.poll(ctx)
	if err == nil && st.Type == hypervisor.JobUnbounded {
		return st, nil
	}
	// Between libvirt's end of the job and our goroutine's: wait for the
	// final counters rather than report "no job".
	select {
	case <-j.done:
		return j.result.Stats, nil
	case <-ctx.Done():
		return hypervisor.JobStats{}, hypervisor.WrapDomain("job stats", j.name, ctx.Err())
	case <-time.After(2 * time.Second):
	}
	if err != nil {
		return hypervisor.JobStats{}, err
	}
	return st, nil
}

// Abort cancels the job (virDomainAbortJob); the guest keeps running on
// the source. An ended job gives ErrNoJob, one in post-copy ErrInvalidState.
func (j *migrationJob) Abort(ctx context.Context) error {
	if j.ended() {
		return j.noJob("abort migration")
	}
	if j.postCopy.Load() {
		return hypervisor.WrapDomain("abort migration", j.name,
			fmt.Errorf("migration is in post-copy mode; aborting would lose the guest: %w", hypervisor.ErrInvalidState))
	}
	j.abortRequested.Store(true)
	err := doDomain(ctx, j.h, "abort migration", j.name, func(d *lv.Domain) error { return d.AbortJob() })
	return j.settle(ctx, "abort migration", err)
}

// settle turns the error of a job call that raced with the end of the job
// ("domain is not running", "no job") into ErrNoJob: when libvirt refused,
// wait briefly for the job goroutine to see the end.
func (j *migrationJob) settle(ctx context.Context, op string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	select {
	case <-j.done:
		return j.noJob(op)
	case <-ctx.Done():
		return err
	case <-time.After(settleWait):
		return err
	}
}

// SetMaxDowntime changes the switchover downtime limit (milliseconds in
// libvirt, at least 1).
func (j *migrationJob) SetMaxDowntime(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return hypervisor.WrapDomain("set max downtime", j.name, fmt.Errorf("downtime %v must be positive: %w", d, hypervisor.ErrInvalidArgument))
	}
	if j.ended() {
		return j.noJob("set max downtime")
	}
	ms := uint64(max(1, (d+time.Millisecond-1)/time.Millisecond))
	err := doDomain(ctx, j.h, "set max downtime", j.name, func(dom *lv.Domain) error {
		return dom.MigrateSetMaxDowntime(ms, 0)
	})
	return j.settle(ctx, "set max downtime", err)
}

// SetMaxSpeed caps the bandwidth, rounded up to whole MiB/s (0 =
// unlimited). After StartPostCopy it sets the post-copy bandwidth, which
// is what QEMU then uses.
func (j *migrationJob) SetMaxSpeed(ctx context.Context, bytesPerSecond uint64) error {
	if j.ended() {
		return j.noJob("set max speed")
	}
	mib := bytesToMiB(bytesPerSecond)
	err := doDomain(ctx, j.h, "set max speed", j.name, func(d *lv.Domain) error {
		if j.postCopy.Load() {
			return d.MigrateSetMaxSpeed(mib, lv.MIGRATE_MAX_SPEED_POSTCOPY)
		}
		return d.MigrateSetMaxSpeed(mib, 0)
	})
	return j.settle(ctx, "set max speed", err)
}

// StartPostCopy switches the job to post-copy (virDomainMigrateStartPostCopy).
func (j *migrationJob) StartPostCopy(ctx context.Context) error {
	if !j.params.PostCopy {
		return hypervisor.WrapDomain("start post-copy", j.name,
			fmt.Errorf("job was started without MigrationParams.PostCopy: %w", hypervisor.ErrInvalidState))
	}
	if j.ended() {
		return j.noJob("start post-copy")
	}
	err := doDomain(ctx, j.h, "start post-copy", j.name, func(d *lv.Domain) error { return d.MigrateStartPostCopy(0) })
	if err == nil {
		j.postCopy.Store(true)
	}
	return j.settle(ctx, "start post-copy", err)
}

// Done is closed when the job has ended.
func (j *migrationJob) Done() <-chan struct{} { return j.done }

// Result waits for the end of the job and reports how it ended.
func (j *migrationJob) Result(ctx context.Context) (hypervisor.MigrationResult, error) {
	select {
	case <-j.done:
		return j.result, j.err
	case <-ctx.Done():
		return hypervisor.MigrationResult{}, hypervisor.WrapDomain("migrate", j.name, ctx.Err())
	}
}
