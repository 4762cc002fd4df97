package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/store"
)

// drainEnv is a two-host cluster on virtual time with one VMI "a" running
// on the host to drain.
type drainEnv struct {
	t    *testing.T
	ctx  context.Context
	c    *cluster.Cluster
	node string // where "a" runs
}

func newDrainEnv(t *testing.T, defaults virtkit.DefaultOptions, strategy *virtkit.EvictionStrategy, bridge bool) *drainEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	clk := sim.NewVirtualClock(time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC))
	c, err := cluster.New(cluster.Options{Clock: clk, Defaults: defaults})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.NoError(t, c.Settle(ctx))

	vmi := &virtkit.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"},
		Spec: virtkit.VirtualMachineInstanceSpec{
			Domain:           virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: ptr(resource.MustParse("256Mi"))}},
			EvictionStrategy: strategy,
		},
	}
	if bridge { // bridge on the pod network cannot live-migrate
		vmi.Spec.Domain.Devices.Interfaces = []virtkit.Interface{{Name: "default",
			InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Bridge: &virtkit.InterfaceBridge{}}}}
		vmi.Spec.Networks = []virtkit.Network{{Name: "default", NetworkSource: virtkit.NetworkSource{Pod: &virtkit.PodNetwork{}}}}
	}
	require.NoError(t, c.Apply(ctx, vmi))
	e := &drainEnv{t: t, ctx: ctx, c: c}
	e.advanceUntil(time.Minute, func() bool {
		v, ok := e.vmi()
		return ok && v.IsRunning() && virtkit.GetCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceIsMigratable) != nil
	})
	v, _ := e.vmi()
	require.Equal(t, !bridge, v.IsMigratable())
	e.node = v.Status.NodeName
	return e
}

func (e *drainEnv) vmi() (*virtkit.VirtualMachineInstance, bool) {
	e.t.Helper()
	v := &virtkit.VirtualMachineInstance{}
	err := e.c.Store().Get(e.ctx, store.Key{Namespace: "default", Name: "a"}, v)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false
	}
	require.NoError(e.t, err)
	return v, true
}

func (e *drainEnv) advanceUntil(limit time.Duration, cond func() bool) {
	e.t.Helper()
	for waited := time.Duration(0); !cond(); waited += time.Second {
		require.Less(e.t, waited, limit, "not within %v of virtual time", limit)
		require.NoError(e.t, e.c.Advance(e.ctx, time.Second))
	}
}

// drain runs Cluster.Drain in the background; the returned function
// advances virtual time until it returns (at most limit) and yields its
// error, or cancels it at limit.
func (e *drainEnv) drain(o controller.DrainOptions) (wait func(limit time.Duration) error, progress *[]controller.DrainProgress) {
	ctx, cancel := context.WithCancel(e.ctx)
	e.t.Cleanup(cancel)
	var seen []controller.DrainProgress
	o.Progress = func(p controller.DrainProgress) { seen = append(seen, p) }
	done := make(chan error, 1)
	go func() { done <- e.c.Drain(ctx, e.node, o) }()
	return func(limit time.Duration) error {
		e.t.Helper()
		for waited := time.Duration(0); ; waited += time.Second {
			select {
			case err := <-done:
				return err
			default:
			}
			if waited >= limit {
				cancel()
				return <-done
			}
			require.NoError(e.t, e.c.Advance(e.ctx, time.Second))
		}
	}, &seen
}

func (e *drainEnv) events(reason string) []virtkit.Event {
	e.t.Helper()
	var l virtkit.EventList
	require.NoError(e.t, e.c.Store().List(e.ctx, &l, store.ListOptions{Namespace: "default"}))
	var out []virtkit.Event
	for _, ev := range l.Items {
		if ev.Reason == reason && ev.Regarding.Name == "a" {
			out = append(out, ev)
		}
	}
	return out
}

func (e *drainEnv) requireCordoned(want bool) {
	e.t.Helper()
	n := &virtkit.Node{}
	require.NoError(e.t, e.c.Store().Get(e.ctx, store.Key{Name: e.node}, n))
	assert.Equal(e.t, want, n.Spec.Unschedulable, "spec.unschedulable")
	assert.Equal(e.t, want, controller.IsDraining(n), "drain taint")
}

func states(ps []controller.DrainProgress) []controller.DrainState {
	var out []controller.DrainState
	for _, p := range ps {
		for _, v := range p.VMIs {
			out = append(out, v.State)
		}
	}
	return out
}

// A drain empties a node by each VMI's evictionStrategy: migratable VMIs
// that want to live-migrate move to the other host, the others are shut
// down, and the drain returns once the node is empty.
func TestDrainEmptiesTheNode(t *testing.T) {
	for _, tt := range []struct {
		name      string
		defaults  virtkit.EvictionStrategy
		strategy  *virtkit.EvictionStrategy
		bridge    bool
		wantState controller.DrainState
	}{
		{name: "LiveMigrate", strategy: ptr(virtkit.EvictionStrategyLiveMigrate), wantState: controller.DrainMigrating},
		{name: "LiveMigrateIfPossible, migratable", strategy: ptr(virtkit.EvictionStrategyLiveMigrateIfPossible), wantState: controller.DrainMigrating},
		{name: "cluster default LiveMigrate", defaults: virtkit.EvictionStrategyLiveMigrate, wantState: controller.DrainMigrating},
		{name: "None", strategy: ptr(virtkit.EvictionStrategyNone), wantState: controller.DrainShuttingDown},
		{name: "default (None)", wantState: controller.DrainShuttingDown},
		{name: "LiveMigrateIfPossible, not migratable", strategy: ptr(virtkit.EvictionStrategyLiveMigrateIfPossible), bridge: true, wantState: controller.DrainShuttingDown},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newDrainEnv(t, virtkit.DefaultOptions{EvictionStrategy: tt.defaults}, tt.strategy, tt.bridge)
			wait, progress := e.drain(controller.DrainOptions{})
			require.NoError(t, wait(2*time.Minute))
			e.requireCordoned(true)

			require.NotEmpty(t, *progress)
			assert.Equal(t, tt.wantState, states(*progress)[0])
			last := (*progress)[len(*progress)-1]
			assert.Equal(t, e.node, last.Node)
			assert.Empty(t, last.VMIs, "the last report is the empty node")

			v, found := e.vmi()
			if tt.wantState == controller.DrainMigrating {
				require.True(t, found)
				assert.True(t, v.IsRunning())
				assert.NotEqual(t, e.node, v.Status.NodeName, "moved to the other host")
				assert.Empty(t, e.events(virtkit.EventReasonEvicted))
				return
			}
			assert.False(t, found, "the VMI is shut down and deleted")
			evicted := e.events(virtkit.EventReasonEvicted)
			require.Len(t, evicted, 1)
			assert.Contains(t, evicted[0].Note, "shut down by the drain of node "+e.node)
		})
	}
}

