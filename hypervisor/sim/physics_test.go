package sim_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// A hot set smaller than bandwidth × downtime limit switches over right
// after the first pass, as the closed-form model and QEMU's bitmap say:
// pages still pending that the guest dirties again are one page, not two.
func TestHotSetUnderThresholdConvergesAfterOnePass(t *testing.T) {
	for _, shape := range []sim.Shape{sim.ShapeUniform, sim.ShapeSequential} {
		t.Run(string(shape), func(t *testing.T) {
			out := runScenario(t, scenario{
				memory: 4 * GiB, link: sim.Link{Bandwidth: 1000 * MB},
				// 100 MiB rewritten at 5 GB/s: far above B, but the set fits
				// under 1 GB/s × 300 ms.
				workload: sim.Workload{DirtyRate: 5000 * MB, WorkingSet: 100 * MiB, Shape: shape, ThrottleSensitivity: 1},
				limit:    120 * time.Second,
			})
			r := out.result
			require.True(t, r.Succeeded, "a 100 MiB hot set under a 300 MB threshold must converge: %v", out.err)
			total := r.Ended.Sub(r.Started)
			// M/B, then the tail of the first pass with the hot set once
			// or twice more; QEMU switches as soon as the pending data fits
			// the limit, so the pause is about the limit plus the 30 ms cost.
			assert.InDelta(t, 4.6, total.Seconds(), 0.4)
			assert.LessOrEqual(t, r.Stats.MemoryIteration.Value, uint64(6), "a few short rounds after the first pass")
			assert.LessOrEqual(t, r.Stats.Downtime.Value, 340*time.Millisecond)
		})
	}
}

// libvirt's face: no direct throttle, no dirty-rate calculation during the
// job, a job dirty rate of 0 until QEMU's first sync, capabilities to say so.
func TestLibvirtFace(t *testing.T) {
	ctx := context.Background()
	var sawZeroBeforeSync, sawRateAfterSync bool
	out := runScenario(t, scenario{
		host:   sim.Options{LibvirtFace: true},
		memory: 4 * GiB, link: sim.Link{Bandwidth: 500 * MB},
		workload: sim.Workload{DirtyRate: 100 * MB, WorkingSet: 1 * GiB, ThrottleSensitivity: 1},
		params:   hypervisor.MigrationParams{AutoConverge: true},
		onStart: func(src, _ *sim.Host) {
			caps, err := src.MigrationCapabilities(ctx)
			require.NoError(t, err)
			assert.Equal(t, hypervisor.MigrationCapabilities{StopCopyUncapped: true}, caps)
		},
		control: func(job hypervisor.MigrationJob, st hypervisor.JobStats) {
			_, ok := job.(hypervisor.Throttler)
			assert.False(t, ok, "libvirt's jobs have no direct throttle")
			rate, valid := st.MemoryDirtyRate.Get()
			require.True(t, valid, "libvirt always reports the field")
			if st.MemoryIteration.Value < 2 {
				sawZeroBeforeSync = sawZeroBeforeSync || rate == 0
				assert.Zero(t, rate, "0 before the first sync")
			} else if rate > 0 {
				sawRateAfterSync = true
			}
		},
	})
	require.True(t, out.result.Succeeded, "%v", out.err)
	assert.True(t, sawZeroBeforeSync)
	assert.True(t, sawRateAfterSync)

	full := sim.New(sim.Options{Name: "full"})
	caps, err := full.MigrationCapabilities(ctx)
	require.NoError(t, err)
	assert.True(t, caps.DirectThrottle)
	assert.True(t, caps.DirtyRateDuringJob)
}

