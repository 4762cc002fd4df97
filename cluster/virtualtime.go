package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"time"

	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit/hypervisor/sim"
)

// ErrNotVirtual is returned by [Cluster.Advance] when Options.Clock cannot
// be stepped (it is not a *sim.VirtualClock or another [Stepper]).
var ErrNotVirtual = errors.New("cluster clock is not a virtual clock")

// ErrNotStarted is returned by [Cluster.Settle] and [Cluster.Advance]
// before [Cluster.Start] was called.
var ErrNotStarted = errors.New("cluster not started")

// Stepper is a virtual clock [Cluster.Advance] can drive one due instant at
// a time; *sim.VirtualClock is one.
type Stepper interface {
	clock.WithTicker
	// Step moves the clock to the earliest due time not after limit and
	// fires what is due then; when nothing is due by limit it moves the
	// clock to limit and returns false.
	Step(limit time.Time) bool
}

// oneStepper is a [Stepper] that can fire one due timer at a time
// (*sim.VirtualClock); a seeded cluster steps it that way.
type oneStepper interface {
	StepOne(limit time.Time) bool
}

// step fires what is due at the earliest instant not after limit: on a
// seeded cluster whose clock can, one timer only, so that the work each
// timer wakes settles before the next timer of the same instant fires.
func (c *Cluster) step(st Stepper, limit time.Time) bool {
	if one, ok := st.(oneStepper); ok && c.opts.Seed != 0 {
		return one.StepOne(limit)
	}
	return st.Step(limit)
}

// Clock is the cluster's clock (Options.Clock, or the real clock).
func (c *Cluster) Clock() clock.WithTicker { return c.opts.Clock }

// Settle returns once the cluster has nothing left to do at the current
// time: everything due on a virtual clock at this instant has fired and no
// goroutine of the process is running or ready to run except the caller,
// so every work queue is drained (or its workers wait on the clock) and
// nothing is in flight between components (a store watch event, a
// hypervisor event, a guest-agent reply). What remains waits for the clock:
// requeues, backoff, heartbeats, polls, simulated boots, migration steps,
// and reconciles that wait for one of those.
//
// On a virtual clock nothing then happens until [Cluster.Advance], so a
// scenario reads: Apply, Settle, Advance, Settle, ... and runs as fast as
// the CPU allows, the same way every time. On the real clock Settle is a
// snapshot: timers keep firing on their own.
//
// Quiescence is judged for the whole process (the Go scheduler's own
// counts of running and runnable goroutines), so a busy goroutine outside
// the cluster delays Settle until it blocks. Work waiting on a real timer
// or on bytes in a real socket is invisible to it: a virtual-time cluster
// keeps such waits out of its path (the simulated hosts and the memory
// store have none). A goroutine in a system call or cgo call counts as
// running, so a process with one parked there (a libvirt event loop)
// settles only when ctx ends; those already parked outside Go when
// [Cluster.Start] was called (a CPU profile's writer under go test
// -cpuprofile) are not waited for.
func (c *Cluster) Settle(ctx context.Context) error {
	st, _ := c.opts.Clock.(Stepper)
	samples := []metrics.Sample{
		{Name: "/sched/goroutines/runnable:goroutines"},
		{Name: "/sched/goroutines/running:goroutines"},
		{Name: "/sched/goroutines/not-in-go:goroutines"},
	}
	for busy := 0; ; {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("settle: %w", err)
		}
		if c.quiet(samples) {
			if !c.started.Load() {
				return ErrNotStarted
			}
			// Due now (a zero delay, a tick landing on this instant):
			// fire it and settle what it woke.
			if st != nil && c.step(st, st.Now()) {
				busy = 0
				continue
			}
			return nil
		}
		// Let the busy goroutines run; back off to a short sleep when
		// they take a while, so waiting costs no CPU.
		busy++
		if busy < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// quiet reports whether nothing in the cluster (and nothing else in the
// process) can make progress without the clock. The idle check is
// repeated: a goroutine woken between two reads shows up in the next.
func (c *Cluster) quiet(samples []metrics.Sample) bool {
	for range 3 {
		metrics.Read(samples)
		runnable, running, syscall := samples[0].Value.Uint64(), samples[1].Value.Uint64(), samples[2].Value.Uint64()
		if runnable != 0 || running > 1 || syscall > c.outsideGoBaseline.Load() {
			return false
		}
		runtime.Gosched()
	}
	return true
}

// Advance moves the cluster's virtual clock forward by d. It settles the
// cluster ([Cluster.Settle]), fires what falls due next, settles again, and
// so on, so every component sees each instant it asked for (a heartbeat, a
// requeue, a migration poll) in order. It fails with [ErrNotVirtual] unless
// Options.Clock is a [Stepper] such as *sim.VirtualClock.
func (c *Cluster) Advance(ctx context.Context, d time.Duration) error {
	st, ok := c.opts.Clock.(Stepper)
	if !ok {
		return fmt.Errorf("advance: %w (Options.Clock is %T)", ErrNotVirtual, c.opts.Clock)
	}
	target := st.Now().Add(d)
	for {
		if err := c.Settle(ctx); err != nil {
			return err
		}
		if !c.step(st, target) {
			return nil
		}
	}
}

// simClock is the clock of the default simulated hosts: the cluster's own
// when it can schedule functions (the real clock, sim.VirtualClock,
// k8s.io/utils/clock/testing's FakeClock), else the real clock.
func simClock(c clock.WithTicker) sim.Clock {
	if sc, ok := c.(sim.Clock); ok {
		return sc
	}
	return sim.RealClock{}
}

// defaultWorkers is the default number of workers per built-in controller
// on clk. On a virtual clock it is one: the order in which a controller's
// workers take keys decides outcomes (the placement of VMIs created in the
// same instant depends on which was placed first), and only one worker
// takes them in the same order on every run. Virtual time costs no wall
// time waiting, so a single worker loses little.
func defaultWorkers(clk clock.WithTicker) int {
	if _, ok := clk.(Stepper); ok {
		return 1
	}
	return 4
}

// outsideGo is how many goroutines stay outside Go (in a system call or
// parked in the runtime like a CPU profile's writer) across a few samples:
// the least seen, so a goroutine passing through a short system call does
// not count.
func outsideGo() uint64 {
	sample := []metrics.Sample{{Name: "/sched/goroutines/not-in-go:goroutines"}}
	least := uint64(math.MaxUint64)
	for range 5 {
		metrics.Read(sample)
		least = min(least, sample[0].Value.Uint64())
		runtime.Gosched()
	}
	return least
}
