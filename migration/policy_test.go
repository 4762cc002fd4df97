package migration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/virtkit/virtkit/hypervisor"
)

func some[T hypervisor.Number | time.Duration](v T) hypervisor.Measured[T] { return hypervisor.Some(v) }

func TestKubeVirtPolicy(t *testing.T) {
	def := NewKubeVirtPolicy(KubeVirtOptions{})
	acpc := NewKubeVirtPolicy(KubeVirtOptions{AllowAutoConverge: true, AllowPostCopy: true})
	m8 := uint64(8 * gib) // ceil(8.59 GB) = 9 → 1350 s
	running := func(elapsed, since time.Duration) Progress {
		return Progress{Phase: PhasePreCopy, Memory: m8, Elapsed: elapsed, SinceProgress: since,
			AllowPostCopy: true, AllowAutoConverge: true}
	}
	tests := []struct {
		name   string
		policy *KubeVirtPolicy
		p      Progress
		want   ActionKind
		check  func(t *testing.T, a Action)
	}{
		{"default start leaves flags off", def, Progress{Phase: PhasePlanning, Memory: m8, AllowPostCopy: true, AllowAutoConverge: true, DowntimeLimit: 300 * time.Millisecond},
			ActionStart, func(t *testing.T, a Action) {
				assert.False(t, a.PostCopy)
				assert.False(t, a.AutoConverge)
				assert.Equal(t, 300*time.Millisecond, a.DowntimeLimit)
			}},
		{"ac-pc start sets both flags", acpc, Progress{Phase: PhasePlanning, Memory: m8, AllowPostCopy: true, AllowAutoConverge: true},
			ActionStart, func(t *testing.T, a Action) {
				assert.True(t, a.PostCopy)
				assert.True(t, a.AutoConverge)
			}},
		{"ac-pc start honours the migration's permissions", acpc, Progress{Phase: PhasePlanning, Memory: m8},
			ActionStart, func(t *testing.T, a Action) {
				assert.False(t, a.PostCopy)
				assert.False(t, a.AutoConverge)
			}},
		{"within budget", def, running(1349*time.Second, time.Second), ActionContinue, nil},
		{"budget is 150 s per rounded-up GB", def, running(1351*time.Second, time.Second), ActionAbort, func(t *testing.T, a Action) {
			assert.Contains(t, a.Reason, "not completed after 1350 s")
		}},
		{"stuck for 150 s", def, running(200*time.Second, 151*time.Second), ActionAbort, func(t *testing.T, a Action) {
			assert.Contains(t, a.Reason, "stuck")
		}},
		{"progress timeout checked before the budget", def, running(2000*time.Second, 151*time.Second), ActionAbort, func(t *testing.T, a Action) {
			assert.Contains(t, a.Reason, "stuck")
		}},
		{"ac-pc switches to post-copy at the budget", acpc, running(1351*time.Second, 151*time.Second), ActionSwitchPostCopy, nil},
		{"ac-pc without post-copy permission aborts", acpc, func() Progress { p := running(1351*time.Second, 0); p.AllowPostCopy = false; return p }(), ActionAbort, nil},
		{"never abort in post-copy", def, func() Progress { p := running(5000*time.Second, 5000*time.Second); p.Phase = PhasePostCopy; return p }(), ActionContinue, nil},
		{"1 GiB guest rounds up to 2 GB", def, Progress{Phase: PhasePreCopy, Memory: gib, Elapsed: 301 * time.Second}, ActionAbort, func(t *testing.T, a Action) {
			assert.Contains(t, a.Reason, "300 s")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.policy.Decide(tt.p)
			assert.Equal(t, tt.want, a.Kind, a.Reason)
			assert.NotEmpty(t, a.Reason)
			if tt.check != nil {
				tt.check(t, a)
			}
		})
	}
	assert.Equal(t, "kubevirt", def.Name())
	assert.Equal(t, "kubevirt-ac-pc", acpc.Name())
	assert.Equal(t, 400*time.Millisecond, def.PollInterval())
}