func TestLibvirtFaceRefusesDirtyRateCalcDuringJob(t *testing.T) {
	ctx := context.Background()
	clock := sim.NewVirtualClock(epoch)
	src, _ := hostPairWith(t, clock, sim.Link{Bandwidth: 100 * MB}, sim.Options{LibvirtFace: true})
	startDomain(t, src, 2*GiB, sim.Workload{DirtyRate: 10 * MB})
	_, err := src.StartDirtyRateCalc(ctx, vmName, time.Second)
	require.NoError(t, err, "before the job the page sampling is fine")
	job, err := src.StartMigration(ctx, vmName, hypervisor.MigrationParams{DestinationURI: "dst"})
	require.NoError(t, err)
	_, err = src.StartDirtyRateCalc(ctx, vmName, time.Second)
	require.ErrorIs(t, err, hypervisor.ErrNotSupported)
	require.NoError(t, job.Abort(ctx))
}

// QEMU ≥ 9.2 syncs the bitmap every 5 s during a long pass once
// auto-converge has checked a period, so the throttle climbs within the
// pass; before 9.2 a long pass runs unthrottled to its end.
func TestAutoConvergeQEMU92BackgroundSync(t *testing.T) {
	run := func(schedule sim.AutoConvergeSchedule) (maxInPass int64, iterations uint64) {
		// Pass 1 takes 29 s, pass 2 about 20 s more (r = 1.5 over 12 GiB).
		out := runScenario(t, scenario{
			host:   sim.Options{AutoConvergeSchedule: schedule},
			memory: 16 * GiB, link: sim.Link{Bandwidth: 600 * MB},
			workload: sim.Workload{DirtyRate: 900 * MB, WorkingSet: 12 * GiB, ThrottleSensitivity: 1},
			params:   hypervisor.MigrationParams{AutoConverge: true},
			limit:    60 * time.Second,
			control: func(_ hypervisor.MigrationJob, st hypervisor.JobStats) {
				if st.Elapsed.Value < 50*time.Second {
					maxInPass = max(maxInPass, st.AutoConvergeThrottle.Value)
					iterations = max(iterations, st.MemoryIteration.Value)
				}
			},
		})
		_ = out
		return maxInPass, iterations
	}
	legacyThr, legacyIter := run(sim.AutoConvergeLegacy)
	newThr, newIter := run(sim.AutoConvergeQEMU92)
	t.Logf("first 50 s: legacy throttle %d%% after %d syncs; 9.2 throttle %d%% after %d syncs", legacyThr, legacyIter, newThr, newIter)
	assert.Greater(t, newIter, legacyIter, "background syncs")
	assert.Greater(t, newThr, legacyThr, "the throttle climbs during the long pass")
}

// Zero pages are in the remaining data until the first pass reaches them,
// as QEMU counts them, take no bandwidth, and are reported as constant
// memory once reached.
func TestZeroPagesRemainUntilTheFirstPassReachesThem(t *testing.T) {
	out := runScenario(t, scenario{
		memory: 1 * GiB, link: sim.Link{Bandwidth: 100 * MiB},
		workload: sim.Workload{ZeroMemory: 768 * MiB},
		poll:     100 * time.Millisecond,
		limit:    60 * time.Second,
	})
	require.True(t, out.result.Succeeded, out.err)
	first := out.polls[0]
	assert.Greater(t, first.DataRemaining.Value, uint64(900*MiB), "the zero pages are still to be sent")
	var half hypervisor.JobStats
	for _, st := range out.polls {
		if st.DataProcessed.Value >= 128*MiB {
			half = st
			break
		}
	}
	require.True(t, half.MemoryConstant.Valid)
	// Half the data sent: half the zero pages reached, the other half
	// still remaining.
	assert.InDelta(t, 384*MiB, float64(half.MemoryConstant.Value), float64(40*MiB))
	assert.InDelta(t, 512*MiB, float64(half.DataRemaining.Value), float64(60*MiB))
	st := out.result.Stats
	assert.InDelta(t, 768*MiB, float64(st.MemoryConstant.Value), float64(MiB), "every zero page reached by the end")
	assert.Less(t, st.DataProcessed.Value, uint64(300*MiB), "only the data pages cost bandwidth")
	assert.Less(t, out.result.Ended.Sub(out.result.Started), 4*time.Second, "256 MiB of data at 100 MiB/s, not 1 GiB")
}

