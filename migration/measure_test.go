package migration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

// libvirtFixture replays job statistics as libvirt reports them: the
// memory_dirty_rate field is present and 0 until QEMU's first sync after
// the setup one (memory_iteration 2), and the jobs have no direct throttle.
type libvirtFixture struct {
	stats    []hypervisor.JobStats
	i        int
	done     chan struct{}
	measured int
}

func (f *libvirtFixture) MigrationCapabilities(context.Context) (hypervisor.MigrationCapabilities, error) {
	return hypervisor.MigrationCapabilities{}, nil
}

func (f *libvirtFixture) MeasureDirtyRate(context.Context, string, time.Duration) (hypervisor.DirtyRate, error) {
	f.measured++
	return hypervisor.DirtyRate{BytesPerSecond: 40e6, Period: time.Second, Method: "page-sampling"}, nil
}

func (f *libvirtFixture) StartMigration(context.Context, string, hypervisor.MigrationParams) (hypervisor.MigrationJob, error) {
	return f, nil
}

func (f *libvirtFixture) Stats(context.Context) (hypervisor.JobStats, error) {
	s := f.stats[min(f.i, len(f.stats)-1)]
	f.i++
	return s, nil
}

func (f *libvirtFixture) Abort(context.Context) error                         { return nil }
func (f *libvirtFixture) SetMaxDowntime(context.Context, time.Duration) error { return nil }
func (f *libvirtFixture) SetMaxSpeed(context.Context, uint64) error           { return nil }
func (f *libvirtFixture) StartPostCopy(context.Context) error                 { return nil }
func (f *libvirtFixture) Done() <-chan struct{}                               { return f.done }
func (f *libvirtFixture) Result(context.Context) (hypervisor.MigrationResult, error) {
	return hypervisor.MigrationResult{}, nil
}

// recorder keeps every Progress the engine hands the policy.
type recorder struct {
	Policy
	seen []Progress
}

func (r *recorder) Decide(p Progress) Action {
	r.seen = append(r.seen, p)
	return r.Policy.Decide(p)
}

func TestJobDirtyRateUnmeasuredBeforeFirstSync(t *testing.T) {
	job := func(iter uint64, rate uint64, remaining uint64) hypervisor.JobStats {
		return hypervisor.JobStats{Type: hypervisor.JobUnbounded, Mode: hypervisor.ModePreCopy,
			MemoryIteration: hypervisor.Some(iter), MemoryDirtyRate: hypervisor.Some(rate),
			MemoryBps: hypervisor.Some[uint64](100e6), MemoryRemaining: hypervisor.Some(remaining),
			DataRemaining: hypervisor.Some(remaining), DataProcessed: hypervisor.Some(4e9 - remaining)}
	}
	f := &libvirtFixture{done: make(chan struct{}), stats: []hypervisor.JobStats{
		job(1, 0, 3.9e9), job(1, 0, 3.8e9), // libvirt: 0 before the first sync
		job(2, 60e6, 1e9), // QEMU's first sync computed a rate
	}}
	rec := &recorder{Policy: NewPolicy(PolicyOptions{})}
	clock := &manualClock{t: epoch}
	e, err := NewEngine(f, Request{Domain: "vm", Memory: 4e9, AllowAutoConverge: true},
		Options{Policy: rec, Clock: clock})
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	for range 3 {
		clock.t = clock.t.Add(500 * time.Millisecond)
		_, err := e.Step(context.Background())
		require.NoError(t, err)
	}
	require.Len(t, rec.seen, 4) // planning + three polls
	plan := rec.seen[0]
	assert.Equal(t, 40e6, plan.DirtyRateBefore.Value, "the pre-start page sampling")
	assert.False(t, plan.CanThrottle, "libvirt: no direct throttle, known before the start")
	for _, p := range rec.seen[1:3] {
		assert.False(t, p.DirtyRate.Valid, "the job's 0 before the first sync is no measurement")
		assert.Equal(t, 40e6, p.DirtyRateBefore.Value)
		assert.False(t, p.Probing, "no dirty-rate probes during a libvirt job")
	}
	assert.Equal(t, hypervisor.Some(60e6), rec.seen[3].DirtyRate, "measured once QEMU synced")
	// The first-pass decision rests on the pre-start rate, not on a zero.
	for _, d := range e.Result().Decisions {
		assert.NotContains(t, d.Action.Reason, "r=0.00")
	}
}

