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
	rs.boot(t, name, libvirttest.GuestOptions{DirtyMiBPerSec: 40, DirtyMiB: 24})
	caps, err := rs.src.MigrationCapabilities(context.Background())
	require.NoError(t, err)
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