func TestNovaPolicy(t *testing.T) {
	nova := NewNovaPolicy(NovaOptions{})
	m8 := uint64(8 * gib) // data_gb 8: a step every 600 s, timeout 6400 s
	at := func(elapsed, limit time.Duration) Progress {
		return Progress{Phase: PhasePreCopy, Memory: m8, Elapsed: elapsed, DowntimeLimit: limit, AllowPostCopy: true}
	}
	tests := []struct {
		name     string
		policy   *NovaPolicy
		p        Progress
		want     ActionKind
		downtime time.Duration
	}{
		{"start at 50 ms", nova, Progress{Phase: PhasePlanning, Memory: m8}, ActionStart, 50 * time.Millisecond},
		{"first step holds", nova, at(599*time.Second, 50*time.Millisecond), ActionContinue, 0},
		{"second step at 600 s", nova, at(600*time.Second, 50*time.Millisecond), ActionRaiseDowntime, 95 * time.Millisecond},
		{"step 5 at 3000 s", nova, at(3001*time.Second, 230*time.Millisecond), ActionRaiseDowntime, 275 * time.Millisecond},
		{"last step 500 ms at 6000 s", nova, at(6000*time.Second, 455*time.Millisecond), ActionRaiseDowntime, 500 * time.Millisecond},
		{"timeout 800 s per GiB", nova, at(6401*time.Second, 500*time.Millisecond), ActionAbort, 0},
		{"no abort in post-copy", nova, func() Progress { p := at(9000*time.Second, 500*time.Millisecond); p.Phase = PhasePostCopy; return p }(), ActionContinue, 0},
		// Small guests count as 2 GiB: steps every 150 s, timeout 1600 s.
		{"small guest floored at 2 GiB", nova, Progress{Phase: PhasePreCopy, Memory: gib / 2, Elapsed: 1601 * time.Second, DowntimeLimit: 500 * time.Millisecond}, ActionAbort, 0},
		{"force_complete with post-copy", NewNovaPolicy(NovaOptions{TimeoutAction: NovaForceComplete, PermitPostCopy: true}),
			at(6401*time.Second, 500*time.Millisecond), ActionSwitchPostCopy, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.policy.Decide(tt.p)
			assert.Equal(t, tt.want, a.Kind, a.Reason)
			if tt.downtime > 0 {
				assert.Equal(t, tt.downtime, a.DowntimeLimit)
			}
			if a.Kind == ActionStart {
				assert.False(t, a.PostCopy, "post-copy is not permitted by default")
			}
		})
	}
	assert.Equal(t, 800*time.Second*8, nova.CompletionTimeout(m8))
}

