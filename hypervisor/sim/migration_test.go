package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

const (
	KiB = 1 << 10
	MiB = 1 << 20
	GiB = 1 << 30
	MB  = 1000 * 1000
)

func maxThrottle(polls []hypervisor.JobStats) int64 {
	var m int64
	for _, p := range polls {
		m = max(m, p.AutoConvergeThrottle.Value)
	}
	return m
}

// TestMigrationPhysics checks the data plane against the fluid model of
// pre-copy (each pass sends what the previous one left dirty; c = 30 ms of
// switchover cost, QEMU's 300 ms downtime limit): who converges, in about
// what time, with what downtime.
func TestMigrationPhysics(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sc        scenario
		converges bool
		total     time.Duration // ±10 % when converging
		minIter   uint64
		throttle  int64 // highest auto-converge throttle
	}{
		{
			name:      "P1 idle converges in about M/B",
			sc:        scenario{memory: 4 * GiB, link: sim.Link{Bandwidth: 1150 * MB}, workload: sim.Workload{DirtyRate: 5 * MB, WorkingSet: 64 * MiB, ThrottleSensitivity: 1}},
			converges: true, total: 4 * time.Second, minIter: 2,
		},
		{
			name:      "P2 web tier r=0.43 converges",
			sc:        scenario{memory: 8 * GiB, link: sim.Link{Bandwidth: 115 * MB}, workload: sim.Workload{DirtyRate: 50 * MB, WorkingSet: 512 * MiB, ThrottleSensitivity: 1}},
			converges: true, total: 82 * time.Second, minIter: 5,
		},
		{
			name:      "P3 build box never converges: working set floor 18.7 s",
			sc:        scenario{memory: 8 * GiB, link: sim.Link{Bandwidth: 115 * MB}, workload: sim.Workload{DirtyRate: 150 * MB, WorkingSet: 2 * GiB, Shape: sim.ShapeSequential, ThrottleSensitivity: 1}, limit: 400 * time.Second},
			converges: false, minIter: 10,
		},
		{
			name: "P3 with auto-converge converges at 70 %",
			sc: scenario{memory: 8 * GiB, link: sim.Link{Bandwidth: 115 * MB}, workload: sim.Workload{DirtyRate: 150 * MB, WorkingSet: 2 * GiB, Shape: sim.ShapeSequential, ThrottleSensitivity: 1},
				params: hypervisor.MigrationParams{AutoConverge: true}},
			converges: true, total: 237 * time.Second, throttle: 70,
		},
		{
			name:      "r above 1 with the whole memory written never converges",
			sc:        scenario{memory: 2 * GiB, link: sim.Link{Bandwidth: 100 * MB}, workload: sim.Workload{DirtyRate: 200 * MB, ThrottleSensitivity: 1}, limit: 200 * time.Second},
			converges: false, minIter: 2,
		},
		{
			// The reference's fluid model adds every round's dirty bytes and
			// reaches 80 %; with the bitmap, pages already pending are not
			// newly dirty (QEMU counts only new bits), so 70 % does.
			name: "P7 memory hog with auto-converge needs 80 % (the reference model: 48 s at 80 %)",
			sc: scenario{memory: 8 * GiB, link: sim.Link{Bandwidth: 1150 * MB}, workload: sim.Workload{DirtyRate: 2000 * MB, WorkingSet: 4 * GiB, Shape: sim.ShapeSequential, ThrottleSensitivity: 1},
				params: hypervisor.MigrationParams{AutoConverge: true}},
			converges: true, total: 48 * time.Second, throttle: 80,
		},
		{
			name: "P8 I/O-driven dirtying: throttling cannot help",
			sc: scenario{memory: 16 * GiB, link: sim.Link{Bandwidth: 575 * MB}, workload: sim.Workload{DirtyRate: 800 * MB, WorkingSet: 8 * GiB, Shape: sim.ShapeSequential, ThrottleSensitivity: 0.2},
				params: hypervisor.MigrationParams{AutoConverge: true}, limit: 300 * time.Second},
			converges: false, throttle: 99,
		},
		{
			name: "P4 KV cache converges through a dip",
			sc: scenario{memory: 16 * GiB, link: sim.Link{Bandwidth: 575 * MB, Dips: []sim.Dip{{At: 20 * time.Second, Duration: 60 * time.Second, Factor: 0.5}}},
				workload: sim.Workload{DirtyRate: 450 * MB, WorkingSet: 12 * GiB, ThrottleSensitivity: 1}},
			converges: true, total: 129 * time.Second,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := runScenario(t, tc.sc)
			r := out.result
			total := r.Ended.Sub(r.Started)
			t.Logf("succeeded=%v T=%v downtime=%v sent=%.1f GB iterations=%d throttle=%d",
				r.Succeeded, total, r.Stats.Downtime.Value, float64(r.Stats.DataProcessed.Value)/1e9, r.Stats.MemoryIteration.Value, maxThrottle(out.polls))
			require.Equal(t, tc.converges, r.Succeeded, "converges")
			assert.GreaterOrEqual(t, r.Stats.MemoryIteration.Value, tc.minIter, "iterations")
			assert.Equal(t, tc.throttle, maxThrottle(out.polls), "highest throttle")
			if !tc.converges {
				require.ErrorIs(t, out.err, hypervisor.ErrMigrationAborted)
				assert.True(t, r.Aborted)
				info, err := out.src.Info(context.Background(), vmName)
				require.NoError(t, err)
				assert.Equal(t, hypervisor.StateRunning, info.State, "the source keeps running")
				return
			}
			require.NoError(t, out.err)
			assert.InEpsilon(t, tc.total.Seconds(), total.Seconds(), 0.1, "total time")
			// QEMU's rule ends close to the limit: at most limit + switchover cost.
			assert.LessOrEqual(t, r.Stats.Downtime.Value, 330*time.Millisecond, "downtime")
			assert.Positive(t, r.Stats.Downtime.Value)
			assert.GreaterOrEqual(t, r.Stats.DataProcessed.Value, r.Stats.DataTotal.Value, "every page sent at least once")
		})
	}
}

