//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBackgroundSyncPeriod(t *testing.T) {
	for _, tc := range []struct {
		version uint32
		want    time.Duration
	}{
		{7_002_022, 0},               // Debian 12's QEMU 7.2
		{9_001_003, 0},               // before the periodic sync
		{9_002_000, time.Second * 5}, // QEMU 9.2.0 added it
		{10_000_002, time.Second * 5},
	} {
		assert.Equal(t, tc.want, backgroundSyncPeriod(tc.version), "version %d", tc.version)
	}
}

// The test driver reports its own version (not QEMU's); the capabilities
// come back without error either way.
func TestMigrationCapabilitiesTestDriver(t *testing.T) {
	ctx := context.Background()
	h, err := New(ctx, Options{URI: "test:///default"})
	require.NoError(t, err)
	defer func() { _ = h.Close() }()
	caps, err := h.MigrationCapabilities(ctx)
	require.NoError(t, err)
	assert.True(t, caps.StopCopyUncapped)
	assert.False(t, caps.DirectThrottle)
	assert.False(t, caps.DirtyRateDuringJob)
}
