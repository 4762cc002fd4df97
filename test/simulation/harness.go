package simulation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// epoch is where every simulation's virtual clock starts.
func epoch() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }

// Harness is one embedded cluster on virtual time with its fault hooks:
// the store as every component sees it (faultStore), each node agent's
// link to it (nodeLink), the simulated hosts, and a Recorder of every
// change.
type Harness struct {
	Cluster *cluster.Cluster
	Clock   *sim.VirtualClock
	// Store is the real store; the simulation's own calls use it.
	Store    *store.Memory
	Recorder *Recorder

	faults *faultStore
	life   *lifecycleState
	links  map[string]*nodeLink
	hosts  map[string]*sim.Host
	net    *sim.Network
	names  []string
	cancel context.CancelFunc
	done   chan error
}

// HarnessOptions configure [NewHarness].
type HarnessOptions struct {
	// Seed seeds the cluster (cluster.Options.Seed) and the fault store;
	// it must not be zero.
	Seed int64
	// Nodes is how many simulated hosts to run (default 3).
	Nodes int
	// NoWatchdog leaves the hosts' watchdogs unarmed (the cluster's
	// default): a node agent that dies then leaves its guests running
	// after the control plane has failed their VMIs over.
	NoWatchdog bool
}

// NewHarness builds and starts a seeded cluster on a virtual clock and
// settles it (nodes registered, watches running). Close stops it.
func NewHarness(ctx context.Context, o HarnessOptions) (*Harness, error) {
	if o.Seed == 0 {
		return nil, errors.New("harness: Seed: must not be zero")
	}
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	clk := sim.NewVirtualClock(epoch())
	clk.SetTieBreak(timerSite)
	mem, err := store.NewMemoryWithOptions(store.Options{Clock: clk, IDs: store.SeededIDs(o.Seed)})
	if err != nil {
		return nil, err
	}
	h := &Harness{Clock: clk, Store: mem, faults: newFaultStore(mem, o.Seed, clk),
		life:  &lifecycleState{acpi: map[string]sim.ACPIBehaviour{}},
		links: map[string]*nodeLink{}, hosts: map[string]*sim.Host{}}
	net, err := sim.NewMeshNetwork(sim.Link{})
	if err != nil {
		return nil, err
	}
	for i := 1; i <= o.Nodes; i++ {
		name := fmt.Sprintf("node-%d", i)
		h.names = append(h.names, name)
		h.links[name] = newNodeLink(name, h.faults)
	}
	c, err := cluster.New(cluster.Options{
		Store:     h.faults,
		NodeNames: h.names,
		// The components' clock takes the write turns between instants.
		Clock:     &turnClock{VirtualClock: clk, turns: h.faults.turns},
		Seed:      o.Seed,
		Migration: controller.MigrationOptions{Config: simMigrationConfiguration()},
		NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
			host := sim.New(sim.Options{Name: name, Clock: clk})
			if err := net.Join(host); err != nil {
				return nil, err
			}
			h.hosts[name] = host
			return host, nil
		},
		ConfigureNode: func(name string, no *node.Options) {
			no.Store = h.links[name]
			if !o.NoWatchdog {
				no.Watchdog = h.hosts[name]
			}
		},
	})
	if err != nil {
		return nil, err
	}
	h.Cluster = c
	h.net = net
	h.faults.turns.on.Store(true)
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.cancel = cancel
	if h.Recorder, err = Record(rctx, mem, clk.Now); err != nil {
		cancel()
		return nil, err
	}
	h.done = make(chan error, 1)
	go func() { h.done <- c.Start(rctx) }()
	if err := c.Settle(ctx); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// Exited reports whether the cluster stopped by itself (a component
// failed), with the error it stopped with.
func (h *Harness) Exited() (bool, error) {
	select {
	case err := <-h.done:
		h.done <- err
		return true, err
	default:
		return false, nil
	}
}

// Close stops the cluster and the recorder.
func (h *Harness) Close() error {
	h.cancel()
	h.faults.stop()
	h.life.cancelDrains()
	h.life.waitDrains(10 * time.Second)
	err := <-h.done
	h.Recorder.wg.Wait()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// crashAgent kills the named node's agent as its process would die: the
// store calls it has under way never land (a write the fault store delays
// would otherwise wait on virtual time, which does not move while the
// crash is carried out).
//
// The agent's context is cancelled first and the cluster settles, with no
// write granted, before its link to the store is cut: every goroutine of
// the agent then meets the crash with its context already cancelled, so
// none goes on to a hypervisor call (a dying worker's undefine of a
// domain) that lands or not by whether it ran before the cancel. Only
// the writes that outlive the agent's context (a migration's outcome) are
// still waiting when the link is cut, and they fail then.
func (h *Harness) crashAgent(ctx context.Context, name string) error {
	h.faults.turns.hold(true)
	defer h.faults.turns.hold(false)
	crashed := make(chan error, 1)
	go func() { crashed <- h.Cluster.CrashAgent(ctx, name) }()
	err := h.Cluster.Settle(ctx)
	h.links[name].kill()
	return errors.Join(err, <-crashed)
}

// restartAgent starts a new agent on a node whose agent crashed.
func (h *Harness) restartAgent(ctx context.Context, name string) error {
	h.links[name].revive()
	return h.Cluster.RestartAgent(ctx, name)
}

// Advance moves virtual time by d, settling at every due instant.
func (h *Harness) Advance(ctx context.Context, d time.Duration) error {
	return h.Cluster.Advance(ctx, d)
}

// Nodes are the node names.
func (h *Harness) Nodes() []string { return h.names }

// setMigrationBandwidth sets every link between two hosts to bw bytes/s
// (0 = unlimited, the harness's own link), for the migrations that start
// from now on.
func (h *Harness) setMigrationBandwidth(bw uint64) error {
	for _, a := range h.names {
		for _, b := range h.names {
			if a == b {
				continue
			}
			if err := h.net.SetLink(h.hosts[a], h.hosts[b], sim.Link{Bandwidth: bw}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Host is the simulated host of a node.
func (h *Harness) Host(name string) *sim.Host { return h.hosts[name] }