func p3Workload() sim.Workload {
	return sim.Workload{DirtyRate: 150 * MB, WorkingSet: 2 * GiB, Shape: sim.ShapeSequential, ThrottleSensitivity: 1}
}

// throttleSteps lists the distinct throttle values in poll order.
func throttleSteps(polls []hypervisor.JobStats) []int64 {
	var steps []int64
	for _, p := range polls {
		v := p.AutoConvergeThrottle.Value
		if len(steps) == 0 || steps[len(steps)-1] != v {
			steps = append(steps, v)
		}
	}
	return steps
}

func TestAutoConvergeSteps(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params hypervisor.MigrationParams
		want   []int64
	}{
		{"QEMU defaults 20 then +10", hypervisor.MigrationParams{AutoConverge: true}, []int64{0, 20, 30, 40, 50, 60, 70}},
		{"initial 40 increment 15", hypervisor.MigrationParams{AutoConverge: true, AutoConvergeInitial: 40, AutoConvergeIncrement: 15}, []int64{0, 40, 55, 70}},
		{"off: never throttles", hypervisor.MigrationParams{}, []int64{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := runScenario(t, scenario{memory: 8 * GiB, link: sim.Link{Bandwidth: 115 * MB}, workload: p3Workload(), params: tc.params, limit: 400 * time.Second})
			assert.Equal(t, tc.want, throttleSteps(out.polls))
		})
	}
}

func TestAutoConvergeCapsAt99(t *testing.T) {
	// Dirtying that throttling cannot slow: QEMU keeps stepping to 99 %.
	w := sim.Workload{DirtyRate: 800 * MB, WorkingSet: 8 * GiB, Shape: sim.ShapeSequential}
	out := runScenario(t, scenario{memory: 16 * GiB, link: sim.Link{Bandwidth: 575 * MB}, workload: w,
		params: hypervisor.MigrationParams{AutoConverge: true}, limit: 400 * time.Second})
	steps := throttleSteps(out.polls)
	assert.Equal(t, int64(99), steps[len(steps)-1])
	assert.Equal(t, []int64{0, 20, 30, 40, 50, 60, 70, 80, 90, 99}, steps)
	assert.False(t, out.result.Succeeded)
}