func TestVirtkitPolicy(t *testing.T) {
	v := NewPolicy(PolicyOptions{})
	// P7-like hog: 8 GiB, 2 GB/s dirtying on 1.15 GB/s.
	hog := func(elapsed time.Duration) Progress {
		sent := uint64(elapsed.Seconds() * 1.15 * gb)
		return Progress{Phase: PhasePreCopy, Memory: 8 * gib, Elapsed: elapsed,
			DirtyRateBefore: some(2 * gb), Bandwidth: some(1.15 * gb), BandwidthAvg: some(1.15 * gb), BandwidthBest: some(1.15 * gb),
			Remaining: some(uint64(8*gib) - sent), DataSent: some(sent), DowntimeLimit: 300 * time.Millisecond,
			DowntimeBound: 300 * time.Millisecond, CanThrottle: true, Probing: true}
	}
	with := func(p Progress, f func(*Progress)) Progress { f(&p); return p }
	tests := []struct {
		name  string
		p     Progress
		want  ActionKind
		check func(t *testing.T, a Action)
	}{
		{"plan without bandwidth starts with post-copy enabled when allowed",
			Progress{Phase: PhasePlanning, Memory: 8 * gib, DirtyRateBefore: some(2 * gb), AllowPostCopy: true, CanThrottle: true, AllowAutoConverge: true},
			ActionStart, func(t *testing.T, a Action) {
				assert.True(t, a.PostCopy)
				assert.False(t, a.AutoConverge, "virtkit throttles itself when it can")
			}},
		{"plan uses QEMU auto-converge when it cannot throttle directly",
			Progress{Phase: PhasePlanning, Memory: 8 * gib, AllowAutoConverge: true},
			ActionStart, func(t *testing.T, a Action) { assert.True(t, a.AutoConverge) }},
		{"plan refuses a hopeless guest when the bandwidth is known",
			with(hog(0), func(p *Progress) {
				p.Phase = PhasePlanning
				p.BandwidthBest = hypervisor.Measured[float64]{}
				p.BandwidthHint = some(1.15 * gb)
			}),
			ActionRefuse, func(t *testing.T, a Action) {
				assert.Contains(t, a.Reason, "exceeds bandwidth")
				assert.Contains(t, a.Reason, "throttling is not allowed")
				assert.Contains(t, a.Reason, "post-copy is not allowed")
			}},
		{"waits for the first bandwidth sample",
			with(hog(0), func(p *Progress) { p.BandwidthBest = hypervisor.Measured[float64]{} }), ActionContinue, nil},
		{"observes before aborting", hog(time.Second), ActionContinue, nil},
		{"waits before aborting while little was sent", hog(5 * time.Second), ActionContinue, func(t *testing.T, a Action) {
			assert.Contains(t, a.Reason, "observing a while longer")
		}},
		{"aborts a hopeless guest before sending 3/4 of its memory", hog(6 * time.Second), ActionAbort, func(t *testing.T, a Action) {
			assert.Contains(t, a.Reason, "pre-copy cannot converge")
			assert.Contains(t, a.Reason, "post-copy is not allowed")
			assert.NotEmpty(t, a.Figures)
		}},
		{"keeps sampling a slow, probed guest before aborting",
			with(hog(20*time.Second), func(p *Progress) {
				p.Probing = true
				p.DirtyRateLow = some(2 * gb)
				p.DirtyRateSpan = 10 * time.Second
				p.DataSent = some(uint64(gib))
			}),
			ActionContinue, func(t *testing.T, a Action) { assert.Contains(t, a.Reason, "observing") }},
		{"a burst in one sample is not hopeless",
			with(hog(30*time.Second), func(p *Progress) {
				p.Probing = true
				p.DirtyRateLow = some(0.4 * gb)
				p.DirtyRateSpan = 30 * time.Second
				p.DataSent = some(uint64(gib))
			}),
			ActionContinue, func(t *testing.T, a Action) { assert.Contains(t, a.Reason, "burst") }},
		{"aborts once the samples agree over the patience",
			with(hog(30*time.Second), func(p *Progress) {
				p.Probing = true
				p.DirtyRateLow = some(1.9 * gb)
				p.DirtyRateSpan = 26 * time.Second
				p.DataSent = some(uint64(gib))
			}),
			ActionAbort, nil},
		{"throttles when allowed", with(hog(time.Second), func(p *Progress) { p.AllowAutoConverge = true }),
			ActionThrottle, func(t *testing.T, a Action) {
				// Target r = 0.5 at most: 1 − 0.5·1.15/2 = 71.25 % → 72.
				assert.GreaterOrEqual(t, a.ThrottlePercent, 72)
				assert.LessOrEqual(t, a.ThrottlePercent, 90)
			}},
		{"releases a throttle that proves ineffective",
			with(hog(20*time.Second), func(p *Progress) {
				p.AllowAutoConverge = true
				p.SinceThrottle = 15 * time.Second
				p.Throttle = 90
				p.ThrottleSensitivity = some(0.2)
				p.DirtyRate = some(1.71 * gb)
				p.ThrottleCeiling, p.RateAtCeiling = 90, some(1.71*gb)
			}), ActionThrottle, func(t *testing.T, a Action) {
				assert.Zero(t, a.ThrottlePercent)
				assert.Contains(t, a.Reason, "ineffective")
			}},
		{"then gives up",
			with(hog(20*time.Second), func(p *Progress) {
				p.AllowAutoConverge = true
				p.SinceThrottle = time.Second
				p.ThrottleSensitivity = some(0.2)
				p.DirtyRate = some(2 * gb)
				p.ThrottleCeiling, p.RateAtCeiling = 90, some(1.71*gb)
			}), ActionAbort, func(t *testing.T, a Action) { assert.Contains(t, a.Reason, "ineffective") }},
		{"post-copy during the first pass when pre-copy cannot converge",
			with(hog(6*time.Second), func(p *Progress) { p.AllowPostCopy = true }), ActionSwitchPostCopy, nil},
		{"post-copy after the first pass",
			with(hog(8*time.Second), func(p *Progress) { p.AllowPostCopy = true; p.FirstPassDone = true; p.Remaining = some(uint64(4 * gib)) }),
			ActionSwitchPostCopy, func(t *testing.T, a Action) { assert.Contains(t, a.Reason, "post-copy of the remaining") }},
		{"raises the downtime limit to fit the floor",
			with(hog(10*time.Second), func(p *Progress) {
				p.FirstPassDone = true
				p.DowntimeBound = 2 * time.Second
				p.MinRemaining = some(uint64(1.15 * gb)) // 1 s at B
			}), ActionRaiseDowntime, func(t *testing.T, a Action) { assert.Equal(t, 1250*time.Millisecond, a.DowntimeLimit) }},
		{"a converging guest is left alone",
			Progress{Phase: PhasePreCopy, Memory: 8 * gib, Elapsed: 10 * time.Second, DirtyRate: some(5 * mb),
				BandwidthAvg: some(1.15 * gb), BandwidthBest: some(1.15 * gb), DowntimeLimit: 300 * time.Millisecond},
			ActionContinue, func(t *testing.T, a Action) { assert.Contains(t, a.Reason, "pre-copy converges") }},
		{"a bandwidth dip does not abort a converging guest",
			Progress{Phase: PhasePreCopy, Memory: 16 * gib, Elapsed: 40 * time.Second, DirtyRate: some(300 * mb),
				Bandwidth: some(287 * mb), BandwidthAvg: some(290 * mb), BandwidthBest: some(575 * mb), DowntimeLimit: 300 * time.Millisecond,
				FirstPassDone: true, Remaining: some(uint64(3 * gb))},
			ActionContinue, nil},
		{"a stalled pre-copy is not converging whatever the rates say",
			Progress{Phase: PhasePreCopy, Memory: 8 * gib, Elapsed: 55 * time.Second, DirtyRate: some(0.9 * gb),
				BandwidthAvg: some(1.15 * gb), BandwidthBest: some(1.15 * gb), DowntimeLimit: 250 * time.Millisecond,
				FirstPassDone: true, Iteration: some(uint64(14)), Remaining: some(uint64(700e6)), DataSent: some(uint64(17 * gb)),
				ExpectedDowntime: some(720 * time.Millisecond), StalledRounds: 12, SinceBestExpected: 45 * time.Second, SinceFirstPass: 48 * time.Second,
				JobDirtyRateLow: some(0.9 * gb), JobDirtyRateHigh: some(0.95 * gb), JobDirtyRateSamples: 6},
			ActionAbort, func(t *testing.T, a Action) { assert.Contains(t, a.Reason, "for 12 rounds") }},
		{"a hot set resent four times over without a sync near the limit is a floor 20 s after the first pass",
			hotSetFloor(21*time.Second, 5, 60), ActionAbort, func(t *testing.T, a Action) {
				assert.Contains(t, a.Reason, "for 6 rounds")
				assert.Contains(t, a.Reason, "resent 5.0× the memory and the best pause expected was 610ms")
			}},
		{"that floor is not called before 20 s",
			hotSetFloor(15*time.Second, 5, 60), ActionContinue, nil},
		{"nor before four memories are resent",
			hotSetFloor(21*time.Second, 3.5, 60), ActionContinue, nil},
		{"nor when a sync once came near the limit",
			func() Progress {
				p := hotSetFloor(21*time.Second, 5, 60)
				p.BestExpected = some(300 * time.Millisecond)
				return p
			}(), ActionContinue, nil},
		{"nor while the link carries less than in the first pass",
			hotSetFloor(21*time.Second, 5, 200), ActionContinue, nil},
		{"nor while each round shrinks, if by less than 4 %",
			func() Progress {
				p := hotSetFloor(21*time.Second, 5, 60)
				p.RoundsSinceLowest = 0
				return p
			}(), ActionContinue, nil},
		{"a spread job dirty rate is waited out",
			Progress{Phase: PhasePreCopy, Memory: 32 * gib, Elapsed: 80 * time.Second, DirtyRate: some(1.5 * gb),
				BandwidthAvg: some(575 * mb), BandwidthBest: some(575 * mb), DowntimeLimit: 250 * time.Millisecond,
				FirstPassDone: true, Iteration: some(uint64(3)), Remaining: some(uint64(8 * gb)), DataSent: some(uint64(40 * gb)),
				SinceFirstPass: 20 * time.Second, JobDirtyRateLow: some(0.9 * gb), JobDirtyRateHigh: some(1.5 * gb), JobDirtyRateSamples: 2},
			ActionContinue, func(t *testing.T, a Action) { assert.Contains(t, a.Reason, "not steady") }},
		{"quiet rounds that converge are waited for",
			Progress{Phase: PhasePreCopy, Memory: 32 * gib, Elapsed: 95 * time.Second, DirtyRate: some(1.5 * gb),
				BandwidthAvg: some(575 * mb), BandwidthBest: some(575 * mb), DowntimeLimit: 250 * time.Millisecond,
				FirstPassDone: true, Iteration: some(uint64(5)), Remaining: some(uint64(8 * gb)), DataSent: some(uint64(48 * gb)),
				SinceFirstPass: 35 * time.Second, JobDirtyRateLow: some(80 * mb), JobDirtyRateHigh: some(1.5 * gb), JobDirtyRateSamples: 3},
			ActionContinue, func(t *testing.T, a Action) { assert.Contains(t, a.Reason, "quieter rounds") }},
		{"no remedy allowed, two samples far over the job's bandwidth: refused in the first pass",
			hopelessTiny(12*time.Second, 9*mib, 2*mib, 2),
			ActionAbort, func(t *testing.T, a Action) {
				assert.Contains(t, a.Reason, "2× the bandwidth")
				assert.Contains(t, a.Reason, "post-copy is not allowed")
			}},
		{"no remedy allowed, a single sample: waits",
			hopelessTiny(12*time.Second, 9*mib, 2*mib, 1), ActionContinue, nil},
		{"no remedy allowed, too early for the job's bandwidth: waits",
			hopelessTiny(6*time.Second, 9*mib, 2*mib, 2), ActionContinue, nil},
		{"no remedy allowed, the lowest sample within the margin: waits",
			hopelessTiny(12*time.Second, 3.5*mib, 2*mib, 2), ActionContinue, nil},
		{"post-copy allowed: no early refusal, post-copy at once",
			with(hopelessTiny(12*time.Second, 9*mib, 2*mib, 2), func(p *Progress) { p.AllowPostCopy = true }),
			ActionSwitchPostCopy, nil},
		{"never aborts in post-copy", with(hog(100*time.Second), func(p *Progress) { p.Phase = PhasePostCopy }), ActionContinue, nil},
		{"never aborts a pre-copy that converges, however slowly",
			Progress{Phase: PhasePreCopy, Memory: 8 * gib, Elapsed: 300 * time.Second, DirtyRate: some(1 * gb),
				BandwidthAvg: some(1.15 * gb), BandwidthBest: some(1.15 * gb), DowntimeLimit: 300 * time.Millisecond,
				DataSent: some(uint64(30 * gib)), FirstPassDone: true, Remaining: some(uint64(4 * gib))},
			ActionContinue, func(t *testing.T, a Action) { assert.Contains(t, a.Reason, "no remedy is left") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := v.Decide(tt.p)
			assert.Equal(t, tt.want, a.Kind, a.Reason)
			assert.NotEmpty(t, a.Reason)
			if tt.check != nil {
				tt.check(t, a)
			}
		})
	}
}

