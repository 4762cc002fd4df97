package migration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/migration/internal/fluid"
)

type fluidProbe struct{ g *fluid.Guest }

func (f fluidProbe) StartDirtyRateProbe(ctx context.Context, name string, period time.Duration) (PendingDirtyRate, error) {
	return f.g.Probe(ctx, name, period), nil
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// drive runs an engine on the fluid guest's manual clock until it ends or
// limit passes.
func drive(t *testing.T, g *fluid.Guest, e *Engine, limit time.Duration) Result {
	t.Helper()
	ctx := context.Background()
	err := e.Start(ctx)
	if errors.Is(err, ErrRefused) {
		return e.Result()
	}
	require.NoError(t, err)
	for start := g.Now(); g.Now().Sub(start) < limit; {
		g.Advance(e.PollInterval())
		done, err := e.Step(ctx)
		require.NoError(t, err)
		if done {
			return e.Result()
		}
	}
	t.Fatalf("migration still running after %v", limit)
	return Result{}
}

func TestEngine(t *testing.T) {
	const m8 = 8 * gib
	hog := fluid.Config{Memory: m8, Bandwidth: 1.15 * gb, Sensitivity: 1,
		Regions: []fluid.Region{{Size: 4 * gib, Rate: 2 * gb, Sequential: true}}}
	ioBound := fluid.Config{Memory: 16 * gib, Bandwidth: 575 * mb, Sensitivity: 0.2,
		Regions: []fluid.Region{{Size: 8 * gib, Rate: 800 * mb, Sequential: true}}}
	build := fluid.Config{Memory: m8, Bandwidth: 115 * mb, Sensitivity: 1,
		Regions: []fluid.Region{{Size: 2 * gib, Rate: 150 * mb, Sequential: true}}}
	idle := fluid.Config{Memory: 4 * gib, Bandwidth: 1.15 * gb, Sensitivity: 1,
		Regions: []fluid.Region{{Size: 64 << 20, Rate: 5 * mb}}}

	tests := []struct {
		name    string
		cfg     fluid.Config
		req     Request
		policy  Policy
		worth   time.Duration // Options.MeasureWorth
		outcome Outcome
		mode    hypervisor.MigrationMode
		check   func(t *testing.T, r Result)
	}{
		{name: "idle guest converges in plain pre-copy", cfg: idle,
			outcome: OutcomeSucceeded, mode: hypervisor.ModePreCopy,
			check: func(t *testing.T, r Result) {
				assert.InDelta(t, 3.7, r.Total.Seconds(), 0.5)
				d, ok := r.Downtime.Get()
				require.True(t, ok)
				assert.Less(t, d, 300*time.Millisecond)
				assert.Zero(t, r.MaxThrottle)
			}},
		{name: "a short first pass is not delayed by a measurement", cfg: idle,
			req:     Request{BandwidthHint: 1.15 * gb},
			outcome: OutcomeSucceeded,
			check: func(t *testing.T, r Result) {
				// 4 GiB at 1.15 GB/s: a 1 s measurement would add 27 %.
				assert.InDelta(t, 3.7, r.Total.Seconds(), 0.3)
				assert.Equal(t, r.Total, r.Job.Ended.Sub(r.Job.Started))
			}},
		{name: "hopeless hog is aborted within seconds", cfg: hog,
			outcome: OutcomeFailed,
			check: func(t *testing.T, r Result) {
				assert.True(t, r.Aborted)
				assert.ErrorIs(t, r.Err(), hypervisor.ErrMigrationAborted)
				assert.LessOrEqual(t, r.DecisionAt, 7*time.Second)
				assert.Less(t, r.BytesSent, uint64(m8))
				assert.Contains(t, r.Reason, "post-copy is not allowed")
			}},
		{name: "hog refused before start when the bandwidth is known", cfg: hog,
			req: Request{BandwidthHint: 1.15 * gb}, worth: time.Second,
			outcome: OutcomeFailed,
			check: func(t *testing.T, r Result) {
				assert.True(t, r.Refused)
				assert.ErrorIs(t, r.Err(), ErrRefused)
				assert.Zero(t, r.BytesSent)
			}},
		{name: "hog with post-copy switches as soon as the job reports", cfg: hog,
			req:     Request{AllowPostCopy: true},
			outcome: OutcomeSucceeded, mode: hypervisor.ModePostCopy,
			check: func(t *testing.T, r Result) {
				// Post-copy from the first poll: about M/B = 7.5 s, where
				// waiting for the first pass cost the 4 GiB working set
				// again (11.2 s).
				assert.InDelta(t, 7.9, r.Total.Seconds(), 0.5)
				assert.Less(t, r.DecisionAt.Seconds(), 1.0)
			}},
		{name: "build box converges with a throttle", cfg: build,
			req:     Request{AllowAutoConverge: true},
			outcome: OutcomeSucceeded, mode: hypervisor.ModePreCopy,
			check: func(t *testing.T, r Result) {
				assert.Greater(t, r.MaxThrottle, 23)
				assert.LessOrEqual(t, r.MaxThrottle, 90)
				d, _ := r.Downtime.Get()
				assert.LessOrEqual(t, d, 300*time.Millisecond)
			}},
		{name: "I/O-driven dirtying: throttle found ineffective, aborted", cfg: ioBound,
			req:     Request{AllowAutoConverge: true},
			outcome: OutcomeFailed,
			check: func(t *testing.T, r Result) {
				assert.Contains(t, r.Reason, "ineffective")
				assert.Less(t, r.BytesSent, uint64(16*gib))
			}},
		{name: "KubeVirt default burns its budget on the hog", cfg: hog,
			policy:  NewKubeVirtPolicy(KubeVirtOptions{}),
			outcome: OutcomeFailed,
			check: func(t *testing.T, r Result) {
				// ceil(8.59 GB) = 9 → 1350 s.
				assert.InDelta(t, 1350, r.DecisionAt.Seconds(), 1)
				assert.Greater(t, r.BytesSent, uint64(100*m8))
			}},
		{name: "KubeVirt AC+PC switches to post-copy at its budget", cfg: build,
			policy:  NewKubeVirtPolicy(KubeVirtOptions{AllowAutoConverge: true, AllowPostCopy: true}),
			req:     Request{AllowAutoConverge: true, AllowPostCopy: true},
			outcome: OutcomeSucceeded,
			check: func(t *testing.T, r Result) {
				assert.GreaterOrEqual(t, r.MaxThrottle, 20, "QEMU auto-converge ran")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := fluid.New(tt.cfg, epoch)
			req := tt.req
			req.Domain = "default_vm"
			req.Memory = uint64(tt.cfg.Memory)
			e, err := NewEngine(g, req, Options{Policy: tt.policy, Clock: g, Probe: fluidProbe{g}, MeasureWorth: tt.worth})
			require.NoError(t, err)
			r := drive(t, g, e, 3*time.Hour)
			assert.Equal(t, tt.outcome, r.Outcome, r.Reason)
			if tt.mode != "" {
				assert.Equal(t, tt.mode, r.Mode)
			}
			assert.NotEmpty(t, r.Decisions)
			for _, d := range r.Decisions {
				t.Logf("%v %s", d.Elapsed, d.Action.String())
			}
			if tt.check != nil {
				tt.check(t, r)
			}
			s := e.Snapshot()
			assert.True(t, s.Done)
			st := s.EngineStatus()
			assert.Len(t, st.Decisions, len(s.Decisions))
			assert.NotEmpty(t, st.Strategy)
		})
	}
}

func TestEngineRunCancelAborts(t *testing.T) {
	g := fluid.New(fluid.Config{Memory: 8 * gib, Bandwidth: 115 * mb, Sensitivity: 1,
		Regions: []fluid.Region{{Size: 2 * gib, Rate: 150 * mb, Sequential: true}}}, epoch)
	e, err := NewEngine(g, Request{Domain: "default_vm", Memory: 8 * gib},
		Options{Clock: g, PollInterval: time.Millisecond, Policy: NewKubeVirtPolicy(KubeVirtOptions{})})
	require.NoError(t, err)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				g.Advance(100 * time.Millisecond)
				time.Sleep(time.Millisecond)
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for e.Snapshot().Phase != PhasePreCopy {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	r, err := e.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	assert.True(t, r.Aborted)
	assert.Equal(t, OutcomeFailed, r.Outcome)
	assert.Contains(t, r.Reason, "cancelled")
}

func TestNewEngineValidates(t *testing.T) {
	g := fluid.New(fluid.Config{Memory: gib, Bandwidth: gb}, epoch)
	tests := []struct {
		name  string
		req   Request
		field string
	}{
		{"no domain", Request{Memory: 1}, "domain"},
		{"no memory", Request{Domain: "x"}, "memory"},
		{"negative downtime", Request{Domain: "x", Memory: 1, DowntimeLimit: -1}, "downtimeLimit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewEngine(g, tt.req, Options{})
			require.ErrorIs(t, err, ErrInvalidInput)
			assert.Contains(t, err.Error(), tt.field+":")
		})
	}
	_, err := NewEngine(nil, Request{Domain: "x", Memory: 1}, Options{})
	require.ErrorIs(t, err, ErrInvalidInput)
}

func TestEngineRunCompletes(t *testing.T) {
	g := fluid.New(fluid.Config{Memory: 4 * gib, Bandwidth: 1.15 * gb, Sensitivity: 1,
		Regions: []fluid.Region{{Size: 64 << 20, Rate: 5 * mb}}}, epoch)
	e, err := NewEngine(g, Request{Domain: "default_vm", Memory: 4 * gib},
		Options{Clock: g, PollInterval: time.Millisecond, Probe: fluidProbe{g}})
	require.NoError(t, err)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				g.Advance(50 * time.Millisecond)
				time.Sleep(time.Millisecond)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := e.Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, OutcomeSucceeded, r.Outcome)
	assert.True(t, e.Snapshot().DirtyRateBefore.Valid, "measured before the start")
}

