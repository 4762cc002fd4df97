//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package realqemu_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/migration/bench"
	"github.com/virtkit/virtkit/migration/bench/realqemu"
)

// TestRealDebianStressHog runs the built-in debian-stress-hog profile on
// the Debian cloud image with virtkit: Debian's stress-ng rewrites 256 MiB
// flat out, far faster than the 32 MiB/s link, with post-copy allowed.
// virtkit must finish it by post-copy within the cap, the pause within the
// limit, and report the page faults the guest took on the target.
func TestRealDebianStressHog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	_, src, dst := connect(ctx, t)
	img := cloudImage(t)
	const sysctl = "/proc/sys/vm/unprivileged_userfaultfd"
	old, err := os.ReadFile(sysctl)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(sysctl, []byte("1"), 0o644))
	t.Cleanup(func() { _ = os.WriteFile(sysctl, old, 0o644) })

	profiles, err := realqemu.BuiltinDebianProfiles()
	require.NoError(t, err)
	var p bench.Profile
	for _, q := range profiles {
		if q.Name == "debian-stress-hog" {
			p = q
		}
	}
	require.Equal(t, "debian-stress-hog", p.Name)
	rows, err := realqemu.Run(ctx, []bench.Profile{p}, []string{"virtkit"}, realqemu.Options{
		Source: src, Target: dst, TargetURI: libvirttest.PeerURI, MigrateURI: libvirttest.MigrateURI(t),
		Guest: realqemu.GuestDebian, CloudImage: img, ScratchDir: filepath.Join(filepath.Dir(img.Disk), "..", "realqemu-test"),
		MaxTime: 100 * time.Second,
	})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	r := rows[0]
	t.Logf("%s %s in %.1f s (memory/bandwidth %.1f s), %d iterations, %.0f MiB sent, post-copy %.1f s with %d page faults, throttle up to %d%%: %s",
		r.Outcome, r.Mode, r.TotalSeconds, r.LowerBoundSeconds, r.Iterations, float64(r.BytesSent)/(1<<20), r.PostCopySeconds, r.PostCopyFaults, r.MaxThrottlePercent, r.Reason)
	require.Equal(t, "Succeeded", r.Outcome, r.Reason)
	assert.Equal(t, "PostCopy", r.Mode)
	assert.Positive(t, r.PostCopyFaults, "stress-ng faulted on pages still on the source")
	require.NotNil(t, r.DowntimeMs)
	assert.LessOrEqual(t, *r.DowntimeMs, float64(p.Downtime()/time.Millisecond), "pause within the limit")
	assert.False(t, r.GuestRebooted)
}

// cloudImage finds the Debian cloud image (VIRTKIT_CLOUD_IMAGE_DIR, else
// build/cloud-image).
func cloudImage(t *testing.T) realqemu.CloudImage {
	t.Helper()
	dir := os.Getenv("VIRTKIT_CLOUD_IMAGE_DIR")
	if dir == "" {
		dir = "../../../build/cloud-image"
	}
	dir, err := filepath.Abs(dir)
	require.NoError(t, err)
	img, err := realqemu.CloudImageIn(dir)
	if err != nil {
		testenv.Unavailable(t, err.Error()+"; run hack/realstack/build-cloud-image.sh")
	}
	return img
}