// A VMI that must live-migrate but cannot blocks the drain: the eviction
// is refused with a condition and an event, the VMI keeps running, and the
// drain ends with its context, naming it. Uncordon ends the drain.
func TestDrainBlockedByANonMigratableVMI(t *testing.T) {
	e := newDrainEnv(t, virtkit.DefaultOptions{}, ptr(virtkit.EvictionStrategyLiveMigrate), true)
	wait, progress := e.drain(controller.DrainOptions{})
	err := wait(time.Minute)
	require.ErrorIs(t, err, controller.ErrDrainIncomplete)
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "default/a Blocked")
	assert.Contains(t, err.Error(), "not live-migratable")
	assert.Equal(t, []controller.DrainState{controller.DrainBlocked}, states(*progress), "one report: nothing changed")

	v, found := e.vmi()
	require.True(t, found)
	assert.True(t, v.IsRunning(), "the VMI keeps running")
	assert.Equal(t, e.node, v.Status.NodeName)
	assert.Empty(t, v.Status.EvacuationNodeName)
	assert.True(t, virtkit.HasCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceEvictionRequested,
		virtkit.ConditionFalse, virtkit.EvictionBlockedReason))
	failed := e.events(virtkit.EventReasonFailedEviction)
	require.Len(t, failed, 1)
	assert.Equal(t, virtkit.EventTypeWarning, failed[0].Type)
	assert.Contains(t, failed[0].Note, "is configured with an eviction strategy but is not live-migratable")
	// The eviction reconciler says so too, as KubeVirt's evacuation
	// controller does, and creates no migration.
	notMigratable := e.events(virtkit.EventReasonFailedCreate)
	require.NotEmpty(t, notMigratable)
	assert.Equal(t, "VirtualMachineInstance is not migrateable", notMigratable[0].Note)
	var migs virtkit.VirtualMachineInstanceMigrationList
	require.NoError(t, e.c.Store().List(e.ctx, &migs, store.ListOptions{}))
	assert.Empty(t, migs.Items, "no migration that could only fail")
	e.requireCordoned(true)

	require.NoError(t, e.c.Uncordon(e.ctx, e.node))
	require.NoError(t, e.c.Settle(e.ctx))
	e.requireCordoned(false)
	v, _ = e.vmi()
	assert.Nil(t, virtkit.GetCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceEvictionRequested), "uncordon clears the refusal")
}

// External: the VMI is marked for an external controller and the drain
// waits until that controller has moved it away.
func TestDrainExternal(t *testing.T) {
	e := newDrainEnv(t, virtkit.DefaultOptions{}, ptr(virtkit.EvictionStrategyExternal), false)
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.c.Drain(ctx, e.node, controller.DrainOptions{}) }()
	require.NoError(t, e.c.Advance(e.ctx, 30*time.Second))
	select {
	case err := <-done:
		t.Fatalf("drain returned with an External VMI on the node: %v", err)
	default:
	}
	v, found := e.vmi()
	require.True(t, found)
	assert.True(t, v.IsRunning())
	assert.Equal(t, e.node, v.Status.EvacuationNodeName, "marked for the external controller")
	assert.True(t, virtkit.HasCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceEvictionRequested,
		virtkit.ConditionTrue, virtkit.EvictionRequestedReason))

	// The external controller acts: here it shuts the VMI down.
	require.NoError(t, e.c.Store().Delete(e.ctx, v, store.DeleteOptions{}))
	e.advanceUntil(time.Minute, func() bool {
		select {
		case err := <-done:
			require.NoError(t, err)
			return true
		default:
			return false
		}
	})
}

// Cordon only stops placements; the VMIs keep running and nothing is
// evicted.
func TestCordonUncordon(t *testing.T) {
	e := newDrainEnv(t, virtkit.DefaultOptions{}, nil, false)
	require.NoError(t, e.c.Cordon(e.ctx, e.node))
	n := &virtkit.Node{}
	require.NoError(t, e.c.Store().Get(e.ctx, store.Key{Name: e.node}, n))
	assert.True(t, n.Spec.Unschedulable)
	assert.False(t, controller.IsDraining(n), "cordon is not a drain")
	require.NoError(t, e.c.Advance(e.ctx, 30*time.Second))
	v, found := e.vmi()
	require.True(t, found)
	assert.True(t, v.IsRunning())
	require.NoError(t, e.c.Uncordon(e.ctx, e.node))
	e.requireCordoned(false)
	require.ErrorIs(t, e.c.Cordon(e.ctx, "no-such-node"), store.ErrNotFound)
}
