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
	rs.boot(t, name, libvirttest.GuestOptions{DirtyMiBPerSec: 40, DirtyMiB: 40})
	caps, err := rs.src.MigrationCapabilities(context.Background())
	require.NoError(t, err)
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