func TestThrottleSlowsDirtying(t *testing.T) {
	for _, tc := range []struct {
		name        string
		sensitivity float64
		factor      float64 // dirty rate after / before an 80 % throttle
	}{
		{"CPU-bound writer slows", 1, 0.2},
		{"half I/O-driven slows partly", 0.5, 0.6},
		{"I/O-driven dirtying does not", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			w := sim.Workload{DirtyRate: 300 * MB, WorkingSet: 6 * GiB, ThrottleSensitivity: tc.sensitivity}
			var out outcome
			var calc *sim.DirtyRateCalc
			var rates []uint64
			sc := scenario{memory: 8 * GiB, link: sim.Link{Bandwidth: 100 * MB}, workload: w, limit: 5 * time.Second,
				control: func(job hypervisor.MigrationJob, st hypervisor.JobStats) {
					if calc != nil {
						r, err := calc.Result(ctx)
						require.NoError(t, err)
						rates = append(rates, r.BytesPerSecond)
						calc = nil
					}
					switch len(rates) {
					case 1:
						require.NoError(t, job.(hypervisor.Throttler).SetThrottle(ctx, 80))
					case 2:
						return
					}
					var err error
					calc, err = out.src.StartDirtyRateCalc(ctx, vmName, 400*time.Millisecond)
					require.NoError(t, err)
				}}
			out = runScenarioWith(t, sc, &out)
			require.Len(t, rates, 2)
			assert.Equal(t, int64(80), maxThrottle(out.polls))
			assert.InEpsilon(t, tc.factor, float64(rates[1])/float64(rates[0]), 0.02)
		})
	}
}

func TestPostCopy(t *testing.T) {
	ctx := context.Background()
	var sawTarget, sawSource hypervisor.DomainInfo
	var switched bool
	sc := scenario{memory: 8 * GiB, link: sim.Link{Bandwidth: 115 * MB}, workload: p3Workload(), params: hypervisor.MigrationParams{PostCopy: true}}
	var out outcome
	sc.control = func(job hypervisor.MigrationJob, st hypervisor.JobStats) {
		if st.MemoryIteration.Value >= 2 && !switched {
			// After the first full pass, as the reference's hybrid.
			require.NoError(t, job.StartPostCopy(ctx))
			switched = true
			return
		}
		if switched && st.Mode == hypervisor.ModePostCopy && sawTarget.State == "" {
			require.ErrorIs(t, job.Abort(ctx), hypervisor.ErrInvalidState, "abort after post-copy started")
			sawTarget, _ = out.dst.Info(ctx, vmName)
			sawSource, _ = out.src.Info(ctx, vmName)
			assert.True(t, st.PostcopyRequests.Valid)
		}
	}
	out = runScenarioWith(t, sc, &out)
	r := out.result
	require.NoError(t, out.err)
	assert.True(t, r.Succeeded)
	assert.Equal(t, hypervisor.ModePostCopy, r.Mode)
	assert.Equal(t, 50*time.Millisecond, r.Stats.Downtime.Value, "post-copy downtime is the blackout")
	assert.Positive(t, r.Stats.PostcopyRequests.Value)
	// First pass M/B = 74.7 s, then the 2 GiB working set at B: 18.7 s.
	assert.InEpsilon(t, 93.5, r.Ended.Sub(r.Started).Seconds(), 0.05)
	assert.Less(t, r.Stats.DataProcessed.Value, uint64(11*GiB), "post-copy sends each page about once")
	assert.Equal(t, hypervisor.StateRunning, sawTarget.State)
	assert.Equal(t, hypervisor.ReasonPostcopy, sawTarget.Reason)
	assert.Equal(t, hypervisor.StatePaused, sawSource.State)
	assert.Equal(t, hypervisor.ReasonPostcopy, sawSource.Reason)

	info, err := out.dst.Info(ctx, vmName)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State)
	assert.Equal(t, hypervisor.ReasonMigrated, info.Reason)
	src, err := out.src.Info(ctx, vmName)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateShutoff, src.State)
	assert.Equal(t, hypervisor.ReasonMigrated, src.Reason)
}

