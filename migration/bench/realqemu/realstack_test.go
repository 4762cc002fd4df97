//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package realqemu_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor/libvirt"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
	"github.com/virtkit/virtkit/migration/bench"
	"github.com/virtkit/virtkit/migration/bench/realqemu"
)

// TestRealThrottleNeeded runs the built-in throttle-needed profile on the
// real tiny guest with virtkit: a guest that out-dirties its 8 MiB/s cap
// until QEMU's auto-converge throttles it. virtkit must finish it within
// the benchmark's 100 s cap, by pre-copy under a throttle, with the pause
// within the profile's limit. With a dirtier that made up the slices its
// throttled vCPU missed (the guest before this test), every policy was
// capped on this profile.
func TestRealThrottleNeeded(t *testing.T) {
	g := libvirttest.RequireStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	src, err := libvirt.New(ctx, libvirt.Options{URI: libvirttest.SourceURI})
	require.NoError(t, err)
	defer func() { _ = src.Close() }()
	dst, err := libvirt.New(ctx, libvirt.Options{URI: libvirttest.PeerURI})
	require.NoError(t, err)
	defer func() { _ = dst.Close() }()

	profiles, err := realqemu.BuiltinProfiles()
	require.NoError(t, err)
	var p bench.Profile
	for _, q := range profiles {
		if q.Name == "throttle-needed" {
			p = q
		}
	}
	require.Equal(t, "throttle-needed", p.Name)
	rows, err := realqemu.Run(ctx, []bench.Profile{p}, []string{"virtkit"}, realqemu.Options{
		Source: src, Target: dst, TargetURI: libvirttest.PeerURI, MigrateURI: libvirttest.MigrateURI(t),
		Kernel: g.Kernel, Initrd: g.Initramfs, MaxTime: 100 * time.Second,
	})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	r := rows[0]
	t.Logf("%s in %.1f s, %d iterations, %.0f MiB sent, throttle up to %d%% (%.1f vCPU-s): %s",
		r.Outcome, r.TotalSeconds, r.Iterations, float64(r.BytesSent)/(1<<20), r.MaxThrottlePercent, r.ThrottleCPUSeconds, r.Reason)
	require.Equal(t, "Succeeded", r.Outcome, r.Reason)
	assert.Positive(t, r.MaxThrottlePercent, "the guest needed QEMU's throttle")
	require.NotNil(t, r.DowntimeMs)
	assert.LessOrEqual(t, *r.DowntimeMs, float64(p.Downtime()/time.Millisecond), "pause within the limit")
}