// plainMigrator hides the jobs' Throttler, like libvirt's.
type plainMigrator struct{ g *fluid.Guest }

type plainJob struct{ hypervisor.MigrationJob }

func (p plainMigrator) StartMigration(ctx context.Context, name string, params hypervisor.MigrationParams) (hypervisor.MigrationJob, error) {
	j, err := p.g.StartMigration(ctx, name, params)
	if err != nil {
		return nil, err
	}
	return plainJob{j}, nil
}

func TestEngineWithoutDirectThrottle(t *testing.T) {
	build := fluid.Config{Memory: 8 * gib, Bandwidth: 115 * mb, Sensitivity: 1,
		Regions: []fluid.Region{{Size: 2 * gib, Rate: 150 * mb, Sequential: true}}}
	req := Request{Domain: "default_build", Memory: 8 * gib, AllowAutoConverge: true}

	g := fluid.New(build, epoch)
	e, err := NewEngine(plainMigrator{g}, req, Options{Clock: g, QEMUAutoConverge: true, Measurer: g})
	require.NoError(t, err)
	r := drive(t, g, e, time.Hour)
	assert.True(t, r.Decisions[0].Action.AutoConverge, "QEMU's auto-converge is enabled at the start")
	assert.Equal(t, OutcomeSucceeded, r.Outcome, r.Reason)
	assert.GreaterOrEqual(t, r.MaxThrottle, 20)

	g = fluid.New(build, epoch)
	e, err = NewEngine(plainMigrator{g}, req, Options{Clock: g, Measurer: g})
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	var noted bool
	for _, d := range e.Snapshot().Decisions {
		noted = noted || strings.Contains(d.Action.Reason, "cannot be throttled directly")
	}
	assert.True(t, noted, "the engine says why it cannot throttle")
}