// runScenarioWith runs sc, filling *out's hosts before the first control
// call so the control function can read them.
func runScenarioWith(t *testing.T, sc scenario, out *outcome) outcome {
	t.Helper()
	sc.onStart = func(src, dst *sim.Host) { out.src, out.dst = src, dst }
	return runScenario(t, sc)
}

func TestStartPostCopyNeedsPostCopyParam(t *testing.T) {
	ctx := context.Background()
	var err error
	runScenario(t, scenario{memory: GiB, link: sim.Link{Bandwidth: 100 * MB}, workload: sim.Workload{DirtyRate: 10 * MB, WorkingSet: 64 * MiB, ThrottleSensitivity: 1},
		control: func(job hypervisor.MigrationJob, st hypervisor.JobStats) {
			if err == nil {
				err = job.StartPostCopy(ctx)
			}
		}})
	require.ErrorIs(t, err, hypervisor.ErrInvalidState)
}

func TestAbort(t *testing.T) {
	ctx := context.Background()
	hog := sim.Workload{DirtyRate: 150 * MB, WorkingSet: 256 * MiB, Shape: sim.ShapeSequential, ThrottleSensitivity: 1}
	out := runScenario(t, scenario{memory: 512 * MiB, link: sim.Link{Bandwidth: 100 * MB}, workload: hog, limit: 10 * time.Second})
	require.ErrorIs(t, out.err, hypervisor.ErrMigrationAborted)
	r := out.result
	assert.True(t, r.Aborted)
	assert.False(t, r.Succeeded)
	assert.Equal(t, hypervisor.JobCancelled, r.Stats.Type)
	assert.Equal(t, "aborted", r.Reason)

	info, err := out.src.Info(ctx, vmName)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State)
	assert.Equal(t, hypervisor.ReasonBooted, info.Reason, "pre-copy never paused the guest")
	_, err = out.dst.Info(ctx, vmName)
	require.ErrorIs(t, err, hypervisor.ErrNotFound, "the incoming copy is gone")

	var kinds []hypervisor.EventKind
	for _, ev := range out.events {
		kinds = append(kinds, ev.Kind)
	}
	assert.Contains(t, kinds, hypervisor.EventMigrationIteration)
	assert.Contains(t, kinds, hypervisor.EventJobCompleted)

	// A new migration may start after the abort, and finish.
	job, err := out.src.StartMigration(ctx, vmName, hypervisor.MigrationParams{DestinationURI: "dst", Bandwidth: GiB, DowntimeLimit: 100 * time.Second})
	require.NoError(t, err)
	out.clock.Advance(10 * time.Second)
	res, err := job.Result(ctx)
	require.NoError(t, err)
	assert.True(t, res.Succeeded)
	require.ErrorIs(t, job.Abort(ctx), hypervisor.ErrNoJob)
	require.ErrorIs(t, job.SetMaxDowntime(ctx, time.Second), hypervisor.ErrNoJob)
}

func TestAbortDuringStopAndCopyResumesSource(t *testing.T) {
	ctx := context.Background()
	clock := sim.NewVirtualClock(epoch)
	src, dst := hostPair(t, clock, sim.Link{Bandwidth: 100 * MB})
	startDomain(t, src, 4*GiB, sim.Workload{})
	// A downtime limit so large the switchover starts at once; the stop
	// phase then takes M/B = 43 s.
	job, err := src.StartMigration(ctx, vmName, hypervisor.MigrationParams{DestinationURI: "dst", DowntimeLimit: time.Hour})
	require.NoError(t, err)
	clock.Advance(time.Second)
	info, err := src.Info(ctx, vmName)
	require.NoError(t, err)
	require.Equal(t, hypervisor.StatePaused, info.State)
	require.Equal(t, hypervisor.ReasonMigration, info.Reason)
	require.ErrorIs(t, src.Resume(ctx, vmName), hypervisor.ErrInvalidState, "resume while the final copy runs")
	require.NoError(t, job.Abort(ctx))
	info, err = src.Info(ctx, vmName)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State)
	assert.Equal(t, hypervisor.ReasonMigrationCancel, info.Reason)
	_, err = dst.Info(ctx, vmName)
	require.ErrorIs(t, err, hypervisor.ErrNotFound)
}

