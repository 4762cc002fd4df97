package bench

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scored is a row for policy on profile with the given outcome, total and
// pause, held to a 300 ms limit.
func scored(profile, policy, outcome string, total float64, pauseMs *float64) Row {
	r := Row{Profile: profile, Policy: policy, Outcome: outcome, TotalSeconds: total, DowntimeMs: pauseMs,
		LowerBoundSeconds: 10, DowntimeLimit: 300 * time.Millisecond}
	r.ApplyDowntimeRule()
	return r
}

func pause(ms float64) *float64 { return &ms }

func TestRuleWithinDowntimeLimit(t *testing.T) {
	tests := []struct {
		name      string
		row       Row
		standing  Standing
		within    *bool
		overshoot float64
		cell      string
	}{
		{"a pause under the limit", scored("p", "x", "Succeeded", 10, pause(278)), StandingWithinLimit, ptr(true), 0, "yes"},
		{"a pause at the limit is within it", scored("p", "x", "Succeeded", 10, pause(300)), StandingWithinLimit, ptr(true), 0, "yes"},
		{"QEMU's threshold plus the switchover's fixed cost", scored("p", "kubevirt", "Succeeded", 10, pause(328)), StandingOverLimit, ptr(false), 28, "over 28 ms"},
		{"a success without a reported pause is not shown within", scored("p", "x", "Succeeded", 10, nil), StandingOverLimit, ptr(false), 0, "over, no pause"},
		{"a failure has no verdict", scored("p", "x", "Failed", 10, nil), StandingFailed, nil, 0, "-"},
		{"a success never checked against a limit", Row{Outcome: "Succeeded", DowntimeMs: pause(10)}, StandingOverLimit, nil, 0, "not checked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.standing, tt.row.Standing())
			assert.Equal(t, tt.within, tt.row.WithinDowntimeLimit)
			assert.InDelta(t, tt.overshoot, tt.row.OvershootMs(), 1e-9)
			assert.Equal(t, tt.cell, limitCell(tt.row))
		})
	}
	// The verdict is recomputed, not kept, when the row changes.
	r := scored("p", "x", "Succeeded", 10, pause(100))
	r.DowntimeMs = pause(301)
	r.ApplyDowntimeRule()
	assert.Equal(t, StandingOverLimit, r.Standing())
	assert.Equal(t, 300.0, r.DowntimeLimitMs)
}

func ptr(b bool) *bool { return &b }

