package migration_test

import (
	"context"
	"fmt"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/migration"
)

// A 16 GiB guest dirtying 575 MB/s on 10 GbE (r = 0.5): six rounds, about
// twice the lower bound M/B. With a 2 GiB writable working set the first
// pass leaves only 2 GiB dirty and pre-copy ends far sooner.
func ExamplePredict() {
	in := migration.ModelInput{
		Memory:    16 << 30,
		Bandwidth: 1.15e9,
		DirtyRate: 575e6,
	}
	p, _ := migration.Predict(in)
	fmt.Printf("converges=%t rounds=%d total=%.1fs (%.2f × M/B) downtime=%v\n",
		p.Converges, p.Iterations, p.Total.Seconds(), p.Total.Seconds()/p.LowerBound.Seconds(), p.Downtime.Round(time.Millisecond))

	in.WorkingSet = 2 << 30
	p, _ = migration.Predict(in)
	fmt.Printf("with a 2 GiB working set: rounds=%d total=%.1fs\n", p.Iterations, p.Total.Seconds())

	// Dirtying faster than the link, into a working set too big for the
	// downtime limit: pre-copy never ends; a throttle above 42 % would fix it.
	in.DirtyRate = 2e9
	p, _ = migration.Predict(in)
	fmt.Printf("converges=%t minThrottle=%d%% postCopyTotal=%.1fs\n", p.Converges, p.MinThrottle, p.PostCopyTotal.Seconds())
	// Output:
	// converges=true rounds=6 total=29.6s (1.98 × M/B) downtime=233ms
	// with a 2 GiB working set: rounds=4 total=18.4s
	// converges=false minThrottle=43% postCopyTotal=16.8s
}

// The virtkit policy on a memory hog with neither throttling nor post-copy
// allowed: with three quarters of the memory sent for nothing it aborts,
// with the inequality that fails. KubeVirt's rules wait for the completion budget instead.
func ExamplePolicy_decide() {
	p := migration.Progress{
		Phase:           migration.PhasePreCopy,
		Elapsed:         5 * time.Second,
		Memory:          8 << 30,
		DirtyRateBefore: hypervisor.Some(2e9),
		BandwidthAvg:    hypervisor.Some(1.15e9),
		BandwidthBest:   hypervisor.Some(1.15e9),
		Remaining:       hypervisor.Some(uint64(2 << 30)),
		DataSent:        hypervisor.Some(uint64(6 << 30)),
		DowntimeLimit:   250 * time.Millisecond,
		Probing:         true, // dirty-rate samples during the job
	}
	var virtkit migration.Policy = migration.NewPolicy(migration.PolicyOptions{})
	a := virtkit.Decide(p)
	fmt.Println(a.Kind+":", a.Reason)

	var kubevirt migration.Policy = migration.NewKubeVirtPolicy(migration.KubeVirtOptions{})
	fmt.Println(kubevirt.Decide(p).Kind)
	p.Elapsed = 1351 * time.Second
	a = kubevirt.Decide(p)
	fmt.Println(a.Kind+":", a.Reason)
	// Output:
	// Abort: pre-copy cannot converge: dirty rate 2.00 GB/s exceeds bandwidth 1.15 GB/s (r=1.74) and what a pass leaves dirty (8.59 GB) exceeds bandwidth × downtime limit (287.5 MB); throttling is not allowed; post-copy is not allowed
	// Continue
	// Abort: live migration is not completed after 1350 s
}

// simProbe lets the engine measure on the simulator without blocking the
// goroutine that drives the virtual clock.
type simProbe struct{ h *sim.Host }

func (p simProbe) StartDirtyRateProbe(ctx context.Context, name string, period time.Duration) (migration.PendingDirtyRate, error) {
	return p.h.StartDirtyRateCalc(ctx, name, period)
}

// The engine driving the simulated hypervisor on a virtual clock: Start,
// then advance the clock one poll interval and Step, until the end. The
// guest rewrites a 2 GiB ring faster than the 1 GbE link can carry it;
// with auto-converge allowed the engine throttles it at the first poll.
func ExampleEngine() {
	ctx := context.Background()
	clock := sim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	src := sim.New(sim.Options{Name: "src", Clock: clock})
	dst := sim.New(sim.Options{Name: "dst", Clock: clock})
	if err := sim.NewNetwork().Connect(src, dst, sim.Link{Bandwidth: 115_000_000}); err != nil {
		fmt.Println(err)
		return
	}
	const name = "default_build"
	_, _ = src.Define(ctx, `<domain type='qemu'><name>default_build</name><memory unit='GiB'>8</memory><vcpu>4</vcpu></domain>`)
	_ = src.Start(ctx, name, hypervisor.StartOptions{})
	_ = src.SetWorkload(name, sim.Workload{DirtyRate: 150_000_000, WorkingSet: 2 << 30, Shape: sim.ShapeSequential, ThrottleSensitivity: 1})

	engine, err := migration.NewEngine(src, migration.Request{
		Domain:            name,
		Memory:            8 << 30,
		Params:            hypervisor.MigrationParams{DestinationURI: "dst"},
		AllowAutoConverge: true,
	}, migration.Options{Clock: clock, Probe: simProbe{src}})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := engine.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	for done := false; !done; {
		clock.Advance(engine.PollInterval())
		if done, err = engine.Step(ctx); err != nil {
			fmt.Println(err)
			return
		}
	}
	r := engine.Result()
	fmt.Println(r.Outcome, r.Mode, r.Reason)
	for _, d := range r.Decisions {
		if d.Action.Kind == migration.ActionThrottle {
			fmt.Printf("at %v: throttle %d%%\n", d.Elapsed, d.Action.ThrottlePercent)
		}
	}
	fmt.Println("within 1.3 × M/B:", r.Total.Seconds() < 1.3*float64(8<<30)/115e6)
	// Output:
	// Succeeded PreCopy completed: PreCopyThrottled
	// at 250ms: throttle 85%
	// within 1.3 × M/B: true
}

// KubeVirt's stall detector as a baseline: it watches every iteration and,
// once the remaining data has not fallen for 40 s, forces the switchover at
// a local minimum or aborts early.
func ExampleNewStallPolicy() {
	stall := migration.NewStallPolicy(migration.StallOptions{})
	p := migration.Progress{Phase: migration.PhasePreCopy, Memory: 8 << 30,
		BandwidthAvg: hypervisor.Some(100e6), DowntimeLimit: 300 * time.Millisecond}
	for i := 1; i <= 6; i++ {
		p.Elapsed = time.Duration(i) * 10 * time.Second
		p.Iteration = hypervisor.Some(uint64(i + 1))
		p.Remaining = hypervisor.Some(uint64(2e9)) // a floor: 20 s at 100 MB/s
		if a := stall.Decide(p); a.Strategic() {
			fmt.Printf("%v: %s: %s\n", p.Elapsed, a.Kind, a.Reason)
			break
		}
	}
	// Output:
	// 50s: Abort: stalled: the implied pause 20s exceeds 1.5 × 900ms and post-copy is not allowed: abort early
}
