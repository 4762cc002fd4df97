package cluster_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// The source agent loses the store while the migration copies, so the
// switchover happens but the agent cannot record the outcome (as when it
// dies right after the switchover). Once it reaches the store again it
// finds the guest gone from its host: the migration succeeded, the target
// takes the VMI over, and the guest that arrived names the target in its
// virtkit metadata, so the target's agent owns it by what its host alone
// says (after a restart, after the VMI is gone).
func TestMigrationOutcomeLostBySource(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, down := offlineCluster(t, ctx)
	key := store.Key{Namespace: "vt", Name: "hop"}
	require.NoError(t, c.Apply(ctx, virtualVM(key.Name)))
	source, target := migratableOn(t, ctx, c, key)

	mig := switchedOver(t, ctx, c, key, source, target, down)
	down[source].Store(false)

	final, err := advanceUntil(ctx, c, 2*time.Minute, func() (bool, *virtkit.VirtualMachineInstanceMigration, error) {
		m := &virtkit.VirtualMachineInstanceMigration{}
		err := c.Store().Get(ctx, store.KeyOf(mig), m)
		return err == nil && m.IsFinal(), m, err
	})
	require.NoError(t, err)
	reason := ""
	if final.Status.MigrationState != nil {
		reason = final.Status.MigrationState.FailureReason
	}
	assert.Equal(t, virtkit.MigrationSucceeded, final.Status.Phase, "failure reason: %s", reason)
	vmi := &virtkit.VirtualMachineInstance{}
	require.NoError(t, c.Store().Get(ctx, key, vmi))
	assert.Equal(t, virtkit.Running, vmi.Status.Phase)
	assert.Equal(t, target, vmi.Status.NodeName)

	doms, err := c.Node(target).Agent.HostDomains(ctx)
	require.NoError(t, err)
	require.Len(t, doms, 1)
	assert.Equal(t, target, doms[0].Node, "the migrated guest's metadata names the target")
	assert.True(t, doms[0].Owned)
	doms, err = c.Node(source).Agent.HostDomains(ctx)
	require.NoError(t, err)
	assert.Empty(t, doms, "nothing left on the source")
}

// The source agent is cut off the store for good after the switchover:
// the node-health controller fails the VMI (node unresponsive) and the
// migration with it, although the guest runs on the target. The control
// plane has given up on that guest, so the target's agent destroys it
// rather than keep a guest no VMI stands for.
func TestIncomingGuestOfFailedVMIRemoved(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, down := offlineCluster(t, ctx)
	key := store.Key{Namespace: "vt", Name: "alone"}
	tmpl := virtualVM(key.Name).Spec.Template
	require.NoError(t, c.Apply(ctx, &virtkit.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec:       tmpl.Spec,
	}))
	source, target := migratableOn(t, ctx, c, key)
	mig := switchedOver(t, ctx, c, key, source, target, down)

	vmi, err := advanceUntil(ctx, c, 5*time.Minute, func() (bool, *virtkit.VirtualMachineInstance, error) {
		v := &virtkit.VirtualMachineInstance{}
		err := c.Store().Get(ctx, key, v)
		return err == nil && v.IsFinal(), v, err
	})
	require.NoError(t, err)
	assert.Equal(t, virtkit.Failed, vmi.Status.Phase)
	require.NoError(t, c.Advance(ctx, 30*time.Second))
	m := &virtkit.VirtualMachineInstanceMigration{}
	require.NoError(t, c.Store().Get(ctx, store.KeyOf(mig), m))
	assert.Equal(t, virtkit.MigrationFailed, m.Status.Phase)
	for _, n := range []string{source, target} {
		doms, err := c.Node(n).Agent.HostDomains(ctx)
		require.NoError(t, err)
		for _, d := range doms {
			assert.False(t, d.Active, "%s: %s still runs though its VMI failed", n, d.Name)
		}
	}
}

// offlineCluster is a two-node cluster on virtual time whose node agents'
// links to the store can be cut (down[node]); a migration of 512 MiB
// takes about 27 s.
func offlineCluster(t *testing.T, ctx context.Context) (*cluster.Cluster, map[string]*atomic.Bool) {
	t.Helper()
	logs := &syncBuffer{}
	clk := sim.NewVirtualClock(virtualStart)
	network, err := sim.NewMeshNetwork(sim.Link{Bandwidth: 20_000_000})
	require.NoError(t, err)
	down := map[string]*atomic.Bool{"node-1": {}, "node-2": {}}
	c, err := cluster.New(cluster.Options{
		Clock: clk, Nodes: 2, Seed: 7,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
			h := sim.New(sim.Options{Name: name, Clock: clk, CPUs: 4, MemoryBytes: 4 << 30})
			return h, network.Join(h)
		},
		ConfigureNode: func(name string, o *node.Options) {
			o.Store = offline{Store: o.Store, down: down[name]}
		},
	})
	require.NoError(t, err)
	dumpOnFailure(t, logs)
	ctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() { stop(); <-done })
	require.NoError(t, c.Settle(ctx))
	return c, down
}

// migratableOn waits for the VMI at key to run and be live-migratable; it
// returns its node and the other one.
func migratableOn(t *testing.T, ctx context.Context, c *cluster.Cluster, key store.Key) (source, target string) {
	t.Helper()
	source = runningOn(t, ctx, c, key).Status.NodeName
	target = map[string]string{"node-1": "node-2", "node-2": "node-1"}[source]
	_, err := advanceUntil(ctx, c, time.Minute, func() (bool, struct{}, error) {
		v := &virtkit.VirtualMachineInstance{}
		err := c.Store().Get(ctx, key, v)
		return virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceIsMigratable), struct{}{}, err
	})
	require.NoError(t, err)
	return source, target
}

// switchedOver starts a migration of the VMI at key and cuts the source
// agent off the store once the job runs, until past the switchover: the
// guest runs on the target, and the source agent could not record it.
func switchedOver(t *testing.T, ctx context.Context, c *cluster.Cluster, key store.Key, source, target string, down map[string]*atomic.Bool) *virtkit.VirtualMachineInstanceMigration {
	t.Helper()
	mig, err := actions.Migrate(ctx, c.Store(), key, actions.MigrateOptions{})
	require.NoError(t, err)
	_, err = advanceUntil(ctx, c, time.Minute, func() (bool, struct{}, error) {
		v := &virtkit.VirtualMachineInstance{}
		err := c.Store().Get(ctx, key, v)
		return v.Status.MigrationState != nil && v.Status.MigrationState.StartTimestamp != nil, struct{}{}, err
	})
	require.NoError(t, err)
	down[source].Store(true)
	// Past the switchover, short of the fence timeout (60 s).
	require.NoError(t, c.Advance(ctx, 40*time.Second))
	doms, err := c.Node(target).Agent.HostDomains(ctx)
	require.NoError(t, err)
	require.Len(t, doms, 1)
	require.True(t, doms[0].Active, "the guest runs on the target: %+v", doms[0])
	return mig
}
