package migration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On libvirt only QEMU's auto-converge throttles, its first step is set at
// the start, and QEMU corrects a step that is too short only two bitmap
// syncs later; it climbs to 99 % on its own anyway. So the first step is
// sized from the pre-start sample up to QEMU's 99 %, not cut at the
// policy's MaxThrottle (90 %): on the real TCG guest (sample 36 MiB/s,
// 8 MiB/s cap) 90 % left every pass as long as the one before and 99 %
// converged.
func TestPlanSizesAutoConvergeUpToQEMUsCeiling(t *testing.T) {
	const mib = 1 << 20
	planning := func(rate float64) Progress {
		return Progress{Phase: PhasePlanning, Memory: 256 * mib, AllowAutoConverge: true,
			DirtyRateBefore: some(rate), BandwidthHint: some(8.0 * mib), DowntimeLimit: 300 * time.Millisecond}
	}
	tests := []struct {
		name     string
		rate     float64
		maxThr   int
		min, max int
	}{
		{"hog: over MaxThrottle", 36 * mib, 0, 91, 99},
		{"hog: a lower MaxThrottle does not cut it", 36 * mib, 50, 91, 99},
		{"a far hotter guest: QEMU's ceiling", 640 * mib, 0, 99, 99},
		{"a moderate guest: sized under it", 12 * mib, 0, 21, 90},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := NewPolicy(PolicyOptions{MaxThrottle: tc.maxThr}).Decide(planning(tc.rate))
			require.Equal(t, ActionStart, a.Kind, a.Reason)
			assert.True(t, a.AutoConverge)
			assert.GreaterOrEqual(t, a.AutoConvergeInitial, tc.min, a.Reason)
			assert.LessOrEqual(t, a.AutoConvergeInitial, tc.max, a.Reason)
		})
	}
}
