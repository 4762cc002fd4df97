package migration

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/migration/internal/fluid"
)

// TestVirtkitRules gives each rule of the virtkit policy a Progress it is
// meant for and checks that it, and no earlier rule, decides.
func TestVirtkitRules(t *testing.T) {
	v := NewPolicy(PolicyOptions{})
	const bw = 1e9
	m8 := uint64(8 * gib)
	// plan: before the start, a 1 GB/s hint, 300 ms configured.
	plan := func(mod func(*Progress)) Progress {
		p := Progress{Phase: PhasePlanning, Memory: m8, BandwidthHint: some(bw), DirtyRateBefore: some(1e8),
			DowntimeLimit: 300 * time.Millisecond, ConfiguredDowntime: 300 * time.Millisecond, DowntimeBound: 300 * time.Millisecond}
		mod(&p)
		return p
	}
	// run: pre-copy at 1 GB/s, the threshold at the configured limit less
	// the reserve (270 ms), nothing allowed, a dirty rate of 2 GB/s.
	run := func(mod func(*Progress)) Progress {
		p := Progress{Phase: PhasePreCopy, Memory: m8, Elapsed: 30 * time.Second,
			DataSent: some(uint64(4 * gib)), Remaining: some(uint64(4 * gib)),
			BandwidthBest: some(bw), Bandwidth: some(bw), BandwidthAvg: some(bw), DirtyRate: some(2e9),
			DowntimeLimit: 270 * time.Millisecond, ConfiguredDowntime: 300 * time.Millisecond, DowntimeBound: 300 * time.Millisecond}
		mod(&p)
		return p
	}
	firstPass := func(p *Progress) {
		p.FirstPassDone, p.SinceFirstPass, p.FirstPassSent, p.Iteration = true, 10*time.Second, some(uint64(8*gib)), some(uint64(5))
	}
	tests := []struct {
		rule string
		p    Progress
		want ActionKind
	}{
		{RulePostCopyRunning, run(func(p *Progress) { p.Phase = PhasePostCopy }), ActionContinue},

		{RuleStartUnmeasured, plan(func(p *Progress) { p.BandwidthHint = hypervisor.Measured[float64]{} }), ActionStart},
		{RuleStartUnmodelled, plan(func(p *Progress) { p.Memory = 0 }), ActionStart},
		{RuleStartPreCopy, plan(func(*Progress) {}), ActionStart},
		{RuleStartOnOneSample, plan(func(p *Progress) { p.DirtyRateBefore = some(2e9) }), ActionStart},
		{RuleStartThrottleCanHelp, plan(func(p *Progress) {
			p.DirtyRateBefore, p.Probing, p.AllowAutoConverge, p.CanThrottle = some(2e9), true, true, true
		}), ActionStart},
		{RuleRefuseHopeless, plan(func(p *Progress) { p.DirtyRateBefore, p.Probing = some(2e9), true }), ActionRefuse},

		{RuleUnmodelled, run(func(p *Progress) { p.Memory = 0 }), ActionContinue},
		{RulePostCopyFaster, run(func(p *Progress) { firstPass(p); p.AllowPostCopy, p.DirtyRate = true, some(9e8) }), ActionSwitchPostCopy},
		{RuleAutoConvergeShortPause, run(func(p *Progress) {
			firstPass(p)
			p.AllowAutoConverge, p.Throttle, p.RoundShrink, p.StalledRounds = true, 30, some(0.95), 3
			p.ExpectedDowntime = some(time.Second)
		}), ActionRaiseDowntime},
		{RuleRaiseForSpeed, run(func(p *Progress) {
			firstPass(p)
			p.Elapsed, p.DowntimeLimit, p.RoundShrink = 5*time.Second, 50*time.Millisecond, some(0.85)
			p.Remaining, p.DirtyRate = some(uint64(1e8)), hypervisor.Measured[float64]{}
		}), ActionRaiseDowntime},
		{RuleAwaitMeasurement, run(func(p *Progress) { p.DirtyRate = hypervisor.Measured[float64]{} }), ActionContinue},
		{RuleReleaseThrottle, run(func(p *Progress) {
			firstPass(p)
			p.Elapsed, p.Remaining = 5*time.Second, some(uint64(2*gib))
			p.CanThrottle, p.AllowAutoConverge, p.Throttle, p.ThrottleSensitivity = true, true, 50, some(1.0)
			p.DirtyRateBefore, p.DirtyRate = some(1e9), some(1e8)
		}), ActionThrottle},
		{RuleRaiseToConfigured, run(func(p *Progress) {
			p.Elapsed, p.DowntimeLimit, p.DirtyRate = time.Second, 50*time.Millisecond, some(9.9e8)
		}), ActionRaiseDowntime},
		{RulePreCopyConverges, run(func(p *Progress) { p.DirtyRate = some(1e8) }), ActionContinue},
		{RulePostCopyAfterFirstPass, run(func(p *Progress) { firstPass(p); p.AllowPostCopy = true }), ActionSwitchPostCopy},
		{RuleThrottleStep, run(func(p *Progress) { p.AllowAutoConverge, p.CanThrottle = true, true }), ActionThrottle},
		{RuleAutoConvergeTooSlow, run(func(p *Progress) {
			firstPass(p)
			p.AllowAutoConverge, p.Throttle, p.RoundShrink, p.StalledRounds = true, 30, some(0.95), 3
			p.JobDirtyRateLow, p.JobDirtyRateHigh, p.JobDirtyRateSamples = some(2e9), some(2.1e9), 3
			p.CompletionTimeout = p.Elapsed + time.Second
		}), ActionAbort},
		{RuleAutoConvergeAtCeiling, run(func(p *Progress) { p.AllowAutoConverge, p.Throttle = true, 99 }), ActionContinue},
		{RuleAutoConvergeClimbing, run(func(p *Progress) { p.AllowAutoConverge, p.Throttle = true, 20 }), ActionContinue},
		{RuleThrottleIneffective, run(func(p *Progress) {
			p.CanThrottle, p.Throttle, p.ThrottleCeiling, p.RateAtCeiling = true, 90, 90, some(2e9)
		}), ActionThrottle},
		{RuleRaiseToFloor, run(func(p *Progress) {
			firstPass(p)
			p.DowntimeBound, p.MinRemaining = 2*time.Second, some(uint64(8e8))
		}), ActionRaiseDowntime},
		{RuleConvergesSlowly, run(func(p *Progress) { p.Elapsed, p.DataSent, p.DirtyRate = 0, some(uint64(0)), some(9e8) }), ActionContinue},
		{RuleAwaitThrottleEffect, run(func(p *Progress) {
			p.AllowAutoConverge, p.CanThrottle, p.Throttle, p.SinceThrottle = true, true, 90, time.Second
		}), ActionContinue},
		{RuleObserveBeforeAbort, run(func(p *Progress) { p.Elapsed = 2 * time.Second }), ActionContinue},
		{RuleHopelessEarly, run(func(p *Progress) {
			p.Elapsed, p.DirtyRateSamples, p.DirtyRateLow = 15*time.Second, 2, some(2.5e9)
		}), ActionAbort},
		{RuleAwaitJobDirtyRate, run(func(p *Progress) { p.Elapsed = 15 * time.Second }), ActionContinue},
		{RuleObserveForBurst, run(func(p *Progress) {
			p.Probing, p.DirtyRateSpan, p.DataSent = true, 5*time.Second, some(uint64(gib))
		}), ActionContinue},
		{RuleLowestSampleConverges, run(func(p *Progress) {
			p.Probing, p.DirtyRateSpan, p.DirtyRateLow = true, 30*time.Second, some(1e8)
		}), ActionContinue},
		{RuleQuieterRoundsConverge, run(func(p *Progress) { firstPass(p); p.JobDirtyRateLow = some(1e8) }), ActionContinue},
		{RuleDirtyRateUnsteady, run(func(p *Progress) {
			firstPass(p)
			p.JobDirtyRateLow, p.JobDirtyRateHigh, p.JobDirtyRateSamples = some(1.5e9), some(3e9), 3
		}), ActionContinue},
		{RuleAwaitRounds, run(func(p *Progress) { firstPass(p); p.Iteration = hypervisor.Measured[uint64]{} }), ActionContinue},
		{RuleNearCritical, run(func(p *Progress) {
			firstPass(p)
			p.SinceFirstPass = 100 * time.Second
			p.AllowAutoConverge, p.CanThrottle, p.Throttle, p.SinceThrottle, p.DirtyRate = true, true, 90, 20*time.Second, some(1.02e9)
		}), ActionContinue},
		{RuleHopeless, run(func(p *Progress) { firstPass(p); p.SinceFirstPass = 100 * time.Second }), ActionAbort},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			a := v.Decide(tt.p)
			assert.Equal(t, tt.rule, a.Rule, a.Reason)
			assert.Equal(t, tt.want, a.Kind, a.Reason)
			assert.NotEmpty(t, a.Reason)
		})
		covered[tt.rule] = true
	}
	for _, name := range v.RuleNames() {
		assert.True(t, covered[name], "no case for rule %s", name)
	}
}

