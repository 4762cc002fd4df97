package sim

// The migration job's face to the caller: its counters, its controls
// (abort, downtime, speed, post-copy, throttle) and its result.

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// Stats returns the job's counters; after the end, the final ones.
func (j *job) Stats(ctx context.Context) (hypervisor.JobStats, error) {
	var st hypervisor.JobStats
	err := j.src.do(ctx, func(now time.Time) error {
		if j.phase >= phaseFinishing {
			st = j.result.Stats
			return nil
		}
		st = j.statsAt(now)
		return nil
	})
	return st, err
}

func (j *job) statsAt(now time.Time) hypervisor.JobStats {
	total := uint64(j.total)
	st := hypervisor.JobStats{
		Type:                 hypervisor.JobUnbounded,
		Mode:                 j.mode,
		Elapsed:              hypervisor.Some(now.Sub(j.started)),
		DataTotal:            hypervisor.Some(total),
		DataProcessed:        hypervisor.Some(uint64(j.processed)),
		DataRemaining:        hypervisor.Some(uint64(math.Ceil(j.pending))),
		MemoryTotal:          hypervisor.Some(total),
		MemoryProcessed:      hypervisor.Some(uint64(j.processed)),
		MemoryRemaining:      hypervisor.Some(uint64(math.Ceil(j.pending))),
		MemoryDirtyRate:      j.dirtyRate,
		MemoryBps:            hypervisor.Some(uint64(j.bwEstimate)),
		MemoryIteration:      hypervisor.Some(uint64(j.iteration)),
		MemoryConstant:       hypervisor.Some(uint64(j.constant)),
		SetupTime:            hypervisor.Some[time.Duration](0),
		AutoConvergeThrottle: hypervisor.Some(int64(j.throttlePct)),
	}
	if !st.MemoryDirtyRate.Valid && j.src.opts.LibvirtFace {
		// libvirt reports QEMU's dirty-pages-rate, 0 until a sync computed it.
		st.MemoryDirtyRate = hypervisor.Some[uint64](0)
	}
	// QEMU estimates the downtime once it has a dirty rate: what the last
	// sync left, at the measured bandwidth.
	if j.syncMeasured && j.bwEstimate > 0 {
		st.Downtime = hypervisor.Some(time.Duration(j.syncPending / j.bwEstimate * float64(time.Second)))
	}
	j.storageStats(&st)
	if j.mode == hypervisor.ModePostCopy {
		st.PostcopyRequests = hypervisor.Some(uint64(j.postcopyRequests))
		st.Downtime = hypervisor.Some(j.downtime)
	}
	return st
}

// Abort cancels the job; the guest keeps running on the source.
func (j *job) Abort(ctx context.Context) error {
	return j.src.do(ctx, func(now time.Time) error {
		switch {
		case j.phase >= phaseFinishing:
			return hypervisor.WrapDomain("abort job", j.name, hypervisor.ErrNoJob)
		case j.phase >= phasePostCopyBlackout:
			return invalidState("abort job", j.name, "post-copy has started")
		}
		j.finishUnsuccessful(j.src, j.d, now, true, "aborted")
		return nil
	})
}

// SetMaxDowntime changes the downtime limit of the switchover rule.
func (j *job) SetMaxDowntime(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return hypervisor.WrapDomain("set max downtime", j.name, invalid("downtime", "must be positive"))
	}
	return j.control(ctx, "set max downtime", func() error { j.downtimeLimit = d; return nil })
}

// SetMaxSpeed caps the bandwidth (0 = the link's).
func (j *job) SetMaxSpeed(ctx context.Context, bytesPerSecond uint64) error {
	return j.control(ctx, "set max speed", func() error { j.maxSpeed = bytesPerSecond; return nil })
}

// StartPostCopy switches to post-copy at the next step.
func (j *job) StartPostCopy(ctx context.Context) error {
	return j.control(ctx, "start post-copy", func() error {
		if !j.params.PostCopy {
			return invalidState("start post-copy", j.name, "the job was started without PostCopy")
		}
		j.postCopyRequested = true
		return nil
	})
}

// SetThrottle sets the vCPU throttle in percent (0..99) directly.
func (j *job) SetThrottle(ctx context.Context, percent int) error {
	if percent < 0 || percent > maxThrottle {
		return hypervisor.WrapDomain("set throttle", j.name, invalid("percent", fmt.Sprintf("%d is outside 0..%d", percent, maxThrottle)))
	}
	return j.control(ctx, "set throttle", func() error {
		if j.phase != phasePreCopy {
			return invalidState("set throttle", j.name, "the guest is no longer running on the source")
		}
		j.setThrottle(j.d, percent)
		return nil
	})
}

func (j *job) control(ctx context.Context, op string, f func() error) error {
	return j.src.do(ctx, func(now time.Time) error {
		if j.phase >= phaseFinishing {
			return hypervisor.WrapDomain(op, j.name, hypervisor.ErrNoJob)
		}
		return f()
	})
}

// Done is closed when the job has ended.
func (j *job) Done() <-chan struct{} { return j.done }

// Result waits for the end of the job.
func (j *job) Result(ctx context.Context) (hypervisor.MigrationResult, error) {
	select {
	case <-j.done:
	case <-ctx.Done():
		return hypervisor.MigrationResult{}, ctx.Err()
	}
	j.src.mu.Lock()
	defer j.src.mu.Unlock()
	return j.result, j.err
}
