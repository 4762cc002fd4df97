package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/store"
)

// ChurnOptions configure [MeasureChurn].
type ChurnOptions struct {
	// VMs (default 1000) on Nodes simulated hosts (default 4), Workers per
	// controller and node agent (default 8), CreateConcurrency creates at
	// once (default 16), as in [ScaleOptions].
	VMs, Nodes, Workers, CreateConcurrency int
	// Duration is the virtual time the churn runs for (default 1 h).
	Duration time.Duration
	// Interval is the churn's period (default 1 min): at the start of each,
	// RestartRate of the VMs are restarted and MigrateRate of them live
	// migrated (fractions of VMs, each 0.01 by default; negative for none).
	Interval                 time.Duration
	RestartRate, MigrateRate float64
	// Resolution is how far the virtual clock moves before the cluster is
	// settled again (default 1 s): timers falling due inside one step fire
	// at their due time, the work they wake runs when the step ends, as a
	// busy host serves timers late. Negative settles at every due instant
	// ([Cluster.Advance]), which costs a settle per timer instant.
	Resolution time.Duration
	// Seed picks the VMs each period (default 1).
	Seed uint64
}

func (o ChurnOptions) withDefaults() ChurnOptions {
	if o.VMs <= 0 {
		o.VMs = 1000
	}
	if o.Nodes <= 0 {
		o.Nodes = 4
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.CreateConcurrency <= 0 {
		o.CreateConcurrency = 16
	}
	if o.Duration == 0 {
		o.Duration = time.Hour
	}
	if o.Interval <= 0 {
		o.Interval = time.Minute
	}
	if o.RestartRate == 0 {
		o.RestartRate = 0.01
	}
	if o.MigrateRate == 0 {
		o.MigrateRate = 0.01
	}
	if o.Resolution == 0 {
		o.Resolution = time.Second
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	return o
}

// Validate reports malformed options with the field name.
func (o ChurnOptions) Validate() error {
	switch {
	case o.Duration < 0:
		return fmt.Errorf("duration: %v is negative", o.Duration)
	case o.RestartRate > 1 || o.MigrateRate > 1:
		return fmt.Errorf("restartRate, migrateRate: %v, %v: want a fraction of the VMs, at most 1", o.RestartRate, o.MigrateRate)
	case o.RestartRate+o.MigrateRate > 1:
		return fmt.Errorf("restartRate + migrateRate: %v: more than every VM", o.RestartRate+o.MigrateRate)
	}
	return nil
}

// ChurnResult is what one churn run measured.
type ChurnResult struct {
	VMs, Nodes int
	// RunningWall is the wall time from the first create to the last VMI
	// Running on the virtual clock, RunningVirtual the virtual time it took.
	RunningWall, RunningVirtual time.Duration
	// Virtual is the churned virtual time, Wall the wall time it took, and
	// Speed Virtual/Wall (above 1: faster than real time).
	Virtual, Wall time.Duration
	Speed         float64
	// Restarts asked (actions.Restart accepted), RestartsDone of them whose
	// new VMI reached Running by the end; Migrations created, and of them
	// MigrationsSucceeded and MigrationsFailed by the end. Refused counts
	// the actions the library refused (the VM was busy: a restart queued,
	// a migration in flight); Busy the picks skipped because this run
	// still had an operation in flight on that VM.
	Restarts, RestartsDone                            int
	Migrations, MigrationsSucceeded, MigrationsFailed int
	Refused, Busy                                     int
	// CPU is the process's CPU time over the churn; PeakRSS the peak
	// resident set of the whole run (0 when unknown).
	CPU     time.Duration
	PeakRSS uint64
}

// MeasureChurn brings a fleet of VMs to Running on a virtual clock, then
// advances it Duration of virtual time while restarting and live migrating
// a share of the VMs every Interval through the library (actions.Restart
// and actions.Migrate, as a user would), and reports how long that took in
// wall time and how many operations completed. It is the churn benchmark
// behind `virtkit bench scale --churn-duration`.
func MeasureChurn(ctx context.Context, o ChurnOptions) (ChurnResult, error) {
	if err := o.Validate(); err != nil {
		return ChurnResult{}, err
	}
	o = o.withDefaults()
	rssReset := resetPeakRSS()
	clk := sim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	hosts, err := churnHosts(clk, o.VMs/o.Nodes+1)
	if err != nil {
		return ChurnResult{}, err
	}
	c, err := New(Options{Clock: clk, Nodes: o.Nodes, Workers: o.Workers, NodeAgent: nodeAgentForScale(o.Workers), NewHypervisor: hosts})
	if err != nil {
		return ChurnResult{}, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- c.Start(runCtx) }()
	defer func() { stop(); <-done }()
	if err := c.Settle(ctx); err != nil {
		return ChurnResult{}, err
	}

	t := newChurnTracker()
	wctx, cancelWatch := context.WithCancel(ctx)
	defer cancelWatch()
	if err := t.watch(wctx, c.Store()); err != nil {
		return ChurnResult{}, err
	}
	r := ChurnResult{VMs: o.VMs, Nodes: o.Nodes}

	// The fleet: create every VM, then move the clock until all run.
	start, vstart := time.Now(), clk.Now()
	names := make([]string, o.VMs)
	for i := range names {
		names[i] = fmt.Sprintf("vm-%06d", i)
	}
	if err := forEach(ctx, names, o.CreateConcurrency, func(ctx context.Context, name string) error {
		return c.Apply(ctx, scaleVM(name))
	}); err != nil {
		return r, err
	}
	for t.running() < o.VMs {
		if clk.Now().Sub(vstart) > time.Hour {
			return r, fmt.Errorf("%d of %d VMs running after an hour of virtual time", t.running(), o.VMs)
		}
		if err := advanceBy(ctx, c, clk, o.Resolution, o.Resolution); err != nil {
			return r, err
		}
	}
	r.RunningWall, r.RunningVirtual = time.Since(start), clk.Now().Sub(vstart)

	rng := rand.New(rand.NewPCG(o.Seed, o.Seed))
	restarts, migrations := int(o.RestartRate*float64(o.VMs)), int(o.MigrateRate*float64(o.VMs))
	cpu0, start, vstart := processCPU(), time.Now(), clk.Now()
	for clk.Now().Sub(vstart) < o.Duration {
		if err := churnOnce(ctx, c.Store(), t, rng, names, restarts, migrations, o.CreateConcurrency, &r); err != nil {
			return r, err
		}
		step := min(o.Interval, o.Duration-clk.Now().Sub(vstart))
		if err := advanceBy(ctx, c, clk, step, o.Resolution); err != nil {
			return r, err
		}
	}
	r.Wall, r.Virtual, r.CPU = time.Since(start), clk.Now().Sub(vstart), processCPU()-cpu0
	r.Speed = r.Virtual.Seconds() / r.Wall.Seconds()
	r.RestartsDone, r.MigrationsSucceeded, r.MigrationsFailed = t.outcomes()
	if rssReset {
		r.PeakRSS = peakRSS()
	}
	return r, nil
}

// advanceBy moves the virtual clock d forward in steps of at most res
// (every due instant when res is 0), settling the cluster after each.
func advanceBy(ctx context.Context, c *Cluster, clk *sim.VirtualClock, d, res time.Duration) error {
	if res <= 0 {
		return c.Advance(ctx, d)
	}
	target := clk.Now().Add(d)
	for clk.Now().Before(target) {
		if err := c.Settle(ctx); err != nil {
			return err
		}
		clk.Advance(min(res, target.Sub(clk.Now())))
	}
	return c.Settle(ctx)
}

// churnOnce restarts and migrates VMs picked at random among those with no
// operation of this run in flight.
func churnOnce(ctx context.Context, st store.Store, t *churnTracker, rng *rand.Rand, names []string, restarts, migrations, concurrency int, r *ChurnResult) error {
	var toRestart, toMigrate []string
	picked := map[string]bool{}
	for tries := 0; (len(toRestart) < restarts || len(toMigrate) < migrations) && tries < 4*(restarts+migrations); tries++ {
		name := names[rng.IntN(len(names))]
		if picked[name] {
			continue
		}
		picked[name] = true
		if t.busy(name) {
			r.Busy++
			continue
		}
		if len(toRestart) < restarts {
			toRestart = append(toRestart, name)
		} else {
			toMigrate = append(toMigrate, name)
		}
	}
	var mu sync.Mutex
	count := func(p *int) { mu.Lock(); *p++; mu.Unlock() }
	refused := func(err error) bool {
		if errors.Is(err, actions.ErrConflictingAction) || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
			count(&r.Refused)
			return true
		}
		return false
	}
	err := forEach(ctx, toRestart, concurrency, func(ctx context.Context, name string) error {
		uid, ok := t.restarting(name)
		if !ok {
			count(&r.Busy)
			return nil
		}
		if err := actions.Restart(ctx, st, store.Key{Namespace: "scale", Name: name}, actions.RestartOptions{}); err != nil {
			t.cancelRestart(name, uid)
			if refused(err) {
				return nil
			}
			return fmt.Errorf("restart %s: %w", name, err)
		}
		count(&r.Restarts)
		return nil
	})
	if err != nil {
		return err
	}
	return forEach(ctx, toMigrate, concurrency, func(ctx context.Context, name string) error {
		if !t.migrating(name) {
			count(&r.Busy)
			return nil
		}
		mig, err := actions.Migrate(ctx, st, store.Key{Namespace: "scale", Name: name}, actions.MigrateOptions{})
		if err != nil {
			t.cancelMigration(name)
			if refused(err) {
				return nil
			}
			return fmt.Errorf("migrate %s: %w", name, err)
		}
		t.migrationCreated(name, mig.Name)
		count(&r.Migrations)
		return nil
	})
}

// forEach runs fn for every item, at most concurrency at a time, and
// returns the first error.
func forEach(ctx context.Context, items []string, concurrency int, fn func(context.Context, string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, max(1, concurrency))
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for _, it := range items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(ctx, it); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// churnHosts makes simulated hosts on clk, on one mesh network (so VMs can
// migrate between any two), big enough for perHost small guests each.
func churnHosts(clk sim.Clock, perHost int) (func(string) (hypervisor.Hypervisor, error), error) {
	net, err := sim.NewMeshNetwork(sim.Link{})
	if err != nil {
		return nil, err
	}
	return func(name string) (hypervisor.Hypervisor, error) {
		// Room for twice the guests: migration targets hold a copy.
		n := 2 * max(8, perHost)
		h := sim.New(sim.Options{Name: name, Clock: clk, CPUs: n, MemoryBytes: uint64(n) * 128 << 20})
		if err := net.Join(h); err != nil {
			return nil, err
		}
		return h, nil
	}, nil
}

// churnVMI is what the tracker knows of one VM's VMI.
type churnVMI struct {
	uid     string
	running bool
}

// churnTracker follows VMIs and migrations from store watches: which VMs
// run, which restarts and migrations this run started and how they ended.
type churnTracker struct {
	mu   sync.Mutex
	vmis map[string]churnVMI
	// restart[name] is the UID of the VMI a restart replaces.
	restart      map[string]string
	restartsDone int
	// migrate[name] is the migration in flight for the VM ("" until
	// created); migrations maps a migration's name back to its VM.
	migrate           map[string]string
	migrations        map[string]string
	succeeded, failed int
	runningCount      int
	// early are final migrations seen before Migrate returned their name
	// (true: succeeded).
	early map[string]bool
}

func newChurnTracker() *churnTracker {
	return &churnTracker{vmis: map[string]churnVMI{}, restart: map[string]string{}, migrate: map[string]string{}, migrations: map[string]string{}, early: map[string]bool{}}
}

func (t *churnTracker) watch(ctx context.Context, st store.Store) error {
	vmis, err := st.Watch(ctx, &virtkit.VirtualMachineInstanceList{}, store.WatchOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	migs, err := st.Watch(ctx, &virtkit.VirtualMachineInstanceMigrationList{}, store.WatchOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	go func() {
		for ev := range vmis {
			if vmi, ok := ev.Object.(*virtkit.VirtualMachineInstance); ok {
				t.vmiEvent(ev.Type, vmi)
			}
		}
	}()
	go func() {
		for ev := range migs {
			if m, ok := ev.Object.(*virtkit.VirtualMachineInstanceMigration); ok && m.IsFinal() {
				t.migrationFinal(m)
			}
		}
	}()
	return nil
}

func (t *churnTracker) vmiEvent(typ store.EventType, vmi *virtkit.VirtualMachineInstance) {
	t.mu.Lock()
	defer t.mu.Unlock()
	prev := t.vmis[vmi.Name]
	next := churnVMI{uid: string(vmi.UID), running: typ != store.Deleted && vmi.Status.Phase == virtkit.Running}
	if typ == store.Deleted && prev.uid != next.uid {
		return // an older VMI's deletion after its successor appeared
	}
	if prev.running != next.running {
		if next.running {
			t.runningCount++
		} else {
			t.runningCount--
		}
	}
	t.vmis[vmi.Name] = next
	if old, ok := t.restart[vmi.Name]; ok && next.running && next.uid != old {
		delete(t.restart, vmi.Name)
		t.restartsDone++
	}
}

func (t *churnTracker) migrationFinal(m *virtkit.VirtualMachineInstanceMigration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	vm, ok := t.migrations[m.Name]
	if !ok {
		// Final before Migrate returned: migrationCreated counts it.
		t.early[m.Name] = m.Status.Phase == virtkit.MigrationSucceeded
		return
	}
	delete(t.migrations, m.Name)
	delete(t.migrate, vm)
	if m.Status.Phase == virtkit.MigrationSucceeded {
		t.succeeded++
	} else {
		t.failed++
	}
}

func (t *churnTracker) running() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.runningCount
}

func (t *churnTracker) busy(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, r := t.restart[name]
	_, m := t.migrate[name]
	return r || m || !t.vmis[name].running
}

// restarting marks a restart of name's running VMI and returns its UID.
func (t *churnTracker) restarting(name string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := t.vmis[name]
	if !v.running {
		return "", false
	}
	t.restart[name] = v.uid
	return v.uid, true
}

func (t *churnTracker) cancelRestart(name, uid string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.restart[name] == uid {
		delete(t.restart, name)
	}
}

func (t *churnTracker) migrating(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.migrate[name]; ok || !t.vmis[name].running {
		return false
	}
	t.migrate[name] = ""
	return true
}

func (t *churnTracker) cancelMigration(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.migrate, name)
}

// migrationCreated records the migration started for the VM name. Its
// final event may already have come (and been ignored): then the next
// one decides.
func (t *churnTracker) migrationCreated(name, migration string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ok, final := t.early[migration]; final {
		delete(t.early, migration)
		delete(t.migrate, name)
		if ok {
			t.succeeded++
		} else {
			t.failed++
		}
		return
	}
	t.migrate[name] = migration
	t.migrations[migration] = name
}

func (t *churnTracker) outcomes() (restarts, succeeded, failed int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.restartsDone, t.succeeded, t.failed
}
