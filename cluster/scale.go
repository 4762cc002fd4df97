package cluster

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// ScaleOptions configure [MeasureScale].
type ScaleOptions struct {
	// VMs to create (default 1000) on Nodes simulated hosts (default 4).
	VMs   int
	Nodes int
	// Workers per controller and per node agent (default 8).
	Workers int
	// CreateConcurrency is how many creates run at once (default 16).
	CreateConcurrency int
	// CheckReadOnlyEvents, for tests, fingerprints every watch event object
	// the store shares between read-only watchers (every controller's and
	// node agent's) and fails the run if any was modified.
	CheckReadOnlyEvents bool
}

// ScaleResult is what one scale run measured. Latencies run from the VM's
// create call returning to its VMI's status reporting Running (the
// phaseTransitionTimestamps are second-granular, so the harness watches).
type ScaleResult struct {
	VMs, Nodes int
	// Total is from the first create to the last VMI Running.
	Total time.Duration
	// Throughput is VMs reaching Running per second over Total.
	Throughput         float64
	P50, P90, P99, Max time.Duration
	// HeapPerVMI is the live heap after the run minus before, per VMI
	// (store objects, controller caches, sim domains, agent state).
	HeapPerVMI uint64
	// Reconciles across every controller and node agent, and per second.
	Reconciles       uint64
	ReconcilesPerSec float64
	// CPU is the process's CPU time (user + system) from the first create
	// to the last VMI Running; CPUPerVM divides it by VMs. Zero where the
	// platform does not say.
	CPU, CPUPerVM time.Duration
	// WritesPerVM counts every VM and VMI write (creates, updates, status
	// updates, deletes, the user's VM create included) up to the moment
	// the fleet settled after the last VMI ran, per VM. ReconcilesPerVM is
	// Reconciles per VM at the same moment.
	WritesPerVM, ReconcilesPerVM float64
	// Store are the store calls per kind at that moment.
	Store map[string]WriteCounts
	// PeakRSS is the process's peak resident set during the run in bytes
	// (0 when unknown); PeakGoroutines the most goroutines sampled.
	PeakRSS        uint64
	PeakGoroutines int
	// Controllers are the per-controller numbers at the end (node agents
	// summed under "node").
	Controllers []ControllerCounts
	// Backend is "memory" (one process) or "etcd" (a controller process
	// and node agent processes against an etcd server).
	Backend string `json:",omitempty"`
	// Processes break CPU and peak RSS down per process when the run
	// spans several (CPU, CPUPerVM and PeakRSS are then their sums, and
	// PeakGoroutines is unknown: 0).
	Processes []ProcessCounts `json:",omitempty"`
}

// ProcessCounts are one process's share of a multi-process scale run.
type ProcessCounts struct {
	// Name is "controller", a node name, "etcd" or "bench" (the creating
	// client and its watches).
	Name string
	// CPU is user + system time from the first create to the last VMI
	// Running; PeakRSS the peak resident set over the process's life.
	CPU     time.Duration
	PeakRSS uint64
	// Reconciles is the process's reconcile count at the end (0 for
	// processes that run no controller).
	Reconciles uint64
}

// ControllerCounts are one controller's totals over a scale run.
type ControllerCounts struct {
	Name                                 string
	Reconciles, Errors, Retries, Requeue uint64
}

