package migration_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/migration"
)

// Only QEMU's auto-converge can help (libvirt: no direct throttle), the
// guest is the real tiny TCG guest of the throttle-needed profile: 256 MiB,
// 8 MiB/s cap, 10 MiB/s of distinct pages over 128 MiB, passes of 16 s that
// stop shrinking, QEMU at 20 % after two syncs.
func acOnlyProgress() migration.Progress {
	const mib = 1 << 20
	return migration.Progress{Phase: migration.PhasePreCopy, Memory: 256 * mib,
		Elapsed: 47 * time.Second, SinceFirstPass: 16 * time.Second, FirstPassDone: true,
		Iteration: some(uint64(3)), RoundShrink: some(1.0), WorkingSet: some(uint64(128 * mib)),
		DirtyRateBefore: some(60.0 * mib), DirtyRate: some(10.0 * mib), JobDirtyRateLow: some(9.5 * mib),
		JobDirtyRateHigh: some(10.5 * mib), JobDirtyRateSamples: 3, StalledRounds: 3,
		BandwidthAvg: some(8.0 * mib), BandwidthBest: some(8.4 * mib),
		Remaining: some(uint64(128 * mib)), DataSent: some(uint64(420 * mib)),
		DowntimeLimit: 50 * time.Millisecond, ConfiguredDowntime: 300 * time.Millisecond, DowntimeBound: 300 * time.Millisecond,
		Throttle: 20, AllowAutoConverge: true, CompletionTimeout: 150 * time.Second}
}

func TestVirtkitAutoConvergeTooSlowGivesUp(t *testing.T) {
	v := migration.NewPolicy(migration.PolicyOptions{})
	tests := []struct {
		name string
		edit func(p *migration.Progress)
		want migration.ActionKind
	}{
		{"passes stuck, QEMU's pace misses the completion timeout: give up now", func(*migration.Progress) {}, migration.ActionAbort},
		{"no completion timeout: wait for QEMU's auto-converge", func(p *migration.Progress) { p.CompletionTimeout = 0 }, migration.ActionContinue},
		{"time enough before the completion timeout: wait", func(p *migration.Progress) { p.CompletionTimeout = 30 * time.Minute }, migration.ActionContinue},
		{"passes still shrinking: wait", func(p *migration.Progress) { p.RoundShrink = some(0.6) }, migration.ActionContinue},
		{"the expected pause improved lately: wait", func(p *migration.Progress) { p.StalledRounds = 1 }, migration.ActionContinue},
		{"the job's dirty rate is not steady (bursts): wait", func(p *migration.Progress) { p.JobDirtyRateHigh = some(30.0 * (1 << 20)) }, migration.ActionContinue},
		{"only one sync since the first pass: no pace yet", func(p *migration.Progress) { p.Iteration = some(uint64(2)) }, migration.ActionContinue},
		{"post-copy allowed: switch instead", func(p *migration.Progress) { p.AllowPostCopy = true }, migration.ActionSwitchPostCopy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := acOnlyProgress()
			tt.edit(&p)
			a := v.Decide(p)
			require.Equal(t, tt.want, a.Kind, "%s", a.Reason)
			if tt.want == migration.ActionAbort {
				assert.Contains(t, a.Reason, "stopped shrinking")
				assert.Contains(t, a.Reason, "completion timeout")
				assert.Contains(t, a.Reason, "post-copy is not allowed")
			}
		})
	}
}

// While QEMU's auto-converge still has to bring the rate down, a pause
// raised to the configured limit is brought back to the short target: with
// a high switchover threshold each pass ends while much of the working set
// is still pending, re-dirtied pages are not new to QEMU's bitmap, and its
// trigger fires less often (the throttle climbs slower).
func TestVirtkitShortPauseWhileAutoConvergeClimbs(t *testing.T) {
	v := migration.NewPolicy(migration.PolicyOptions{})
	p := acOnlyProgress()
	p.CompletionTimeout = 0
	p.DowntimeLimit = 270 * time.Millisecond
	// Until the rounds at the raised pause show it, the pause stays.
	require.NotEqual(t, migration.ActionRaiseDowntime, v.Decide(p).Kind)
	// Three rounds without the expected pause improving, each sync
	// leaving 16 s of sending: back to the short pause.
	p.StalledRounds, p.ExpectedDowntime = 3, some(16*time.Second)
	a := v.Decide(p)
	require.Equal(t, migration.ActionRaiseDowntime, a.Kind, "%s", a.Reason)
	assert.Equal(t, 50*time.Millisecond, a.DowntimeLimit)

	// At the short pause, rounds that stay stuck do not raise it, even
	// when a pass's tail fits the configured limit.
	p.DowntimeLimit = 50 * time.Millisecond
	p.Remaining = some(uint64(1 << 20))
	assert.Equal(t, migration.ActionContinue, v.Decide(p).Kind)
	p.StalledRounds = 0
	assert.Equal(t, migration.ActionRaiseDowntime, v.Decide(p).Kind, "without that evidence the tail that fits raises it")
}

// At QEMU's highest throttle a whole pass that left as much as the one
// before ends the job (the real tiny guest's dirtier keeps its pace under
// any throttle); until a pass under 99 % has been measured it waits.
func TestVirtkitGivesUpWhenAPassAt99DoesNotShrink(t *testing.T) {
	v := migration.NewPolicy(migration.PolicyOptions{})
	p := acOnlyProgress()
	p.Throttle, p.Elapsed, p.Iteration = 99, 80*time.Second, some(uint64(5))
	p.ExpectedDowntime = some(16 * time.Second)
	a := v.Decide(p)
	require.NotEqual(t, migration.ActionAbort, a.Kind, "no pass measured under 99 %% yet: %s", a.Reason)
	p.ThrottleCeiling, p.RateAtCeiling = 99, some(8.0*(1<<20))
	p.DirtyRate = p.RateAtCeiling // a pass's rate saturates at the working set
	a = v.Decide(p)
	require.Equal(t, migration.ActionAbort, a.Kind, "%s", a.Reason)
	assert.Contains(t, a.Reason, "highest auto-converge throttle (99%)")
	p.RoundShrink = some(0.5)
	a = v.Decide(p)
	assert.NotEqual(t, migration.ActionAbort, a.Kind, "a pass that shrank: wait: %s", a.Reason)
}
