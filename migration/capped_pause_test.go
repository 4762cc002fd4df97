package migration

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

// QEMU lifts a job's bandwidth cap when it stops the guest, while its
// switchover rule reckons the pause at the capped rate. Under a cap, a
// short threshold keeps the cap on the last bytes and costs time on every
// guest (on the real idle guest capped at 64 MiB/s: QEMU's part took
// 2.03 s at a 50 ms threshold against 1.95 s at 300 ms); the configured
// limit less the reserve still bounds the real pause.
func TestPlanStartsAtTheLimitWhenAPauseIsBoundedByACap(t *testing.T) {
	const mib = 1 << 20
	base := func(mut func(*Progress)) Progress {
		p := Progress{Phase: PhasePlanning, Memory: 256 * mib, BandwidthHint: some(64.0 * mib),
			DowntimeLimit: 300 * time.Millisecond}
		mut(&p)
		return p
	}
	tests := []struct {
		name  string
		p     Progress
		limit time.Duration
	}{
		{"no cap: the short target", base(func(*Progress) {}), 50 * time.Millisecond},
		{"capped, idle: the limit less the reserve", base(func(p *Progress) { p.PauseBoundedByCap = true }), 270 * time.Millisecond},
		{"capped, a measured guest that converges: the limit less the reserve", base(func(p *Progress) {
			p.PauseBoundedByCap, p.DirtyRateBefore = true, some(4.0*mib)
		}), 270 * time.Millisecond},
		{"capped, a tight configured limit: still the limit less the reserve", base(func(p *Progress) {
			p.PauseBoundedByCap, p.DowntimeLimit = true, 60*time.Millisecond
		}), 30 * time.Millisecond},
		{"capped, but QEMU's auto-converge sized to bring the rate down: the short target", base(func(p *Progress) {
			p.PauseBoundedByCap, p.AllowAutoConverge, p.DirtyRateBefore = true, true, some(36.0*mib)
			p.BandwidthHint = some(8.0 * mib)
		}), 50 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := NewPolicy(PolicyOptions{}).Decide(tc.p)
			require.Equal(t, ActionStart, a.Kind, a.Reason)
			assert.Equal(t, tc.limit, a.DowntimeLimit, a.Reason)
			if tc.p.PauseBoundedByCap && tc.limit > 50*time.Millisecond {
				assert.Contains(t, a.Reason, "capped")
			}
		})
	}
}

// capsMigrator reports capabilities and records the start's parameters.
type capsMigrator struct {
	caps hypervisor.MigrationCapabilities
	got  chan hypervisor.MigrationParams
}

func (c *capsMigrator) MigrationCapabilities(context.Context) (hypervisor.MigrationCapabilities, error) {
	return c.caps, nil
}

func (c *capsMigrator) StartMigration(_ context.Context, _ string, p hypervisor.MigrationParams) (hypervisor.MigrationJob, error) {
	c.got <- p
	return nil, context.Canceled
}

// The engine tells the policy a pause is bounded by a cap only when the
// backend says its stop-and-copy phase is uncapped and the job has a cap.
func TestEngineReportsAPauseBoundedByACap(t *testing.T) {
	tests := []struct {
		name      string
		uncapped  bool
		bandwidth uint64
		limit     time.Duration
	}{
		{"libvirt, capped", true, 64 << 20, 270 * time.Millisecond},
		{"libvirt, no cap", true, 0, 50 * time.Millisecond},
		{"a backend whose switchover keeps the cap", false, 64 << 20, 50 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &capsMigrator{caps: hypervisor.MigrationCapabilities{StopCopyUncapped: tc.uncapped}, got: make(chan hypervisor.MigrationParams, 1)}
			e, err := NewEngine(m, Request{Domain: "vm", Memory: 256 << 20, DowntimeLimit: 300 * time.Millisecond,
				Params: hypervisor.MigrationParams{DestinationURI: "dst", Bandwidth: tc.bandwidth}},
				Options{Policy: NewPolicy(PolicyOptions{}), SkipMeasurement: true})
			require.NoError(t, err)
			_ = e.Start(context.Background())
			select {
			case p := <-m.got:
				assert.Equal(t, tc.limit, p.DowntimeLimit)
			default:
				t.Fatal("the engine did not start the job")
			}
		})
	}
}

// With the link's capacity known, the reserve under the configured limit
// is needed only while the switchover's data, moving k times faster than
// the cap, could take it; QEMU is never told more than the limit.
func TestCapUnderALinkFasterThanTheCap(t *testing.T) {
	const limit, reserve = 300 * time.Millisecond, 30 * time.Millisecond
	tests := []struct {
		name string
		p    Progress
		want time.Duration
	}{
		{"no cap", Progress{LinkOverCap: 40}, 270 * time.Millisecond},
		{"capped, link unknown", Progress{PauseBoundedByCap: true}, 270 * time.Millisecond},
		{"capped at the link's speed", Progress{PauseBoundedByCap: true, LinkOverCap: 1}, 270 * time.Millisecond},
		{"link 5 % faster: still short of the limit", Progress{PauseBoundedByCap: true, LinkOverCap: 1.05}, 283 * time.Millisecond},
		{"link 40× faster: the limit in full, never more", Progress{PauseBoundedByCap: true, LinkOverCap: 40}, limit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, capUnder(limit, reserve, tc.p))
		})
	}
	// The engine passes the ratio only under a cap on a backend that
	// sends the switchover uncapped.
	m := &capsMigrator{caps: hypervisor.MigrationCapabilities{StopCopyUncapped: true}, got: make(chan hypervisor.MigrationParams, 1)}
	e, err := NewEngine(m, Request{Domain: "vm", Memory: 256 << 20, LinkBandwidth: 2 << 30,
		Params: hypervisor.MigrationParams{DestinationURI: "dst", Bandwidth: 64 << 20}},
		Options{Policy: NewPolicy(PolicyOptions{}), SkipMeasurement: true})
	require.NoError(t, err)
	_ = e.Start(context.Background())
	assert.Equal(t, limit, (<-m.got).DowntimeLimit)

	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		_, err := NewEngine(m, Request{Domain: "vm", Memory: 1, LinkBandwidth: bad}, Options{})
		assert.ErrorIs(t, err, ErrInvalidInput)
		assert.ErrorContains(t, err, "linkBandwidth")
	}
}
