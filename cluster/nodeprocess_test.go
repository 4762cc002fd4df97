package cluster_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// runProcess runs p until the test ends and returns a function that stops
// it and returns Run's error.
func runProcess(t *testing.T, p *cluster.NodeProcess) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var err error
	stopped := false
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Error("node process did not stop")
			}
		}
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// The zero value is a simulated host node-1 on a memory store: it
// registers its Node, and marks it not ready when it stops.
func TestNodeProcessZeroValue(t *testing.T) {
	p, err := cluster.NewNodeProcess(t.Context(), cluster.NodeProcessOptions{})
	require.NoError(t, err)
	st := p.Options().Node.Agent.Store
	require.NotNil(t, st)
	stop := runProcess(t, p)
	require.Eventually(t, func() bool {
		n := &virtkit.Node{}
		return st.Get(t.Context(), store.Key{Name: "node-1"}, n) == nil && virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady)
	}, 30*time.Second, 20*time.Millisecond, "node-1 registers and is ready")
	require.NoError(t, stop())
	n := &virtkit.Node{}
	require.NoError(t, st.Get(context.Background(), store.Key{Name: "node-1"}, n))
	assert.False(t, virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady), "marked not ready when stopped")
}

// flakyEventStore misses every other event write, as a store that
// restarts or a short partition does.
type flakyEventStore struct {
	store.Store
	writes atomic.Int64
}

var errMissed = errors.New("store unreachable (missed by the test)")

func (s *flakyEventStore) miss(obj virtkit.Object) bool {
	_, isEvent := obj.(*virtkit.Event)
	return isEvent && s.writes.Add(1)%2 == 1
}

func (s *flakyEventStore) Create(ctx context.Context, obj virtkit.Object) error {
	if s.miss(obj) {
		return errMissed
	}
	return s.Store.Create(ctx, obj)
}

func (s *flakyEventStore) Update(ctx context.Context, obj virtkit.Object) error {
	if s.miss(obj) {
		return errMissed
	}
	return s.Store.Update(ctx, obj)
}

// A node process's recorder runs its retries: an event whose write the
// store missed is written by a retry, reported by the node agent with the
// node's name as its instance.
func TestNodeProcessEventsAreRetried(t *testing.T) {
	st := &flakyEventStore{Store: store.NewMemory()}
	p, err := cluster.NewNodeProcess(t.Context(), cluster.NodeProcessOptions{
		Node: cluster.NodeOptions{Agent: node.Options{NodeName: "n1", Store: st}},
	})
	require.NoError(t, err)
	rec := p.Options().Node.Agent.Events
	require.NotNil(t, rec)
	runProcess(t, p)
	vmi := &virtkit.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a", UID: "u1"},
	}
	require.Eventually(t, func() bool {
		// Once more each time: every other write is missed.
		rec.Event(t.Context(), vmi, virtkit.EventTypeNormal, virtkit.EventReasonStarted, "Start", "VirtualMachineInstance started")
		var l virtkit.EventList
		if err := st.List(t.Context(), &l, store.ListOptions{Namespace: "default"}); err != nil {
			return false
		}
		for _, e := range l.Items {
			if e.Regarding.Name == "a" && e.ReportingController == virtkit.ReportingNodeAgent && e.ReportingInstance == "n1" && e.Count() > 1 {
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "the repeated event is stored despite missed writes")
}

// A simulated host given a tcp://HOST:PORT migration URI listens there
// and publishes the address it really listens on.
func TestNodeProcessSimMigrationListener(t *testing.T) {
	p, err := cluster.NewNodeProcess(t.Context(), cluster.NodeProcessOptions{
		Node: cluster.NodeOptions{Agent: node.Options{NodeName: "n1", Migration: node.MigrationOptions{URI: "tcp://127.0.0.1:0"}}},
	})
	require.NoError(t, err)
	defer p.Close()
	uri := p.Options().Node.Agent.Migration.URI
	assert.True(t, strings.HasPrefix(uri, "tcp://127.0.0.1:"), uri)
	assert.NotEqual(t, "tcp://127.0.0.1:0", uri)

	_, err = cluster.NewNodeProcess(t.Context(), cluster.NodeProcessOptions{
		Node: cluster.NodeOptions{Agent: node.Options{NodeName: "n2", Hypervisor: sim.New(sim.Options{Name: "n2"}),
			Migration: node.MigrationOptions{URI: "qemu+tcp://h/system"}}},
	})
	require.ErrorIs(t, err, virtkit.ErrInvalidOptions)
	assert.ErrorContains(t, err, "Node.Agent.Migration.URI")
}

// A control plane runs no hosts: it refuses the options that make them.
func TestNewControlPlane(t *testing.T) {
	c, err := cluster.NewControlPlane(cluster.Options{})
	require.NoError(t, err)
	assert.Empty(t, c.Nodes())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	require.Eventually(t, func() bool {
		var kv virtkit.KubeVirtList
		return c.Store().List(t.Context(), &kv, store.ListOptions{}) == nil && len(kv.Items) == 1
	}, 30*time.Second, 20*time.Millisecond, "the KubeVirt object is installed")
	cancel()
	require.NoError(t, <-done)

	_, err = cluster.NewControlPlane(cluster.Options{Nodes: 2})
	require.ErrorIs(t, err, virtkit.ErrInvalidOptions)
	assert.ErrorContains(t, err, "Nodes")
}