// MeasureScale starts a fresh cluster of simulated hosts, creates VMs with
// runStrategy Always as fast as the store takes them, and measures how long
// each takes to run. It is the scale benchmark behind `virtkit bench scale`.
func MeasureScale(ctx context.Context, o ScaleOptions) (ScaleResult, error) {
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
	heapBefore := liveHeap()
	rssReset := resetPeakRSS()
	mem, err := store.NewMemoryWithOptions(store.Options{CheckReadOnlyEvents: o.CheckReadOnlyEvents})
	if err != nil {
		return ScaleResult{}, err
	}
	counting := NewCountingStore(mem)
	c, err := New(Options{Store: counting, Nodes: o.Nodes, Workers: o.Workers, NodeAgent: nodeAgentForScale(o.Workers),
		NewHypervisor: scaleHosts(o.VMs/o.Nodes + 1)})
	if err != nil {
		return ScaleResult{}, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- c.Start(runCtx) }()
	defer func() { stop(); <-done }()

	// Wait for every node before timing anything.
	if err := c.WaitNodesReady(ctx); err != nil {
		return ScaleResult{}, err
	}

	names := make([]string, o.VMs)
	for i := range names {
		names[i] = fmt.Sprintf("vm-%05d", i)
	}
	goroutines := sampleGoroutines()
	cpu0 := processCPU()
	lat, total, err := MeasureCreateToRunning(ctx, c.store, names, o.CreateConcurrency, func(ctx context.Context, name string) error {
		return c.Apply(ctx, scaleVM(name))
	})
	cpu := processCPU() - cpu0
	if err != nil {
		goroutines()
		return ScaleResult{}, err
	}
	// The VM controller writes the VMs' status after their VMIs run: count
	// up to the moment VM and VMI writes stop.
	settle(ctx, counting, 250*time.Millisecond, 10*time.Second)
	peakG := goroutines()
	if err := mem.ReadOnlyViolations(); err != nil {
		return ScaleResult{}, fmt.Errorf("a watcher modified a shared event object: %w", err)
	}

	var reconciles uint64
	var counts []ControllerCounts
	for _, ctrl := range c.Controllers() {
		st := ctrl.Stats()
		reconciles += st.Reconciles
		counts = append(counts, ControllerCounts{Name: st.Name, Reconciles: st.Reconciles, Errors: st.ReconcileErrors, Retries: st.QueueRetries, Requeue: st.Requeues})
	}
	nodeCounts := ControllerCounts{Name: "node"}
	for _, n := range c.Nodes() {
		st := n.Agent.Controller().Stats()
		reconciles += st.Reconciles
		nodeCounts.Reconciles += st.Reconciles
		nodeCounts.Errors += st.ReconcileErrors
		nodeCounts.Retries += st.QueueRetries
		nodeCounts.Requeue += st.Requeues
	}
	counts = append(counts, nodeCounts)
	heapAfter := liveHeap()

	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	r := ScaleResult{
		VMs: o.VMs, Nodes: o.Nodes, Total: total,
		Throughput: float64(o.VMs) / total.Seconds(),
		P50:        pct(0.50), P90: pct(0.90), P99: pct(0.99), Max: lat[len(lat)-1],
		Reconciles: reconciles, ReconcilesPerSec: float64(reconciles) / total.Seconds(),
		Controllers: counts,
		CPU:         cpu, CPUPerVM: cpu / time.Duration(o.VMs),
		ReconcilesPerVM: float64(reconciles) / float64(o.VMs),
		Store:           counting.Counts(),
		PeakGoroutines:  peakG,
		Backend:         "memory",
	}
	r.WritesPerVM = float64(vmWrites(r.Store)) / float64(o.VMs)
	if rssReset {
		r.PeakRSS = peakRSS()
	}
	if heapAfter > heapBefore {
		r.HeapPerVMI = (heapAfter - heapBefore) / uint64(o.VMs)
	}
	return r, nil
}

// vmWrites sums the VM and VMI writes.
func vmWrites(counts map[string]WriteCounts) uint64 {
	return counts[virtkit.KindVirtualMachine].Writes() + counts[virtkit.KindVirtualMachineInstance].Writes()
}

// settle waits until no VM or VMI write happened for quiet, at most max.
func settle(ctx context.Context, c *CountingStore, quiet, maxWait time.Duration) {
	deadline := time.Now().Add(maxWait)
	last := vmWrites(c.Counts())
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(quiet):
		}
		now := vmWrites(c.Counts())
		if now == last {
			return
		}
		last = now
	}
}