const mib = 1 << 20

// hopelessTiny is a 128 MiB guest without post-copy or auto-converge on a
// backend that cannot sample during the job: samples (the lowest low, the
// pre-start rate 1.2 × low), n of them, the job's bandwidth bw.
func hopelessTiny(elapsed time.Duration, low, bw float64, n int) Progress {
	return Progress{Phase: PhasePreCopy, Memory: 128 * mib, Elapsed: elapsed,
		DirtyRateBefore: some(1.2 * low), DirtyRateLow: some(low), DirtyRateSamples: n, DirtyRateSpan: time.Duration(n-1) * time.Second,
		Bandwidth: some(bw), BandwidthAvg: some(bw), BandwidthBest: some(bw),
		DataSent: some(uint64(bw * elapsed.Seconds())), Remaining: some(uint64(128*mib - bw*elapsed.Seconds())),
		DowntimeLimit: 50 * time.Millisecond, ConfiguredDowntime: 300 * time.Millisecond}
}

// hotSetFloor is the tiny guest's 40 MiB hot set on QEMU 10 with multifd
// (measured on the real stack): the link carries 46 MB/s, the dirty rate
// is 35 MB/s, yet every sync leaves most of the hot set pending, at best
// 0.6 s of pause against a 240 ms threshold. The first pass sent
// `first` MiB in 5 s; since then, over sinceFirst, the rounds resent
// `resent` × the memory. The rounds' rates range from 20 to 35 MB/s.
func hotSetFloor(sinceFirst time.Duration, resent, first float64) Progress {
	sent := uint64(resent * 128 * mib)
	return Progress{Phase: PhasePreCopy, Memory: 128 * mib, Elapsed: sinceFirst + 5*time.Second, DirtyRate: some(35 * mb),
		BandwidthAvg: some(30 * mb), BandwidthBest: some(46 * mb), DowntimeLimit: 270 * time.Millisecond,
		FirstPassDone: true, Iteration: some(uint64(20)), Remaining: some(uint64(38.7 * mb)), BestExpected: some(610 * time.Millisecond),
		FirstPassSent: some(uint64(first * mib)), DataSent: some(uint64(first*mib) + sent),
		ExpectedDowntime: some(908 * time.Millisecond), StalledRounds: 6, RoundsSinceLowest: 6, SinceBestExpected: 8 * time.Second, SinceFirstPass: sinceFirst,
		JobDirtyRateLow: some(20 * mb), JobDirtyRateHigh: some(35 * mb), JobDirtyRateSamples: 14}
}

func TestVirtkitPolicyFloorRuleOff(t *testing.T) {
	off := NewPolicy(PolicyOptions{StallData: -1})
	a := off.Decide(hotSetFloor(21*time.Second, 5, 60))
	assert.Equal(t, ActionContinue, a.Kind, a.Reason)
	a = NewPolicy(PolicyOptions{}).Decide(hotSetFloor(21*time.Second, 5, 60))
	assert.Equal(t, ActionAbort, a.Kind, a.Reason)
}
