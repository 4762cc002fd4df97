package migration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestPauseFloor(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		d := make([]time.Duration, len(v))
		for i, x := range v {
			d[i] = time.Duration(x) * time.Millisecond
		}
		return d
	}
	tests := []struct {
		name   string
		pauses []time.Duration
		floor  time.Duration
		ok     bool
	}{
		{"rounds shrinking by a constant ratio approach no floor", ms(8000, 4000, 2000), 0, true},
		{"shrinkage that shrinks approaches a floor", ms(9082, 8374, 8091), 7903 * time.Millisecond, true},
		{"rounds that held after shrinking sit at the floor", ms(9000, 8000, 8000), 8 * time.Second, true},
		{"rounds that speed up: no estimate", ms(9000, 8500, 7000), 0, false},
		{"a round that grew: no estimate", ms(9000, 8000, 8500), 0, false},
		{"a first round that did not shrink: no estimate", ms(8000, 8000, 7000), 0, false},
		{"two pauses are not enough", ms(9000, 8000), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			floor, ok := pauseFloor(tt.pauses)
			assert.Equal(t, tt.ok, ok)
			assert.InDelta(t, tt.floor.Seconds(), floor.Seconds(), 0.002)
		})
	}
}

// TestFloorAtCeilingJudgesTheRounds: at QEMU's 99 % the job's dirty rate
// of a hot set reads under the bandwidth (QEMU counts only newly marked
// pages); the rounds decide (H13's, on the simulator). A floor over the
// highest allowed pause is refused; rounds that shrink geometrically are
// not, nor rounds that shrink faster once the throttle stepped up, nor a
// guest that may still switch to post-copy.
func TestFloorAtCeilingJudgesTheRounds(t *testing.T) {
	v := NewPolicy(PolicyOptions{})
	const bw = 1.15e9
	base := func() Progress {
		return Progress{Phase: PhasePreCopy, Memory: 16 * gib, Elapsed: 30 * time.Second,
			FirstPassDone: true, SinceFirstPass: 15 * time.Second, Iteration: some(uint64(5)),
			FirstPassSent: some(uint64(16 * gib)), DataSent: some(uint64(34e9)), Remaining: some(uint64(9e9)),
			BandwidthBest: some(bw), Bandwidth: some(bw), BandwidthAvg: some(bw),
			DirtyRateBefore: some(2.27e9), DirtyRate: some(1.12e9), ExpectedDowntime: some(8091 * time.Millisecond),
			JobDirtyRateLow: some(1.1e9), JobDirtyRateHigh: some(1.12e9), JobDirtyRateSamples: 2,
			RoundShrink: some(0.966), Throttle: 99, ThrottleCeiling: 99, RateAtCeiling: some(1.12e9),
			RecentPauses: []time.Duration{10595 * time.Millisecond, 9082 * time.Millisecond, 8374 * time.Millisecond}, LastRoundThrottle: 99,
			DowntimeLimit: 270 * time.Millisecond, ConfiguredDowntime: 300 * time.Millisecond, DowntimeBound: 300 * time.Millisecond,
			AllowAutoConverge: true, CompletionTimeout: 2700 * time.Second}
	}
	tests := []struct {
		name  string
		edit  func(p *Progress)
		floor bool
	}{
		{"a floor of 7.9 s under 99 %", func(*Progress) {}, true},
		{"geometric rounds converge", func(p *Progress) {
			p.RecentPauses = []time.Duration{8 * time.Second, 4 * time.Second, 2 * time.Second}
		}, false},
		{"a floor the raised pause takes", func(p *Progress) {
			p.RecentPauses = []time.Duration{900 * time.Millisecond, 500 * time.Millisecond, 400 * time.Millisecond}
		}, false},
		{"below QEMU's ceiling the throttle may still help", func(p *Progress) { p.Throttle = 90 }, false},
		{"the latest round ran under 90 %", func(p *Progress) { p.LastRoundThrottle = 90 }, false},
		{"the throttle stepped to 99 % and the round shrank faster: it helps", func(p *Progress) {
			p.RecentPauses = []time.Duration{10595 * time.Millisecond, 9082 * time.Millisecond, 4 * time.Second}
		}, false},
		{"two rounds are not enough", func(p *Progress) { p.RecentPauses = p.RecentPauses[1:] }, false},
		{"post-copy allowed", func(p *Progress) { p.AllowPostCopy = true }, false},
		{"a direct throttle has its own rules", func(p *Progress) { p.CanThrottle = true }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base()
			tt.edit(&p)
			a := v.Decide(p)
			if tt.floor {
				assert.Equal(t, RuleFloorAtCeiling, a.Rule, a.Reason)
				assert.Equal(t, ActionAbort, a.Kind)
				assert.Contains(t, a.Reason, "floor of about 7.75")
				return
			}
			assert.NotEqual(t, RuleFloorAtCeiling, a.Rule, a.Reason)
		})
	}
}
