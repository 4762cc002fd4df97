package cluster_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// A crashed agent leaves its guest running and the rest of the cluster
// up; a restarted one adopts the guest and heartbeats again.
func TestCrashAndRestartAgent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clk := sim.NewVirtualClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	c, err := cluster.New(cluster.Options{Clock: clk, Nodes: 1, Seed: 7})
	require.NoError(t, err)
	assert.ErrorIs(t, c.CrashAgent(ctx, "node-1"), cluster.ErrNotStarted)
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(cctx) }()
	defer func() { stop(); assert.NoError(t, <-done) }()
	require.NoError(t, c.Settle(ctx))

	mem := resource.MustParse("128Mi")
	vmi := &virtkit.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "default"},
		Spec:       virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &mem}}},
	}
	require.NoError(t, c.Apply(ctx, vmi))
	require.NoError(t, c.Advance(ctx, 10*time.Second))

	require.True(t, c.AgentRunning("node-1"))
	require.NoError(t, c.CrashAgent(ctx, "node-1"))
	assert.False(t, c.AgentRunning("node-1"))
	assert.ErrorIs(t, c.CrashAgent(ctx, "node-1"), cluster.ErrAgentState)
	assert.ErrorIs(t, c.RestartAgent(ctx, "node-9"), cluster.ErrNoNode)
	require.NoError(t, c.Advance(ctx, 30*time.Second))
	info, err := c.Node("node-1").Hypervisor.Info(ctx, "default_g")
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State, "the guest outlives its agent")
	n := &virtkit.Node{}
	require.NoError(t, c.Store().Get(ctx, store.Key{Name: "node-1"}, n))
	stale := n.Status.LastHeartbeatTime

	require.NoError(t, c.RestartAgent(ctx, "node-1"))
	assert.ErrorIs(t, c.RestartAgent(ctx, "node-1"), cluster.ErrAgentState)
	require.NoError(t, c.Advance(ctx, 20*time.Second))
	assert.True(t, c.AgentRunning("node-1"))
	assert.NoError(t, c.AgentError("node-1"))
	require.NoError(t, c.Store().Get(ctx, store.Key{Name: "node-1"}, n))
	assert.True(t, n.Status.LastHeartbeatTime.After(stale.Time), "the new agent heartbeats")
	require.NoError(t, c.Store().Get(ctx, store.KeyOf(vmi), vmi))
	assert.Equal(t, virtkit.Running, vmi.Status.Phase)
}

// offline fails every call while down is set, as a store the node cannot
// reach.
type offline struct {
	store.Store
	down *atomic.Bool
}

var errOffline = errors.New("store unreachable")

func (o offline) Get(ctx context.Context, key store.Key, obj virtkit.Object) error {
	if o.down.Load() {
		return errOffline
	}
	return o.Store.Get(ctx, key, obj)
}

func (o offline) Update(ctx context.Context, obj virtkit.Object) error {
	if o.down.Load() {
		return errOffline
	}
	return o.Store.Update(ctx, obj)
}

func (o offline) UpdateStatus(ctx context.Context, obj virtkit.Object) error {
	if o.down.Load() {
		return errOffline
	}
	return o.Store.UpdateStatus(ctx, obj)
}

func (o offline) Create(ctx context.Context, obj virtkit.Object) error {
	if o.down.Load() {
		return errOffline
	}
	return o.Store.Create(ctx, obj)
}

// An agent restarted while its store is unreachable keeps trying to
// register, as virt-handler waits for its API server, instead of failing
// for good: the cluster and the other nodes go on meanwhile, and the agent
// registers by itself (no second restart) once the store is back.
func TestRestartedAgentWaitsForTheStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clk := sim.NewVirtualClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	var down atomic.Bool
	c, err := cluster.New(cluster.Options{Clock: clk, Nodes: 2, Seed: 3,
		ConfigureNode: func(name string, o *node.Options) {
			if name == "node-1" {
				o.Store = offline{Store: o.Store, down: &down}
			}
		}})
	require.NoError(t, err)
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(cctx) }()
	defer func() { stop(); <-done }()
	require.NoError(t, c.Settle(ctx))

	require.NoError(t, c.CrashAgent(ctx, "node-1"))
	down.Store(true)
	require.NoError(t, c.RestartAgent(ctx, "node-1"))
	require.NoError(t, c.Settle(ctx))
	require.NoError(t, c.Advance(ctx, 2*time.Minute))
	select {
	case err := <-done:
		done <- err // for the deferred stop
		t.Fatalf("the cluster stopped: %v", err)
	default:
	}
	require.True(t, c.AgentRunning("node-1"), "the agent must wait for the store, it stopped with %v", c.AgentError("node-1"))
	assert.NoError(t, c.AgentError("node-1"))
	assert.True(t, c.AgentRunning("node-2"))

	down.Store(false)
	require.NoError(t, c.Advance(ctx, time.Minute))
	assert.True(t, c.AgentRunning("node-1"))
	assert.NoError(t, c.AgentError("node-1"))
	ready, err := c.NodesReady(ctx)
	require.NoError(t, err)
	assert.True(t, ready, "node-1 registered once the store came back")
}