func TestDipStallsAndRecovers(t *testing.T) {
	link := sim.Link{Bandwidth: 100 * MB, Dips: []sim.Dip{{At: 2 * time.Second, Duration: 3 * time.Second, Factor: 0}}}
	out := runScenario(t, scenario{memory: GiB, link: link, poll: time.Second, workload: sim.Workload{}})
	require.True(t, out.result.Succeeded)
	// Polls at 1 s steps: nothing moves between 3 s and 5 s.
	require.Greater(t, len(out.polls), 6)
	assert.Equal(t, out.polls[2].DataProcessed.Value, out.polls[3].DataProcessed.Value, "no progress during the outage")
	assert.Zero(t, out.polls[3].MemoryBps.Value, "the transfer rate reads 0 during the outage")
	assert.Greater(t, out.polls[5].DataProcessed.Value, out.polls[4].DataProcessed.Value, "progress resumes")
	// 1 GiB at 100 MB/s is 10.7 s, plus the 3 s outage.
	assert.InEpsilon(t, 13.7, out.result.Ended.Sub(out.result.Started).Seconds(), 0.05)
}

func TestConcurrentMigrationsShareTheLink(t *testing.T) {
	ctx := context.Background()
	clock := sim.NewVirtualClock(epoch)
	src, _ := hostPair(t, clock, sim.Link{Bandwidth: 100 * MB})
	var jobs []hypervisor.MigrationJob
	for _, name := range []string{"a_vm", "b_vm"} {
		_, err := src.Define(ctx, sizedDomainXML(name, GiB, 1))
		require.NoError(t, err)
		require.NoError(t, src.Start(ctx, name, hypervisor.StartOptions{}))
		job, err := src.StartMigration(ctx, name, hypervisor.MigrationParams{DestinationURI: "dst"})
		require.NoError(t, err)
		jobs = append(jobs, job)
	}
	clock.Advance(2 * time.Second)
	for _, job := range jobs {
		st, err := job.Stats(ctx)
		require.NoError(t, err)
		assert.InEpsilon(t, 50*MB, float64(st.MemoryBps.Value), 0.01, "each gets half the link")
	}
	clock.Advance(30 * time.Second)
	for _, job := range jobs {
		res, err := job.Result(ctx)
		require.NoError(t, err)
		// Two 1 GiB guests over one 100 MB/s link: about 21.5 s each.
		assert.InEpsilon(t, 21.5, res.Ended.Sub(res.Started).Seconds(), 0.05)
	}
}

func TestMigrationDeterministic(t *testing.T) {
	// Bursty dirtying, auto-converge and a controller that steers: two runs
	// give identical polls and results.
	w := sim.Workload{DirtyRate: 400 * MB, WorkingSet: GiB, Shape: sim.ShapeBursty, BurstPeriod: 30 * time.Second,
		BurstDuration: 8 * time.Second, BurstFactor: 4.75, BurstSet: 8 * GiB, ThrottleSensitivity: 0.8}
	sc := scenario{memory: 32 * GiB, link: sim.Link{Bandwidth: 575 * MB, Dips: []sim.Dip{{At: 10 * time.Second, Duration: 5 * time.Second, Factor: 0.3}}},
		workload: w, params: hypervisor.MigrationParams{AutoConverge: true}, poll: 333 * time.Millisecond,
		control: func(job hypervisor.MigrationJob, st hypervisor.JobStats) {
			if st.MemoryIteration.Value == 4 {
				_ = job.SetMaxDowntime(context.Background(), 500*time.Millisecond)
			}
		}}
	a, b := runScenario(t, sc), runScenario(t, sc)
	require.True(t, a.result.Succeeded)
	assert.Equal(t, a.polls, b.polls)
	assert.Equal(t, a.result, b.result)
	assert.Equal(t, a.events, b.events)
}

