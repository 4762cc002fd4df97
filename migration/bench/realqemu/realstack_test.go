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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	g, src, dst := connect(ctx, t)

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

// TestRealSamplePasses samples a real job's passes (bench migrate
// --sample-passes): the convergent guest of the simulator's validation
// (4 MiB/s over 64 MiB at a 32 MiB/s cap) shows its first pass with the
// whole memory remaining and at least one later iteration, each seen
// with more data sent than the one before.
func TestRealSamplePasses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g, src, dst := connect(ctx, t)

	ps, err := bench.DecodeProfiles([]byte(`[{name: convergent, memory: 256Mi, bandwidth: 32Mi, dirtyRate: 4Mi, workingSet: 64Mi}]`))
	require.NoError(t, err)
	p := ps[0]
	rows, err := realqemu.Run(ctx, []bench.Profile{p}, []string{"kubevirt"}, realqemu.Options{
		Source: src, Target: dst, TargetURI: libvirttest.PeerURI, MigrateURI: libvirttest.MigrateURI(t),
		Kernel: g.Kernel, Initrd: g.Initramfs, MaxTime: 60 * time.Second, SamplePasses: 20 * time.Millisecond,
	})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	r := rows[0]
	require.Equal(t, "Succeeded", r.Outcome, r.Reason)
	t.Logf("passes: %+v; guest rebooted: %v, guest clock lost %.1f s (QEMU before 9.0 under TCG loses a dirtying guest's writes)", r.Passes, r.GuestRebooted, r.GuestClockLostSeconds)
	var first *bench.Pass
	later := 0
	for i := range r.Passes {
		ps := r.Passes[i]
		if i > 0 {
			assert.Greater(t, ps.Iteration, r.Passes[i-1].Iteration)
			assert.GreaterOrEqual(t, ps.SentBytes, r.Passes[i-1].SentBytes)
		}
		switch {
		case ps.Iteration == 1:
			first = &r.Passes[i]
		case ps.Iteration > 1:
			later++
		}
	}
	require.NotNil(t, first, "the first pass was seen")
	assert.Greater(t, first.RemainingBytes, uint64(200<<20), "QEMU counts the zero pages as remaining in the first pass")
	assert.Positive(t, later, "a later iteration was seen")
	// The tiny guest's memory is over a third zero pages; QEMU reports
	// them (memory_constant) once its first pass has reached them, and
	// they are not in the data sent.
	last := r.Passes[len(r.Passes)-1]
	assert.Greater(t, last.ConstantBytes, uint64(64<<20), "the zero pages the passes found")
	assert.LessOrEqual(t, last.ConstantBytes, uint64(256<<20), "bytes, at most the guest's memory")
	assert.LessOrEqual(t, r.Passes[len(r.Passes)-1].SentBytes, r.BytesSent)
}

// connect skips without the real stack, else connects to both daemons
// (closed at the test's end).
func connect(ctx context.Context, t *testing.T) (libvirttest.Guest, *libvirt.Hypervisor, *libvirt.Hypervisor) {
	t.Helper()
	g := libvirttest.RequireStack(t)
	src, err := libvirt.New(ctx, libvirt.Options{URI: libvirttest.SourceURI})
	require.NoError(t, err)
	t.Cleanup(func() { _ = src.Close() })
	dst, err := libvirt.New(ctx, libvirt.Options{URI: libvirttest.PeerURI})
	require.NoError(t, err)
	t.Cleanup(func() { _ = dst.Close() })
	return g, src, dst
}