// Zero memory at the end of guest memory: the first pass reaches it only
// once the data is sent, and then skips all of it at once.
func TestZeroMemoryAtEndIsReachedAfterTheData(t *testing.T) {
	out := runScenario(t, scenario{
		memory: 1 * GiB, link: sim.Link{Bandwidth: 100 * MiB},
		workload: sim.Workload{ZeroMemory: 768 * MiB, ZeroMemoryAtEnd: true},
		poll:     100 * time.Millisecond,
		limit:    60 * time.Second,
	})
	require.True(t, out.result.Succeeded, out.err)
	for _, st := range out.polls {
		if st.DataProcessed.Value < 250*MiB {
			assert.Zero(t, st.MemoryConstant.Value, "no zero page reached before the data is sent")
			assert.Greater(t, st.DataRemaining.Value, uint64(768*MiB))
		}
	}
	assert.InDelta(t, 768*MiB, float64(out.result.Stats.MemoryConstant.Value), float64(MiB))
	assert.Less(t, out.result.Ended.Sub(out.result.Started), 4*time.Second)
}

// Under a max-speed cap QEMU checks its switchover rule once per 100 ms
// rate-limit window: a bitmap sync that leaves the pass running happens
// on that grid.
func TestCappedJobChecksTheSwitchoverOncePerWindow(t *testing.T) {
	out := runScenario(t, scenario{
		memory: 256 * MiB, link: sim.Link{Bandwidth: 1 * GiB},
		workload: sim.Workload{DirtyRate: 8 * MiB, WorkingSet: 32 * MiB, Shape: sim.ShapeSequential, ThrottleSensitivity: 1},
		params:   hypervisor.MigrationParams{Bandwidth: 16 * MiB},
		poll:     100 * time.Millisecond,
		limit:    120 * time.Second,
	})
	require.True(t, out.result.Succeeded, out.err)
	var syncs []time.Duration
	for _, ev := range out.events {
		if ev.Kind == hypervisor.EventMigrationIteration {
			syncs = append(syncs, ev.Time.Sub(out.result.Started))
		}
	}
	require.Greater(t, len(syncs), 3, "a few passes before the switchover")
	// The last two are the sync that found the rest small enough and the
	// stop-and-copy's; each sync before ended a pass in mid-window or on
	// the grid. Those that left data pending are on the 100 ms grid.
	onGrid := 0
	for _, at := range syncs[:len(syncs)-2] {
		if at%(100*time.Millisecond) == 0 {
			onGrid++
		}
	}
	assert.Equal(t, len(syncs)-2, onGrid, "syncs at %v", syncs)
}

// Under a max-speed cap each rate-limit window's budget leaves at the
// link's speed as the window opens; the job then waits for the next.
func TestCappedJobSendsEachWindowsBudgetInABurst(t *testing.T) {
	out := runScenario(t, scenario{
		memory: 256 * MiB, link: sim.Link{Bandwidth: 1 * GiB},
		params: hypervisor.MigrationParams{Bandwidth: 16 * MiB},
		poll:   10 * time.Millisecond,
		limit:  60 * time.Second,
	})
	require.True(t, out.result.Succeeded, out.err)
	budget := 16 * MiB / 10.0
	bursts, waits := 0, 0
	for i := 1; i < len(out.polls) && out.polls[i].MemoryIteration.Value == 1; i++ {
		d := float64(out.polls[i].DataProcessed.Value) - float64(out.polls[i-1].DataProcessed.Value)
		switch {
		case d == 0:
			waits++
		case math.Abs(d-budget) < 0.01*budget:
			bursts++
		default:
			t.Fatalf("poll %d: %.0f bytes in 10 ms, want 0 or the window's %.0f", i, d, budget)
		}
	}
	assert.Greater(t, bursts, 100)
	assert.InDelta(t, 9, float64(waits)/float64(bursts), 0.5, "one 10 ms burst per 100 ms window")
}

