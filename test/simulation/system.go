package simulation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/store"
)

// system is what the operations act on and the invariants read: the
// embedded cluster of a [Harness] on virtual time, or a control plane of
// separate processes on a real etcd (the multi-process mode).
type system interface {
	// st is the store as the simulation's own calls (a user's) see it.
	st() store.Store
	apply(ctx context.Context, obj virtkit.Object) error
	cordon(ctx context.Context, node string) error
	uncordon(ctx context.Context, node string) error
	drain(ctx context.Context, node string, o controller.DrainOptions) error
	// now is the system's clock; afterFunc runs f once d has passed on it.
	now() time.Time
	afterFunc(d time.Duration, f func()) (stop func() bool)
	// lifecycle is what the lifecycle operations leave for the invariants.
	lifecycle() *lifecycleState
	// undisturbed reports whether node's agent runs and reaches the store
	// promptly: a stop of its guest then ends gracefully.
	undisturbed(node string) bool

	// exited reports a component that stopped by itself, with why.
	exited() (bool, error)
	recorder() *Recorder
	// observation is what the cluster package's invariant checks read.
	observation() cluster.Observation
	// domains lists every domain of every host, straight from the hosts.
	domains(ctx context.Context) ([]domainAt, error)
	// eventStats are the event recorders' counters by reporting instance
	// (a node's name, "virt-controller"), where the system can read them.
	eventStats() map[string]events.Stats
}

// The Harness is the in-process system.

func (h *Harness) st() store.Store { return h.Store }

func (h *Harness) apply(ctx context.Context, obj virtkit.Object) error {
	return h.Cluster.Apply(ctx, obj)
}

func (h *Harness) cordon(ctx context.Context, node string) error { return h.Cluster.Cordon(ctx, node) }

func (h *Harness) uncordon(ctx context.Context, node string) error {
	return h.Cluster.Uncordon(ctx, node)
}

func (h *Harness) drain(ctx context.Context, node string, o controller.DrainOptions) error {
	return h.Cluster.Drain(ctx, node, o)
}

func (h *Harness) now() time.Time { return h.Clock.Now() }

func (h *Harness) afterFunc(d time.Duration, f func()) func() bool {
	return h.Clock.AfterFunc(d, f).Stop
}

func (h *Harness) lifecycle() *lifecycleState { return h.life }

func (h *Harness) undisturbed(node string) bool {
	link := h.links[node]
	return h.Cluster.AgentRunning(node) && (link == nil || link.up()) && !h.faults.slow()
}

func (h *Harness) exited() (bool, error) { return h.Exited() }

func (h *Harness) recorder() *Recorder { return h.Recorder }

func (h *Harness) observation() cluster.Observation { return h.Cluster.Observation() }

func (h *Harness) eventStats() map[string]events.Stats {
	if h.Cluster == nil { // a checker fed by hand in tests
		return nil
	}
	return h.Cluster.EventStats()
}

func (h *Harness) domains(ctx context.Context) ([]domainAt, error) {
	var out []domainAt
	for _, n := range h.Nodes() {
		infos, err := h.Host(n).List(ctx)
		if err != nil {
			return nil, err
		}
		for _, d := range infos {
			out = append(out, domainAt{node: n, info: d})
		}
	}
	return out, nil
}

// errInProcessOnly is an operation of the embedded cluster run in the
// multi-process mode (a row missing from mpLeftOut).
var errInProcessOnly = errors.New("needs the embedded cluster: not supported in the multi-process mode")

// inProcess adapts an operation that needs the embedded cluster's hooks
// (its simulated hosts, its store links, its fault store); the
// multi-process mode leaves such rows out of its table.
func inProcess(run func(ctx context.Context, h *Harness, op Op) error) func(context.Context, system, Op) error {
	return func(ctx context.Context, s system, op Op) error {
		h, ok := s.(*Harness)
		if !ok {
			return fmt.Errorf("operation %s: %w", op.Name, errInProcessOnly)
		}
		return run(ctx, h, op)
	}
}