func TestMigrationPersistAndUndefineSource(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name                    string
		persist, undefineSource bool
		sourceGone              bool
	}{
		{"transient target, source kept", false, false, false},
		{"persistent target, source undefined", true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := sim.NewVirtualClock(epoch)
			src, dst := hostPair(t, clock, sim.Link{})
			startDomain(t, src, 256*MiB, sim.Workload{})
			job, err := src.StartMigration(ctx, vmName, hypervisor.MigrationParams{DestinationURI: "dst", Persist: tc.persist, UndefineSource: tc.undefineSource})
			require.NoError(t, err)
			clock.Advance(5 * time.Second)
			_, err = job.Result(ctx)
			require.NoError(t, err)
			info, err := dst.Info(ctx, vmName)
			require.NoError(t, err)
			assert.Equal(t, tc.persist, info.Persistent)
			_, err = src.Info(ctx, vmName)
			if tc.sourceGone {
				require.ErrorIs(t, err, hypervisor.ErrNotFound)
			} else {
				require.NoError(t, err)
			}
		})
	}
}

func TestMigrationFailsWhenSourceDestroyed(t *testing.T) {
	ctx := context.Background()
	clock := sim.NewVirtualClock(epoch)
	src, dst := hostPair(t, clock, sim.Link{Bandwidth: 100 * MB})
	startDomain(t, src, 4*GiB, sim.Workload{})
	job, err := src.StartMigration(ctx, vmName, hypervisor.MigrationParams{DestinationURI: "dst"})
	require.NoError(t, err)
	clock.Advance(time.Second)
	require.NoError(t, src.Destroy(ctx, vmName))
	res, err := job.Result(ctx)
	require.ErrorIs(t, err, hypervisor.ErrMigrationFailed)
	assert.Equal(t, hypervisor.JobFailed, res.Stats.Type)
	_, err = dst.Info(ctx, vmName)
	require.ErrorIs(t, err, hypervisor.ErrNotFound)
}

func TestStartMigrationErrors(t *testing.T) {
	ctx := context.Background()
	clock := sim.NewVirtualClock(epoch)
	src, dst := hostPair(t, clock, sim.Link{})
	startDomain(t, src, GiB, sim.Workload{})
	lonely := sim.New(sim.Options{Name: "lonely", Clock: clock})
	_, err := lonely.Define(ctx, sizedDomainXML(vmName, GiB, 1))
	require.NoError(t, err)
	require.NoError(t, lonely.Start(ctx, vmName, hypervisor.StartOptions{}))
	_, err = dst.Define(ctx, sizedDomainXML(vmName, GiB, 1))
	require.NoError(t, err)
	require.NoError(t, dst.Start(ctx, vmName, hypervisor.StartOptions{}))

	for _, tc := range []struct {
		name   string
		host   *sim.Host
		params hypervisor.MigrationParams
		want   error
	}{
		{"no destination", src, hypervisor.MigrationParams{}, hypervisor.ErrInvalidArgument},
		{"unknown host", src, hypervisor.MigrationParams{DestinationURI: "nowhere"}, hypervisor.ErrInvalidArgument},
		{"same host", src, hypervisor.MigrationParams{DestinationURI: "src"}, hypervisor.ErrInvalidArgument},
		{"negative downtime", src, hypervisor.MigrationParams{DestinationURI: "dst", DowntimeLimit: -1}, hypervisor.ErrInvalidArgument},
		{"throttle above 99", src, hypervisor.MigrationParams{DestinationURI: "dst", AutoConvergeInitial: 120}, hypervisor.ErrInvalidArgument},
		{"no network", lonely, hypervisor.MigrationParams{DestinationURI: "dst"}, hypervisor.ErrNotSupported},
		{"already running on the target", src, hypervisor.MigrationParams{DestinationURI: "dst"}, hypervisor.ErrExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.host.StartMigration(ctx, vmName, tc.params)
			require.ErrorIs(t, err, tc.want)
			var de *hypervisor.DomainError
			require.ErrorAs(t, err, &de)
			assert.Equal(t, vmName, de.Domain)
		})
	}
	info, err := src.Info(ctx, vmName)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State, "refused migrations leave the source alone")
}