// remainingAtSecondPass is the data remaining at the first poll of the
// second iteration.
func remainingAtSecondPass(t *testing.T, out outcome) float64 {
	t.Helper()
	for _, st := range out.polls {
		if st.MemoryIteration.Value == 2 {
			return float64(st.DataRemaining.Value)
		}
	}
	t.Fatal("no poll saw the second iteration")
	return 0
}

// A working set at the top of memory is what the first pass sends last, so
// what that pass leaves at its sync lies in the working set; a sequential
// writer's trail since the start is disjoint from it. With the working set
// spread, the leftover comes from every part of memory and the writer's
// trail covers part of it.
func TestWorkingSetAtEndHoldsTheFirstPassLeftover(t *testing.T) {
	run := func(atEnd bool) outcome {
		return runScenario(t, scenario{
			memory: 256 * MiB, link: sim.Link{Bandwidth: 1 * GiB},
			workload: sim.Workload{DirtyRate: 4 * MiB, WorkingSet: 64 * MiB, Shape: sim.ShapeSequential, ThrottleSensitivity: 1,
				ZeroMemory: 117 * MiB, ZeroMemoryAtEnd: true, WorkingSetAtEnd: atEnd},
			params: hypervisor.MigrationParams{Bandwidth: 32 * MiB},
			poll:   10 * time.Millisecond,
			limit:  60 * time.Second,
		})
	}
	atEnd, spread := run(true), run(false)
	require.True(t, atEnd.result.Succeeded, atEnd.err)
	require.True(t, spread.result.Succeeded, spread.err)
	// The first pass sends 139 MiB of data in about 4.3 s: the writer's
	// trail is about 17 MiB, and QEMU's rule lets a pass end with up to
	// 32 MiB/s × 300 ms = 9.6 MiB pending, less one 3.2 MiB window.
	trail := 4 * MiB * 4.3
	assert.Greater(t, remainingAtSecondPass(t, atEnd), trail+5*MiB, "the leftover adds to the trail")
	assert.Less(t, remainingAtSecondPass(t, atEnd), trail+10*MiB)
	assert.Less(t, remainingAtSecondPass(t, spread), remainingAtSecondPass(t, atEnd)-3*MiB)
}

// A sequential writer dirties the pages after those it dirtied before:
// what a sync leaves pending and what is dirtied next do not overlap until
// together they fill the working set, so each pass starts with what the
// last one left plus the writer's whole trail since.
func TestSequentialWriterDirtiesPastWhatIsPending(t *testing.T) {
	const rate = 8 * MiB
	out := runScenario(t, scenario{
		memory: 256 * MiB, link: sim.Link{Bandwidth: 1 * GiB},
		workload: sim.Workload{DirtyRate: rate, WorkingSet: 32 * MiB, Shape: sim.ShapeSequential, ThrottleSensitivity: 1},
		params:   hypervisor.MigrationParams{Bandwidth: 16 * MiB},
		poll:     10 * time.Millisecond,
		limit:    60 * time.Second,
	})
	require.True(t, out.result.Succeeded, out.err)
	syncAt := map[uint64]time.Time{}
	for _, ev := range out.events {
		if ev.Kind == hypervisor.EventMigrationIteration {
			syncAt[uint64(ev.Iteration)] = ev.Time
		}
	}
	var prev hypervisor.JobStats
	checked := 0
	for _, st := range out.polls {
		it := prev.MemoryIteration.Value
		if it >= 3 && st.MemoryIteration.Value == it+1 && st.Type == hypervisor.JobUnbounded {
			left := float64(prev.DataRemaining.Value)
			start := float64(st.DataRemaining.Value) + float64(st.DataProcessed.Value-prev.DataProcessed.Value)
			trail := rate * syncAt[it+1].Sub(syncAt[it]).Seconds()
			assert.InDelta(t, trail, start-left, rate*0.01, "iteration %d: the trail of %.2f MiB adds in full", it+1, trail/MiB)
			checked++
		}
		prev = st
	}
	assert.GreaterOrEqual(t, checked, 3)
}
