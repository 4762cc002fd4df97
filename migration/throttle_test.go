package migration_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/migration"
)

func some[T hypervisor.Number](v T) hypervisor.Measured[T] { return hypervisor.Some(v) }

// The throttle is judged by what the highest allowed one does, not by a
// sensitivity learned from a short sample (which saturates at the working
// set): a low learned sensitivity makes the step bigger, never an abort.
func TestVirtkitThrottleJudgedAtTheCeiling(t *testing.T) {
	v := migration.NewPolicy(migration.PolicyOptions{})
	base := func() migration.Progress {
		return migration.Progress{Phase: migration.PhasePreCopy, Memory: 16 << 30, Elapsed: 20 * time.Second,
			DirtyRateBefore: some(700e6), BandwidthAvg: some(575e6), BandwidthBest: some(575e6),
			Remaining: some(uint64(6 << 30)), DataSent: some(uint64(10 << 30)),
			DowntimeLimit: 50 * time.Millisecond, ConfiguredDowntime: 300 * time.Millisecond, DowntimeBound: 300 * time.Millisecond,
			CanThrottle: true, AllowAutoConverge: true, Probing: true, SinceThrottle: 15 * time.Second}
	}
	tests := []struct {
		name  string
		edit  func(p *migration.Progress)
		want  migration.ActionKind
		check func(t *testing.T, a migration.Action)
	}{
		{"a saturated sample (419 MB/s under 41 %) steps up instead of giving up", func(p *migration.Progress) {
			p.Throttle = 41
			p.DirtyRate = some(419e6)
			p.ThrottleSensitivity = some(0.1)
			p.ThrottleCeiling, p.RateAtCeiling = 41, some(419e6)
		}, migration.ActionThrottle, func(t *testing.T, a migration.Action) {
			assert.Equal(t, 90, a.ThrottlePercent, "try the highest allowed throttle")
		}},
		{"a sensitivity under 0.5 that a throttle still converges is used", func(p *migration.Progress) {
			p.Throttle = 20
			p.DirtyRate = some(640e6)
			p.ThrottleSensitivity = some(0.45)
			p.ThrottleCeiling, p.RateAtCeiling = 20, some(640e6)
		}, migration.ActionThrottle, func(t *testing.T, a migration.Action) {
			assert.Greater(t, a.ThrottlePercent, 20)
		}},
		{"the highest throttle measured over the bandwidth: release it", func(p *migration.Progress) {
			p.Throttle = 90
			p.DirtyRate = some(656e6)
			p.ThrottleSensitivity = some(0.2)
			p.ThrottleCeiling, p.RateAtCeiling = 90, some(656e6)
		}, migration.ActionThrottle, func(t *testing.T, a migration.Action) {
			assert.Zero(t, a.ThrottlePercent)
			assert.Contains(t, a.Reason, "ineffective")
		}},
		{"the burst ended: the throttle is lowered", func(p *migration.Progress) {
			p.DirtyRateBefore = some(2e9) // sampled during a burst
			p.Throttle = 80
			p.DirtyRate = some(40e6) // 200 MB/s unthrottled
			p.ThrottleSensitivity = some(1.0)
			p.ThrottleCeiling, p.RateAtCeiling = 80, some(40e6)
		}, migration.ActionThrottle, func(t *testing.T, a migration.Action) {
			assert.Less(t, a.ThrottlePercent, 80)
			assert.Contains(t, a.Reason, "fell")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base()
			tt.edit(&p)
			a := v.Decide(p)
			require.Equal(t, tt.want, a.Kind, a.Reason)
			if tt.check != nil {
				tt.check(t, a)
			}
		})
	}
}

// On the simulator with its full capabilities (a direct throttle, probes
// during the job), a throttle set for a heavy phase is released within 5 s
// of the phase ending.
func TestVirtkitReleasesThrottleWhenDirtyingFalls(t *testing.T) {
	ctx := context.Background()
	clock := sim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	src := sim.New(sim.Options{Name: "src", Clock: clock})
	dst := sim.New(sim.Options{Name: "dst", Clock: clock})
	require.NoError(t, sim.NewNetwork().Connect(src, dst, sim.Link{Bandwidth: 575_000_000}))
	const name = "default_vm"
	_, err := src.Define(ctx, `<domain type='qemu'><name>default_vm</name><memory unit='GiB'>16</memory><vcpu>4</vcpu></domain>`)
	require.NoError(t, err)
	require.NoError(t, src.Start(ctx, name, hypervisor.StartOptions{}))
	heavy := sim.Workload{DirtyRate: 900_000_000, WorkingSet: 12 << 30, ThrottleSensitivity: 1}
	require.NoError(t, src.SetWorkload(name, heavy))

	e, err := migration.NewEngine(src, migration.Request{Domain: name, Memory: 16 << 30,
		Params: hypervisor.MigrationParams{DestinationURI: "dst"}, AllowAutoConverge: true},
		migration.Options{Clock: clock, Probe: simProbe{src}})
	require.NoError(t, err)
	require.NoError(t, e.Start(ctx))
	var fellAt, releasedAt time.Duration
	for done := false; !done; {
		clock.Advance(e.NextPoll())
		done, err = e.Step(ctx)
		require.NoError(t, err)
		s := e.Snapshot()
		if fellAt == 0 && s.Throttle >= 30 && s.Elapsed > 10*time.Second {
			require.NoError(t, src.SetWorkload(name, sim.Workload{DirtyRate: 50_000_000, WorkingSet: 1 << 30, ThrottleSensitivity: 1}))
			fellAt = s.Elapsed
		}
		if fellAt > 0 && releasedAt == 0 && s.Throttle < 30 {
			releasedAt = s.Elapsed
		}
		require.Less(t, s.Elapsed, 10*time.Minute)
	}
	require.NotZero(t, fellAt, "the heavy phase was throttled")
	require.NotZero(t, releasedAt, "the throttle came down")
	assert.LessOrEqual(t, releasedAt-fellAt, 5*time.Second)
	assert.Equal(t, migration.OutcomeSucceeded, e.Result().Outcome, e.Result().Reason)
}