type manualClock struct{ t time.Time }

func (c *manualClock) Now() time.Time { return c.t }

// A 128 MiB guest whose page sampling reads 40 MB/s, on a 2 MiB/s link,
// with neither post-copy nor auto-converge allowed: the engine samples
// twice before the start and the policy gives up about 10 s into the
// first pass (64 s long), not after it. With post-copy allowed, or
// without a bandwidth hint, it takes one sample and waits for the first
// pass.
func TestHopelessRefusedInFirstPass(t *testing.T) {
	const mem, bw = 128 << 20, 2 << 20
	for _, tt := range []struct {
		name      string
		postCopy  bool
		hint      float64 // -1: none, the job's cap instead
		samples   int
		abortedBy time.Duration // 0 = no abort within 40 s
	}{
		{"nothing allowed", false, bw, 2, 12 * time.Second},
		{"post-copy allowed", true, bw, 1, 0},
		{"no bandwidth hint: one sample, no early verdict", false, 0, 1, 0},
		{"the bandwidth cap instead of a hint", false, -1, 2, 12 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stats []hypervisor.JobStats
			for i := range 200 {
				sent := uint64(i) * bw / 4
				stats = append(stats, hypervisor.JobStats{Type: hypervisor.JobUnbounded, Mode: hypervisor.ModePreCopy,
					MemoryIteration: hypervisor.Some[uint64](1), MemoryDirtyRate: hypervisor.Some[uint64](0),
					MemoryBps: hypervisor.Some[uint64](bw), MemoryRemaining: hypervisor.Some(mem - sent),
					DataRemaining: hypervisor.Some(mem - sent), DataProcessed: hypervisor.Some(sent)})
			}
			f := &libvirtFixture{done: make(chan struct{}), stats: stats}
			clock := &manualClock{t: epoch}
			req := Request{Domain: "vm", Memory: mem, BandwidthHint: tt.hint, AllowPostCopy: tt.postCopy}
			if tt.hint < 0 {
				req.BandwidthHint, req.Params.Bandwidth = 0, bw
			}
			e, err := NewEngine(f, req,
				Options{Policy: NewPolicy(PolicyOptions{}), Clock: clock})
			require.NoError(t, err)
			require.NoError(t, e.Start(context.Background()))
			assert.Equal(t, tt.samples, f.measured, "pre-start samples")
			var abortAt time.Duration
			var reason string
			for step := 1; step <= 160 && abortAt == 0; step++ {
				clock.t = clock.t.Add(250 * time.Millisecond)
				_, err := e.Step(context.Background())
				require.NoError(t, err)
				for _, d := range e.Result().Decisions {
					if d.Action.Kind == ActionAbort {
						abortAt, reason = time.Duration(step)*250*time.Millisecond, d.Action.Reason
					}
				}
			}
			if tt.abortedBy == 0 {
				assert.Zero(t, abortAt, reason)
				return
			}
			require.NotZero(t, abortAt, "no abort within 40 s")
			assert.LessOrEqual(t, abortAt, tt.abortedBy)
			assert.Contains(t, reason, "2× the bandwidth")
		})
	}
}

// Without a bandwidth hint the job's cap is the expected speed: a first
// pass it makes short (256 MiB at 64 MiB/s: 4 s) is not delayed by the 1 s
// pre-start measurement; a long one (at 8 MiB/s: 32 s) is measured.
func TestMeasurementWorthJudgedByTheCap(t *testing.T) {
	const mem = 256 << 20
	for _, tt := range []struct {
		name    string
		cap     uint64
		measure bool
	}{
		{"short first pass at the cap", 64 << 20, false},
		{"long first pass at the cap", 8 << 20, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &libvirtFixture{done: make(chan struct{}), stats: []hypervisor.JobStats{{Type: hypervisor.JobUnbounded, Mode: hypervisor.ModePreCopy}}}
			req := Request{Domain: "vm", Memory: mem, Params: hypervisor.MigrationParams{Bandwidth: tt.cap}}
			e, err := NewEngine(f, req, Options{Policy: NewPolicy(PolicyOptions{}), Clock: &manualClock{t: epoch}})
			require.NoError(t, err)
			require.NoError(t, e.Start(context.Background()))
			assert.Equal(t, tt.measure, f.measured > 0, "pre-start samples: %d", f.measured)
		})
	}
}
