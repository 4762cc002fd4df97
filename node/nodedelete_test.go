package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// Deleting the Node object of a healthy node: its agent registers it again
// with the next heartbeat and none of its VMIs is restarted.
func TestDeletedNodeOfAHealthyAgentIsRegisteredAgainAndKeepsItsVMIs(t *testing.T) {
	st := store.NewMemory()
	nh, err := controller.NewNodeHealthReconciler(controller.NodeHealthOptions{Store: st,
		MonitorGracePeriod: time.Second, UnresponsiveGracePeriod: time.Second})
	require.NoError(t, err)
	c, err := cluster.New(cluster.Options{Store: st, NodeNames: []string{"node-a"},
		Replace:   map[string]reconcile.Reconciler{cluster.NodeHealthController: nh},
		NodeAgent: nodeOptionsForDeleteTest()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	for _, name := range []string{"vm-1", "vm-2"} {
		require.NoError(t, cluster.Apply(ctx, st, partitionVM(name)))
	}
	before := map[string]*virtkit.VirtualMachineInstance{}
	for _, name := range []string{"vm-1", "vm-2"} {
		before[name] = eventuallyPhase(t, st, name, virtkit.Running)
	}

	n := &virtkit.Node{}
	require.NoError(t, st.Get(ctx, store.Key{Name: "node-a"}, n))
	require.NoError(t, st.Delete(ctx, n, store.DeleteOptions{}))
	deleted := n.UID
	require.Eventually(t, func() bool {
		again := &virtkit.Node{}
		return st.Get(ctx, store.Key{Name: "node-a"}, again) == nil && again.UID != deleted
	}, 10*time.Second, 10*time.Millisecond, "the agent registers its Node again")

	// Longer than the node-health grace: nothing happens to the VMIs.
	time.Sleep(3 * time.Second)
	for name, old := range before {
		vmi, ok := getVMI(t, st, name)
		require.True(t, ok, name)
		assert.Equal(t, old.UID, vmi.UID, "%s: not restarted", name)
		assert.Equal(t, virtkit.Running, vmi.Status.Phase, name)
	}
	again := &virtkit.Node{}
	require.NoError(t, st.Get(ctx, store.Key{Name: "node-a"}, again))
	assert.True(t, virtkit.IsConditionTrue(again.Status.Conditions, virtkit.NodeReady))
}

func nodeOptionsForDeleteTest() node.Options {
	return node.Options{HeartbeatInterval: 100 * time.Millisecond, StatusInterval: 200 * time.Millisecond}
}
