package bench

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/migration"
)

// TestHeldOut runs every policy on the held-out adversarial profiles
// (testdata/heldout-profiles.yaml, none of which the policy is tuned on)
// with libvirt's capabilities and holds virtkit to the targets under
// RuleWithinDowntimeLimit; -v shows the comparison.
func TestHeldOut(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the baselines for hours of simulated time")
	}
	data, err := os.ReadFile("testdata/heldout-profiles.yaml")
	require.NoError(t, err)
	profiles, err := DecodeProfiles(data)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(profiles), 15)
	cs, s := compareAll(t, profiles)
	assert.Zero(t, s.MissedMovable, "virtkit succeeds within the limit wherever a baseline does or the model says an allowed strategy converges")
	assert.Zero(t, s.VirtkitOverLimit, "virtkit keeps every pause within the limit")
	// The targets under the rule: within 1.05× of the best baseline that
	// kept its pause within the limit, median total/(M/B) at most 1.5.
	assert.Empty(t, s.Behind, "within 1.05× of the best baseline within the limit")
	assert.LessOrEqual(t, s.MedianRatio, 1.5, "median total/(M/B) under the rule")
	// Without the rule the 1.05× target is not met on H05-burst-short:
	// KubeVirt's baselines finish in 10.33 s with a 328 ms pause against
	// the 300 ms limit, virtkit in 13.36 s (1.29×) within it. Documented
	// here as the real figure; it may shrink, not grow.
	knownGaps := map[string]float64{"H05-burst-short": 1.29}
	for _, c := range cs {
		v := c.VsBestAnyPause()
		if v <= 1.05 {
			continue
		}
		gap, known := knownGaps[c.Profile]
		if assert.True(t, known, "%s: %.2f× behind the best baseline regardless of its pause", c.Profile, v) {
			assert.LessOrEqual(t, v, gap+0.005, "%s: behind the best baseline regardless of its pause", c.Profile)
			require.NotNil(t, c.BestAnyPause)
			assert.Equal(t, StandingOverLimit, c.BestAnyPause.Standing(), "%s: the faster baseline went over the limit", c.Profile)
		}
	}
	assert.LessOrEqual(t, s.MedianRatioAnyPause, 1.5, "median total/(M/B) regardless of the pause")
}

// TestStandardProfiles is TestHeldOut's comparison on the built-in
// profiles (P1 to P8), with the same targets.
func TestStandardProfiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the baselines for hours of simulated time")
	}
	_, s := compareAll(t, BuiltinProfiles())
	assert.Zero(t, s.MissedMovable, "virtkit succeeds within the limit wherever a baseline does or the model says an allowed strategy converges")
	assert.Zero(t, s.VirtkitOverLimit, "virtkit keeps every pause within the limit")
	assert.Empty(t, s.Behind, "within 1.05× of the best baseline within the limit")
	assert.Empty(t, s.BehindAnyPause, "within 1.05× of the best baseline regardless of its pause")
	assert.LessOrEqual(t, s.MedianRatio, 1.5, "median total/(M/B) under the rule")
}

// compareAll runs every policy on profiles with libvirt's capabilities,
// logs the comparison and the rows, and returns the comparisons and
// their targets.
func compareAll(t *testing.T, profiles []Profile) ([]Comparison, CompareSummary) {
	t.Helper()
	rows, err := Run(context.Background(), profiles, PolicyNames(), Options{})
	require.NoError(t, err)
	limits := map[string]float64{}
	for _, p := range profiles {
		limits[p.Name] = float64(p.Downtime()) / float64(time.Millisecond)
	}
	for _, r := range rows {
		require.Equal(t, limits[r.Profile], r.DowntimeLimitMs, "%s/%s is held to its profile's limit", r.Profile, r.Policy)
	}
	var buf bytes.Buffer
	require.NoError(t, WriteComparison(&buf, profiles, rows))
	t.Log("\n" + buf.String())
	buf.Reset()
	require.NoError(t, WriteTable(&buf, rows))
	t.Log("\n" + buf.String())
	cs := Compare(profiles, rows)
	return cs, SummarizeComparisons(cs)
}

// TestHeldOutDecisions logs virtkit's decisions on the held-out profile
// named by HELDOUT_PROFILE (skipped without it): a debugging aid.
func TestHeldOutDecisions(t *testing.T) {
	name := os.Getenv("HELDOUT_PROFILE")
	if name == "" {
		t.Skip("HELDOUT_PROFILE not set")
	}
	data, err := os.ReadFile("testdata/heldout-profiles.yaml")
	require.NoError(t, err)
	profiles, err := DecodeProfiles(data)
	require.NoError(t, err)
	for _, p := range profiles {
		if p.Name != name {
			continue
		}
		r, err := RunOne(context.Background(), p, "virtkit", Options{})
		require.NoError(t, err)
		for _, d := range r.Decisions {
			t.Logf("%6.1fs it=%d %s", d.Elapsed.Seconds(), d.Iteration.Or(0), d.Action.String())
		}
		t.Logf("%s %s total %.1f s sent %.2f M", r.Outcome, r.Mode, r.TotalSeconds, float64(r.BytesSent)/float64(r.MemoryBytes))
	}
}