// sampleGoroutines samples the goroutine count every 20 ms until the
// returned function is called, which returns the highest seen.
func sampleGoroutines() func() int {
	stop := make(chan struct{})
	peak := make(chan int, 1)
	go func() {
		hi := runtime.NumGoroutine()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				peak <- max(hi, runtime.NumGoroutine())
				return
			case <-t.C:
				hi = max(hi, runtime.NumGoroutine())
			}
		}
	}()
	return func() int {
		close(stop)
		return <-peak
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// ScaleVM is the VM every scale run creates: runStrategy Always, 64 MiB of
// guest memory, in namespace "scale".
func ScaleVM(name string) *virtkit.VirtualMachine { return scaleVM(name) }

func scaleVM(name string) *virtkit.VirtualMachine {
	always := virtkit.RunStrategyAlways
	mem := resource.MustParse("64Mi")
	return &virtkit.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "scale"},
		Spec: virtkit.VirtualMachineSpec{
			RunStrategy: &always,
			Template: &virtkit.VirtualMachineInstanceTemplateSpec{
				Spec: virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &mem}}},
			},
		},
	}
}

// scaleHosts makes simulated hosts big enough for perHost small guests.
func scaleHosts(perHost int) func(string) (hypervisor.Hypervisor, error) {
	return func(name string) (hypervisor.Hypervisor, error) {
		return sim.New(sim.Options{Name: name, CPUs: max(8, perHost), MemoryBytes: uint64(max(8, perHost)) * 128 << 20}), nil
	}
}

// nodeAgentForScale refreshes running guests rarely: the run measures
// placement and start, not steady-state polling.
func nodeAgentForScale(workers int) node.Options {
	return node.Options{Workers: workers, StatusInterval: time.Minute, HeartbeatInterval: 10 * time.Second}
}

// MeasureCreateToRunning creates a VM or VMI per name through create (at
// most concurrency at a time; the VMI must carry that name, as a VM's does)
// and measures, for each, the time from just before its create call to the
// first store event showing its VMI Running. It returns the latencies,
// sorted, and the time from the first create to the last Running. Any store
// works: the scale benchmarks use it on memory and on etcd.
func MeasureCreateToRunning(ctx context.Context, st store.Store, names []string, concurrency int, create func(ctx context.Context, name string) error) ([]time.Duration, time.Duration, error) {
	n := len(names)
	var mu sync.Mutex
	created := make(map[string]time.Time, n)
	running := make(map[string]time.Duration, n)
	allRunning := make(chan struct{})

	wctx, cancelWatch := context.WithCancel(ctx)
	defer cancelWatch()
	// Watch before the first create, so no Running transition is missed.
	events, err := st.Watch(wctx, &virtkit.VirtualMachineInstanceList{}, store.WatchOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, err
	}
	go func() {
		for ev := range events {
			vmi, ok := ev.Object.(*virtkit.VirtualMachineInstance)
			if !ok || vmi.Status.Phase != virtkit.Running {
				continue
			}
			now := time.Now()
			mu.Lock()
			if t0, ok := created[vmi.Name]; ok {
				if _, seen := running[vmi.Name]; !seen {
					running[vmi.Name] = now.Sub(t0)
					if len(running) == n {
						close(allRunning)
					}
				}
			}
			mu.Unlock()
		}
	}()

	start := time.Now()
	sem := make(chan struct{}, max(1, concurrency))
	errc := make(chan error, 1)
	for _, name := range names {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			mu.Lock()
			created[name] = time.Now()
			mu.Unlock()
			if err := create(ctx, name); err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		}()
	}
	select {
	case <-allRunning:
	case err := <-errc:
		return nil, 0, err
	case <-ctx.Done():
		mu.Lock()
		got := len(running)
		mu.Unlock()
		return nil, 0, fmt.Errorf("%d of %d VMs running: %w", got, n, ctx.Err())
	}
	total := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	lat := make([]time.Duration, 0, len(running))
	for _, d := range running {
		lat = append(lat, d)
	}
	slices.Sort(lat)
	return lat, total, nil
}