// TestVirtkitRuleOrderIsDocumented checks that the package documentation
// lists the rules in the order Decide tries them.
func TestVirtkitRuleOrderIsDocumented(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	var documented []string
	for _, m := range regexp.MustCompile(`(?m)^//\s+\d+\. ([A-Za-z]+):`).FindAllSubmatch(src, -1) {
		documented = append(documented, string(m[1]))
	}
	assert.Equal(t, NewPolicy(PolicyOptions{}).RuleNames(), documented)
}

// scriptPolicy starts the job, then returns its actions in turn, the last
// one for ever.
type scriptPolicy struct{ acts []Action }

func (s *scriptPolicy) Name() string { return "script" }

func (s *scriptPolicy) Decide(p Progress) Action {
	if p.Phase == PhasePlanning {
		return Action{Kind: ActionStart, Rule: RuleStart, Reason: "start"}
	}
	a := s.acts[0]
	if len(s.acts) > 1 {
		s.acts = s.acts[1:]
	}
	return a
}

// TestEngineSameRuleByName checks that the decision log folds repeated
// Continue actions by their rule's name: two rules whose reasons share a
// long prefix are two decisions, one rule quoting different numbers (or
// wording its reason differently) is one.
func TestEngineSameRuleByName(t *testing.T) {
	cont := func(rule, reason string) Action { return Action{Kind: ActionContinue, Rule: rule, Reason: reason} }
	acts := []Action{
		cont(RuleObserveForBurst, "pre-copy looks hopeless; observing a while longer"),
		cont(RuleAwaitRounds, "pre-copy looks hopeless; waiting for the job's own dirty rate"),
		cont(RuleAwaitRounds, "pre-copy looks hopeless; waiting for the job's own dirty rate"),
		cont(RuleAutoConvergeClimbing, "pre-copy cannot converge: r=1.30; QEMU's auto-converge is throttling the guest (0% now)"),
		cont(RuleAutoConvergeClimbing, "pre-copy predicted to take 99.6 s; QEMU's auto-converge is throttling the guest (20% now)"),
		cont("", "unnamed 1"),
		cont("", "unnamed 1"),
		cont("", "unnamed 2"),
	}
	g := fluid.New(fluid.Config{Memory: 8 * gib, Bandwidth: 10 * mb, Sensitivity: 1,
		Regions: []fluid.Region{{Size: gib, Rate: 5 * mb}}}, epoch)
	var log bytes.Buffer
	e, err := NewEngine(g, Request{Domain: "default_rules", Memory: 8 * gib},
		Options{Clock: g, Policy: &scriptPolicy{acts: acts}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, e.Start(ctx))
	for range acts {
		g.Advance(e.PollInterval())
		done, err := e.Step(ctx)
		require.NoError(t, err)
		require.False(t, done)
	}
	var got []string
	for _, d := range e.Result().Decisions {
		got = append(got, d.Action.Rule+"|"+d.Action.Reason)
	}
	assert.Equal(t, []string{
		RuleStart + "|start",
		RuleObserveForBurst + "|pre-copy looks hopeless; observing a while longer",
		RuleAwaitRounds + "|pre-copy looks hopeless; waiting for the job's own dirty rate",
		RuleAutoConvergeClimbing + "|pre-copy cannot converge: r=1.30; QEMU's auto-converge is throttling the guest (0% now)",
		"|unnamed 1",
		"|unnamed 2",
	}, got)
	assert.Equal(t, acts[len(acts)-1], e.Snapshot().LastAction, "the latest action is kept")
	assert.Contains(t, log.String(), "rule="+RuleStart, "the log names the rule")
	assert.Equal(t, RuleAutoConvergeClimbing, e.Result().Decisions[3].Status().Rule, "the status names the rule")
}

func TestSameRule(t *testing.T) {
	tests := []struct {
		name string
		a, b Action
		want bool
	}{
		{"same name, other numbers", Action{Kind: ActionContinue, Rule: "A", Reason: "x 1"}, Action{Kind: ActionContinue, Rule: "A", Reason: "y 2"}, true},
		{"other name, same prefix", Action{Kind: ActionContinue, Rule: "A", Reason: "pre-copy looks hopeless; a"}, Action{Kind: ActionContinue, Rule: "B", Reason: "pre-copy looks hopeless; b"}, false},
		{"one unnamed", Action{Kind: ActionContinue, Reason: "x"}, Action{Kind: ActionContinue, Rule: "A", Reason: "x"}, false},
		{"unnamed, equal reasons", Action{Kind: ActionContinue, Reason: "x"}, Action{Kind: ActionContinue, Reason: "x"}, true},
		{"not a Continue", Action{Kind: ActionThrottle, Rule: "A"}, Action{Kind: ActionContinue, Rule: "A"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, sameRule(tt.a, tt.b))
		})
	}
}