// TestCompletionExtended: a small guest on a slow link converges (r = 0.5)
// but needs longer than KubeVirt's 150 s per GB; the engine's prediction
// keeps it going past the timeout, up to the operator's bound, and says so
// in a named decision. With the timeout final it fails as KubeVirt does.
func TestCompletionExtended(t *testing.T) {
	p := Profile{Name: "slow-small", Memory: q("1Gi"), Bandwidth: q("4M"), DirtyRate: q("2M"), WorkingSet: qp("512Mi")}
	ctx := context.Background()
	r, err := RunOne(ctx, p, "virtkit", Options{})
	require.NoError(t, err)
	require.Equal(t, "Succeeded", r.Outcome, r.Reason)
	assert.Greater(t, r.TotalSeconds, 300.0, "ran past the 300 s completion timeout")
	var extended bool
	for _, d := range r.Decisions {
		if d.Action.Rule == migration.RuleCompletionExtended {
			extended = true
			assert.GreaterOrEqual(t, d.Elapsed, 300*time.Second)
			assert.Contains(t, d.Action.Reason, "converges")
		}
	}
	assert.True(t, extended, "a CompletionExtended decision")

	final, err := RunOne(ctx, p, "virtkit", Options{MaxCompletionTimeoutPerGB: -1})
	require.NoError(t, err)
	assert.Equal(t, "Failed", final.Outcome)
	assert.Contains(t, final.Reason, "not completed after 300 s")

	// A bound shorter than the predicted finish keeps the timeout.
	tight, err := RunOne(ctx, p, "virtkit", Options{MaxCompletionTimeoutPerGB: 200 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, "Failed", tight.Outcome)
	assert.Less(t, tight.TotalSeconds, 420.0)
}

// TestHeldOutBurstWithinLimit runs H05-burst-short (a 3 s burst every
// 10 s; the first pass ends 2.5 s before the second burst) three ways
// under RuleWithinDowntimeLimit: virtkit as published; virtkit at the
// configured limit less its reserve from the start (what a perfect burst
// forecast could do at most); and virtkit with the whole limit as its
// threshold, as KubeVirt sets it. Only the last finishes before the
// second burst, and its pause, like KubeVirt's, is over the limit: the
// switchover's fixed costs come on top of QEMU's threshold. So under the
// rule KubeVirt's faster run is not the best baseline; the best within
// the limit is Nova's, and virtkit as published is within 1.05× of it.
func TestHeldOutBurstWithinLimit(t *testing.T) {
	data, err := os.ReadFile("testdata/heldout-profiles.yaml")
	require.NoError(t, err)
	profiles, err := DecodeProfiles(data)
	require.NoError(t, err)
	var p Profile
	for _, q := range profiles {
		if q.Name == "H05-burst-short" {
			p = q
		}
	}
	require.Equal(t, "H05-burst-short", p.Name)
	ctx := context.Background()
	limitMs := p.Downtime().Seconds() * 1000
	baselines, err := Run(ctx, []Profile{p}, PolicyNames()[1:], Options{})
	require.NoError(t, err)
	var kv Row
	for _, b := range baselines {
		if b.Policy == "kubevirt" {
			kv = b
		}
	}
	require.Equal(t, "Succeeded", kv.Outcome, kv.Reason)
	require.NotNil(t, kv.DowntimeMs)
	t.Logf("kubevirt total %.2f s, pause %.0f ms (limit %.0f ms): %s", kv.TotalSeconds, *kv.DowntimeMs, limitMs, kv.Standing())
	assert.Equal(t, StandingOverLimit, kv.Standing(), "KubeVirt's switchover goes over the limit it was configured with")

	runs := []struct {
		name     string
		opts     migration.PolicyOptions
		standing Standing
	}{
		{"virtkit", migration.PolicyOptions{}, StandingWithinLimit},
		{"virtkit, configured limit less reserve from the start", migration.PolicyOptions{TargetDowntime: -1}, StandingWithinLimit},
		{"virtkit, whole limit from the start", migration.PolicyOptions{TargetDowntime: -1, SwitchoverReserve: time.Millisecond}, StandingOverLimit},
	}
	var published Row
	for i, r := range runs {
		row, err := RunOne(ctx, p, "virtkit", Options{Virtkit: r.opts})
		require.NoError(t, err)
		require.Equal(t, "Succeeded", row.Outcome, row.Reason)
		require.NotNil(t, row.DowntimeMs)
		t.Logf("%-55s total %.2f s (%.2f× kubevirt's %.2f s), pause %.0f ms: %s", r.name, row.TotalSeconds, row.TotalSeconds/kv.TotalSeconds, kv.TotalSeconds, *row.DowntimeMs, row.Standing())
		assert.Equal(t, r.standing, row.Standing(), "%s: pause %.1f ms against the %.0f ms limit", r.name, *row.DowntimeMs, limitMs)
		if i == 0 {
			published = row
		}
	}

	c := Compare([]Profile{p}, append([]Row{published}, baselines...))[0]
	require.NotNil(t, c.Best, "a baseline succeeds within the limit")
	require.NotNil(t, c.BestAnyPause)
	t.Logf("best baseline within the limit: %s %.2f s (virtkit %.2f×); regardless of the pause: %s %.2f s (virtkit %.2f×)",
		c.Best.Policy, c.Best.TotalSeconds, c.VsBest(), c.BestAnyPause.Policy, c.BestAnyPause.TotalSeconds, c.VsBestAnyPause())
	assert.NotEqual(t, StandingOverLimit, c.Best.Standing(), "a baseline over the limit is never the best within it")
	assert.Equal(t, "kubevirt", c.BestAnyPause.Policy, "KubeVirt's is the fastest run regardless of the pause")
	assert.LessOrEqual(t, c.VsBest(), 1.05, "within 1.05× of the best baseline within the limit")
	// Without the rule: 1.29× behind KubeVirt (the real figure; see TestHeldOut).
	assert.Greater(t, c.VsBestAnyPause(), 1.05)
}