// Without a bandwidth hint, the job's cap bounds the bandwidth: the plan
// sizes QEMU's first auto-converge step from the pre-start rate against
// it (on libvirt that step is set only at the start) instead of leaving
// QEMU's 20 %.
func TestEnginePlansWithTheJobsCapWithoutAHint(t *testing.T) {
	hog := fluid.Config{Memory: 256 << 20, Bandwidth: 1 * gib, Sensitivity: 1,
		Regions: []fluid.Region{{Size: 128 << 20, Rate: 64 << 20}}}
	for _, tc := range []struct {
		name     string
		capBytes uint64
		sized    bool
	}{
		{"capped at 8 MiB/s", 8 << 20, true},
		{"no cap, no hint", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := fluid.New(hog, epoch)
			req := Request{Domain: "default_hog", Memory: 256 << 20, AllowAutoConverge: true,
				Params: hypervisor.MigrationParams{Bandwidth: tc.capBytes}}
			e, err := NewEngine(plainMigrator{g}, req, Options{Clock: g, QEMUAutoConverge: true, Measurer: g})
			require.NoError(t, err)
			require.NoError(t, e.Start(context.Background()))
			start := e.Snapshot().Decisions[0].Action
			require.Equal(t, ActionStart, start.Kind)
			assert.True(t, start.AutoConverge)
			if tc.sized {
				assert.Greater(t, start.AutoConvergeInitial, defaultACInitial, start.Reason)
			} else {
				assert.Zero(t, start.AutoConvergeInitial, start.Reason)
			}
		})
	}
}
