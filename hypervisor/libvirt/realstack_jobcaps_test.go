//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package libvirt_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
)

// TestRealJobDirtyRateAndThrottle migrates a guest that dirties up to 40
// MiB/s over 40 MiB with auto-converge, the first pass at 32 MiB/s, then
// at 6 MiB/s so that pre-copy cannot converge (under TCG with dirty
// tracking the dirtier manages about 5 MiB/s of distinct pages): during
// the first pass the job's dirty rate (libvirt's placeholder 0) is
// reported unmeasured, after QEMU's first sync it is measured; SetThrottle
// steers QEMU's throttle and the job stats read it back.
func TestRealJobDirtyRateAndThrottle(t *testing.T) {
	rs := newRealStack(t)
	name := "vkt-real-throttle"
	caps := rs.bootDirtying(t, name, 40, 40)
	assert.False(t, caps.DirectThrottle)
	assert.False(t, caps.JobDirtyRateBeforeSync)
	assert.True(t, caps.StopCopyUncapped)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	job, err := rs.src.StartMigration(ctx, name, hypervisor.MigrationParams{
		DestinationURI: libvirttest.PeerURI, MigrateURI: libvirttest.MigrateURI(t),
		Bandwidth: 32 << 20, AutoConverge: true, AutoConvergeInitial: 5, AutoConvergeIncrement: 5,
	})
	require.NoError(t, err)
	defer func() { _ = job.Abort(context.Background()) }()
	thr, ok := job.(hypervisor.Throttler)
	require.True(t, ok, "a job started with auto-converge can be throttled")

	var firstPass, measured int
	var rate uint64
	require.Eventually(t, func() bool {
		st, err := job.Stats(ctx)
		if err != nil || st.Type != hypervisor.JobUnbounded {
			return false
		}
		it, _ := st.MemoryIteration.Get()
		if it < 2 {
			firstPass++
			assert.False(t, st.MemoryDirtyRate.Valid, "pass %d: dirty rate %v before QEMU measured one", it, st.MemoryDirtyRate)
			return false
		}
		if r, ok := st.MemoryDirtyRate.Get(); ok && r > 0 {
			measured++
			rate = r
			return true
		}
		return false
	}, time.Minute, 250*time.Millisecond, "the job measures the dirty rate after the first pass")
	t.Logf("%d polls in the first pass reported no dirty rate; then %.1f MiB/s", firstPass, float64(rate)/(1<<20))
	assert.Positive(t, firstPass, "the first pass was observed")

	require.NoError(t, job.SetMaxSpeed(ctx, 6<<20))
	require.NoError(t, thr.SetThrottle(ctx, 60))
	t0 := time.Now()
	var last hypervisor.Measured[uint64]
	require.Eventually(t, func() bool {
		st, err := job.Stats(ctx)
		if err != nil {
			return false
		}
		if st.MemoryIteration != last {
			last = st.MemoryIteration
			t.Logf("%5.1fs pass %v remaining %v MiB, dirty %v B/s, throttle %v", time.Since(t0).Seconds(),
				st.MemoryIteration.Value, st.MemoryRemaining.Value>>20, st.MemoryDirtyRate, st.AutoConvergeThrottle)
		}
		return st.AutoConvergeThrottle.Or(0) == 60
	}, 60*time.Second, 250*time.Millisecond, "QEMU applies the throttle at its next trigger and the job reads it back")
	t.Logf("throttle 60%% applied %v after SetThrottle", time.Since(t0).Round(100*time.Millisecond))
	require.ErrorIs(t, thr.SetThrottle(ctx, 100), hypervisor.ErrInvalidArgument)

	require.NoError(t, job.Abort(ctx))
	_, err = job.Result(ctx)
	require.ErrorIs(t, err, hypervisor.ErrMigrationAborted)
	info, err := rs.src.Info(ctx, name)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State)
	require.ErrorIs(t, thr.SetThrottle(ctx, 10), hypervisor.ErrNoJob, "no job, nothing to throttle")
}

// QEMU lifts a job's bandwidth cap when it stops the guest
// (MigrationCapabilities.StopCopyUncapped), which the engine relies on to
// give QEMU the configured downtime limit under a cap. A guest whose
// dirtier keeps 24 MiB of random pages dirty, capped at 8 MiB/s with a
// 4 s limit (QEMU lets up to 32 MiB into the switchover): the bytes sent
// after the last poll before the switchover would take seconds at the cap,
// and the real pause is a small part of that.
func TestRealStopCopyIsNotCapped(t *testing.T) {
	rs := newRealStack(t)
	name := "vkt-real-stopcopy"
	caps := rs.bootDirtying(t, name, 40, 24)
	require.True(t, caps.StopCopyUncapped)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const capBps = 8 << 20
	job, err := rs.src.StartMigration(ctx, name, hypervisor.MigrationParams{
		DestinationURI: libvirttest.PeerURI, MigrateURI: libvirttest.MigrateURI(t),
		Bandwidth: capBps, DowntimeLimit: 4 * time.Second, Persist: true, UndefineSource: true,
	})
	require.NoError(t, err)
	defer func() { _ = job.Abort(context.Background()) }()

	var lastSent uint64
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
poll:
	for {
		select {
		case <-ctx.Done():
			t.Fatal("the migration did not end within 2 minutes")
		case <-tick.C:
		}
		st, err := job.Stats(ctx)
		if err != nil || st.Type != hypervisor.JobUnbounded {
			break poll
		}
		// Counted only while the guest still runs (pre-copy).
		if info, err := rs.src.Info(ctx, name); err == nil && info.State == hypervisor.StateRunning {
			lastSent = st.DataProcessed.Or(lastSent)
		}
	}
	res, err := job.Result(ctx)
	require.NoError(t, err)
	require.True(t, res.Succeeded, res.Reason)
	down, ok := res.Stats.Downtime.Get()
	require.True(t, ok, "libvirt reports the downtime")
	after := res.Stats.DataProcessed.Or(0) - lastSent
	// At most one poll's worth of pre-copy at the cap (under 1 MiB) went
	// between the last poll and the switchover; the rest moved while the
	// guest was stopped.
	atCap := time.Duration(float64(after) / capBps * float64(time.Second))
	t.Logf("%.1f MiB sent after the last poll before the switchover (%v at the cap); pause %v",
		float64(after)/(1<<20), atCap.Round(time.Millisecond), down)
	require.Greater(t, after, uint64(4<<20), "the switchover must move enough to tell")
	assert.Less(t, down, atCap/3, "the stop-and-copy phase ran at the cap")
}

// bootDirtying boots a guest whose dirtier writes mibs MiB/s over mib MiB
// and returns the migration capabilities the source reports.
func (rs realStack) bootDirtying(t *testing.T, name string, mibs, mib int) hypervisor.MigrationCapabilities {
	t.Helper()
	rs.boot(t, name, libvirttest.GuestOptions{DirtyMiBPerSec: mibs, DirtyMiB: mib})
	caps, err := rs.src.MigrationCapabilities(context.Background())
	require.NoError(t, err)
	return caps
}
