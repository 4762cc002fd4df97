package bench

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/migration"
)

// TestHeldOutThrottleInsensitiveRefused holds virtkit, with libvirt's
// capabilities, to refusing the held-out guests that throttling cannot slow
// (auto-converge allowed, post-copy not) soon after the evidence. On
// libvirt the first evidence of how the guest answers a throttle comes
// after the first pass (QEMU syncs the dirty bitmap in the background
// only from the second pass on, and only then can auto-converge step), so
// a first pass's worth of memory is sent before any verdict; the rule is
// FloorAtCeiling, at the first bitmap sync after QEMU's throttle reached
// 99 % (10 s after the first pass: QEMU steps at its second sync).
// The figures are on the simulator's virtual clock: exact, whatever the
// machine's load.
func TestHeldOutThrottleInsensitiveRefused(t *testing.T) {
	data, err := os.ReadFile("testdata/heldout-profiles.yaml")
	require.NoError(t, err)
	profiles, err := DecodeProfiles(data)
	require.NoError(t, err)
	tests := []struct {
		name string
		// decided is when the abort came, from the job's start; sent the
		// most memories sent by then.
		decided time.Duration
		sent    float64
	}{
		{"H13-io-hopeless-large", 25 * time.Second, 1.68},
		{"H14-io-hopeless-seq", 39 * time.Second, 1.36},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Profile
			for _, q := range profiles {
				if q.Name == tt.name {
					p = q
				}
			}
			require.Equal(t, tt.name, p.Name)
			feasible, _ := p.Feasible()
			require.False(t, feasible, "the closed-form model says nothing allowed moves it")
			require.True(t, p.AllowAutoConverge)
			require.False(t, p.AllowPostCopy)

			row, err := RunOne(context.Background(), p, "virtkit", Options{SamplePasses: 100 * time.Millisecond})
			require.NoError(t, err)
			require.Equal(t, "Failed", row.Outcome)
			assert.Equal(t, migration.RuleFloorAtCeiling, row.Rule, row.Reason)
			sent := float64(row.BytesSent) / float64(row.MemoryBytes)
			t.Logf("%s: decided at %.1f s, %.2f memories sent (M/B %.1f s): %s", p.Name, row.DecisionSeconds, sent, row.LowerBoundSeconds, row.Reason)
			assert.LessOrEqual(t, row.DecisionSeconds, tt.decided.Seconds(), "decided by")
			assert.LessOrEqual(t, sent, tt.sent, "memories sent")

			// The evidence: the first pass ends (iteration 2 begins).
			var firstPass float64
			for _, ps := range row.Passes {
				if ps.Iteration == 2 {
					firstPass = ps.Seconds
					break
				}
			}
			require.Positive(t, firstPass, "the first pass ended")
			assert.LessOrEqual(t, row.DecisionSeconds-firstPass, 30.0, "within 30 s of the first evidence after the first pass")
			after := float64(row.BytesSent) - float64(row.MemoryBytes)
			assert.Less(t, after, float64(row.MemoryBytes), "under one memory sent after the first pass")

			// KubeVirt's stall detector, the quickest baseline to give up,
			// decides later and sends more.
			stall, err := RunOne(context.Background(), p, "kubevirt-stall", Options{})
			require.NoError(t, err)
			assert.Equal(t, "Failed", stall.Outcome)
			assert.Less(t, row.DecisionSeconds, stall.DecisionSeconds)
			assert.Less(t, row.BytesSent, stall.BytesSent)
			if testing.Short() || raceDetector {
				return
			}
			// KubeVirt with auto-converge runs to its completion timeout.
			ac, err := RunOne(context.Background(), p, "kubevirt-ac-pc", Options{})
			require.NoError(t, err)
			assert.Equal(t, "Failed", ac.Outcome)
			assert.Greater(t, ac.BytesSent, 10*row.BytesSent)
		})
	}
}