func TestMigrateThereAndBack(t *testing.T) {
	ctx := context.Background()
	clock := sim.NewVirtualClock(epoch)
	src, dst := hostPair(t, clock, sim.Link{})
	startDomain(t, src, GiB, sim.Workload{DirtyRate: 10 * MB, WorkingSet: 128 * MiB, ThrottleSensitivity: 1})
	hosts := []*sim.Host{src, dst}
	for i := range 4 {
		from, to := hosts[i%2], hosts[(i+1)%2]
		job, err := from.StartMigration(ctx, vmName, hypervisor.MigrationParams{DestinationURI: to.Name(), Persist: true})
		require.NoError(t, err, "hop %d", i)
		clock.Advance(5 * time.Second)
		res, err := job.Result(ctx)
		require.NoError(t, err, "hop %d", i)
		require.True(t, res.Succeeded)
		info, err := to.Info(ctx, vmName)
		require.NoError(t, err)
		assert.Equal(t, hypervisor.StateRunning, info.State)
		assert.Equal(t, hypervisor.ReasonMigrated, info.Reason)
		old, err := from.Info(ctx, vmName)
		require.NoError(t, err)
		assert.Equal(t, hypervisor.StateShutoff, old.State)
		assert.Equal(t, info.UUID, old.UUID)
	}
	// The workload moved with the guest.
	st, err := src.Stats(ctx, vmName)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, st.State)
	calc, err := src.StartDirtyRateCalc(ctx, vmName, time.Second)
	require.NoError(t, err)
	clock.Advance(time.Second)
	r, err := calc.Result(ctx)
	require.NoError(t, err)
	assert.Positive(t, r.BytesPerSecond)
}

func TestConcurrentUseOnTheRealClock(t *testing.T) {
	ctx := context.Background()
	src, dst := hostPair(t, sim.RealClock{}, sim.Link{Bandwidth: 200 * MB})
	done := make(chan error, 8)
	for i := range 8 {
		name := "default_vm" + string(rune('a'+i))
		go func() {
			done <- func() error {
				if _, err := src.Define(ctx, sizedDomainXML(name, 16*MiB, 1)); err != nil {
					return err
				}
				if err := src.Start(ctx, name, hypervisor.StartOptions{}); err != nil {
					return err
				}
				if err := src.SetWorkload(name, sim.Workload{DirtyRate: MB, ThrottleSensitivity: 1}); err != nil {
					return err
				}
				if i%2 == 0 {
					job, err := src.StartMigration(ctx, name, hypervisor.MigrationParams{DestinationURI: "dst"})
					if err != nil {
						return err
					}
					_, _ = job.Stats(ctx)
					rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					defer cancel()
					_, err = job.Result(rctx)
					return err
				}
				if err := src.Pause(ctx, name); err != nil {
					return err
				}
				if err := src.Resume(ctx, name); err != nil {
					return err
				}
				sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				return src.Shutdown(sctx, name)
			}()
		}()
	}
	for range 8 {
		require.NoError(t, <-done)
	}
	list, err := dst.List(ctx)
	require.NoError(t, err)
	assert.Len(t, list, 4, "four guests moved")
}

func TestPausedGuestStaysPaused(t *testing.T) {
	ctx := context.Background()
	for _, abort := range []bool{false, true} {
		clock := sim.NewVirtualClock(epoch)
		src, dst := hostPair(t, clock, sim.Link{Bandwidth: 100 * MB})
		startDomain(t, src, GiB, sim.Workload{})
		job, err := src.StartMigration(ctx, vmName, hypervisor.MigrationParams{DestinationURI: "dst"})
		require.NoError(t, err)
		clock.Advance(time.Second)
		require.NoError(t, src.Pause(ctx, vmName))
		if abort {
			require.NoError(t, job.Abort(ctx))
			info, err := src.Info(ctx, vmName)
			require.NoError(t, err)
			assert.Equal(t, hypervisor.StatePaused, info.State)
			assert.Equal(t, hypervisor.ReasonUser, info.Reason)
			continue
		}
		clock.Advance(20 * time.Second)
		_, err = job.Result(ctx)
		require.NoError(t, err)
		info, err := dst.Info(ctx, vmName)
		require.NoError(t, err)
		assert.Equal(t, hypervisor.StatePaused, info.State, "a paused guest arrives paused")
		assert.Equal(t, hypervisor.ReasonUser, info.Reason)
	}
}