func TestCompareUnderTheRule(t *testing.T) {
	feasible := Profile{Name: "feasible", Memory: q("1Gi"), Bandwidth: q("1G"), DirtyRate: q("1M")}
	hopeless := BuiltinProfiles()[6] // P7-hog: nothing allowed converges
	require.Equal(t, "P7-hog", hopeless.Name)
	ok, _ := feasible.Feasible()
	require.True(t, ok)
	ok, _ = hopeless.Feasible()
	require.False(t, ok)

	tests := []struct {
		name    string
		profile Profile
		rows    []Row
		// best and bestAny are the policies expected ("" = none).
		best, bestAny     string
		overLimit         []string
		vsBest, vsBestAny float64
		movable           bool
		virtkitWithin     bool
	}{
		{
			name:    "a faster baseline over the limit is not the best within it",
			profile: feasible,
			rows: []Row{
				scored("feasible", "virtkit", "Succeeded", 13, pause(298)),
				scored("feasible", "kubevirt", "Succeeded", 10, pause(328)),
				scored("feasible", "nova", "Succeeded", 13.5, pause(79)),
			},
			best: "nova", bestAny: "kubevirt", overLimit: []string{"kubevirt"},
			vsBest: 13 / 13.5, vsBestAny: 1.3, movable: true, virtkitWithin: true,
		},
		{
			name:    "a virtkit run over the limit is not a success within it",
			profile: feasible,
			rows: []Row{
				scored("feasible", "virtkit", "Succeeded", 9, pause(329)),
				scored("feasible", "nova", "Succeeded", 13.5, pause(79)),
			},
			best: "nova", bestAny: "nova",
			vsBest: 0, vsBestAny: 9 / 13.5, movable: true, virtkitWithin: false,
		},
		{
			name:    "only baselines over the limit: none within it, and a hopeless profile is then not movable",
			profile: hopeless,
			rows: []Row{
				scored("P7-hog", "virtkit", "Failed", 5, nil),
				scored("P7-hog", "kubevirt", "Succeeded", 50, pause(400)),
				scored("P7-hog", "nova", "Failed", 6400, nil),
			},
			best: "", bestAny: "kubevirt", overLimit: []string{"kubevirt"},
			vsBest: 0, vsBestAny: 0, movable: false, virtkitWithin: false,
		},
		{
			name:    "a baseline within the limit on a hopeless profile makes it movable",
			profile: hopeless,
			rows: []Row{
				scored("P7-hog", "virtkit", "Failed", 5, nil),
				scored("P7-hog", "kubevirt-ac-pc", "Succeeded", 50, pause(120)),
			},
			best: "kubevirt-ac-pc", bestAny: "kubevirt-ac-pc",
			movable: true, virtkitWithin: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := Compare([]Profile{tt.profile}, tt.rows)
			require.Len(t, cs, 1)
			c := cs[0]
			policy := func(r *Row) string {
				if r == nil {
					return ""
				}
				return r.Policy
			}
			assert.Equal(t, tt.best, policy(c.Best), "best within the limit")
			assert.Equal(t, tt.bestAny, policy(c.BestAnyPause), "best whatever the pause")
			var over []string
			for _, r := range c.OverLimit {
				over = append(over, r.Policy)
			}
			assert.Equal(t, tt.overLimit, over)
			assert.InDelta(t, tt.vsBest, c.VsBest(), 1e-9)
			assert.InDelta(t, tt.vsBestAny, c.VsBestAnyPause(), 1e-9)
			assert.Equal(t, tt.movable, c.Movable())

			s := SummarizeComparisons(cs)
			assert.Equal(t, len(tt.overLimit), s.BaselinesOverLimit)
			if tt.virtkitWithin {
				assert.Equal(t, 1, s.VirtkitWithinLimit)
				assert.Zero(t, s.MissedMovable)
				assert.Equal(t, tt.rows[0].Ratio(), s.MedianRatio)
				return
			}
			assert.Zero(t, s.VirtkitWithinLimit)
			if tt.movable {
				assert.Equal(t, 1, s.MissedMovable, "virtkit did not succeed within the limit on a movable profile")
				assert.True(t, math.IsInf(s.MedianRatio, 1), "which counts as +Inf in the median")
			}
			if tt.rows[0].Outcome == "Succeeded" {
				assert.Equal(t, 1, s.VirtkitOverLimit)
				assert.Equal(t, tt.rows[0].Ratio(), s.MedianRatioAnyPause, "without the rule its total counts")
			}
		})
	}
}

func TestSummarizeComparisonsBehind(t *testing.T) {
	p := Profile{Name: "burst", Memory: q("1Gi"), Bandwidth: q("1G"), DirtyRate: q("1M")}
	rows := []Row{
		scored("burst", "virtkit", "Succeeded", 13.36, pause(298)),
		scored("burst", "kubevirt", "Succeeded", 10.33, pause(328)),
		scored("burst", "nova", "Succeeded", 13.45, pause(80)),
	}
	s := SummarizeComparisons(Compare([]Profile{p}, rows))
	assert.Empty(t, s.Behind, "within 1.05× of the best baseline within the limit")
	assert.Equal(t, []string{"burst (1.29×)"}, s.BehindAnyPause, "1.29× behind the best regardless of its pause")
	assert.Equal(t, 1, s.BaselinesOverLimit)
}

func TestWriteComparisonNamesTheRule(t *testing.T) {
	p := Profile{Name: "burst", Memory: q("1Gi"), Bandwidth: q("1G"), DirtyRate: q("1M")}
	rows := []Row{
		scored("burst", "virtkit", "Succeeded", 13.36, pause(298)),
		scored("burst", "kubevirt", "Succeeded", 10.33, pause(328)),
		scored("burst", "nova", "Succeeded", 13.45, pause(80)),
	}
	var buf bytes.Buffer
	require.NoError(t, WriteComparison(&buf, []Profile{p}, rows))
	out := buf.String()
	assert.Contains(t, out, "within limit")
	assert.Contains(t, out, "best within limit")
	assert.Contains(t, out, "nova 1.34")
	assert.Contains(t, out, "kubevirt 1.03")
	assert.Contains(t, out, "1.03 over 28 ms", "the baseline's cell says it went over")
	assert.Contains(t, out, "Succeeded over the downtime limit (1 baseline runs; not successes under WithinDowntimeLimit)")
	assert.Contains(t, out, "burst/kubevirt: 10.33 s, pause 328.0 ms, limit 300 ms, over by 28.0 ms")
	assert.Contains(t, out, "Under WithinDowntimeLimit")
	assert.Contains(t, out, "more than 1.05× behind the best baseline within the limit: none")
	assert.Contains(t, out, "Regardless of the pause: 1 movable; more than 1.05× behind the best baseline: burst (1.29×)")
}
