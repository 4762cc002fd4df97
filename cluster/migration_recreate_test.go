package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/store"
)

// syncBuffer is a log sink safe for the cluster's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lifecycleCluster starts a two-node cluster on virtual time; it ends with
// the test.
// Its hosts are linked at bandwidth bytes/s (0: sim.DefaultBandwidth).
func lifecycleCluster(t *testing.T, ctx context.Context, bandwidth uint64) (*cluster.Cluster, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	clk := sim.NewVirtualClock(virtualStart)
	network, err := sim.NewMeshNetwork(sim.Link{Bandwidth: bandwidth})
	require.NoError(t, err)
	c, err := cluster.New(cluster.Options{
		Clock:  clk,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
			h := sim.New(sim.Options{Name: name, Clock: clk, CPUs: 4, MemoryBytes: 4 << 30})
			return h, network.Join(h)
		},
	})
	require.NoError(t, err)
	dumpOnFailure(t, logs)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.NoError(t, c.Settle(ctx))
	return c, logs
}

// runningOn waits for the VMI to run on a node and returns it.
func runningOn(t *testing.T, ctx context.Context, c *cluster.Cluster, key store.Key) *virtkit.VirtualMachineInstance {
	t.Helper()
	vmi, err := advanceUntil(ctx, c, 2*time.Minute, func() (bool, *virtkit.VirtualMachineInstance, error) {
		v := &virtkit.VirtualMachineInstance{}
		if err := c.Store().Get(ctx, key, v); err != nil {
			return false, nil, ignoreNotFound(err)
		}
		return v.Status.Phase == virtkit.Running && v.Status.NodeName != "" && (v.Status.MigrationState == nil || v.Status.MigrationState.Completed), v, nil
	})
	require.NoError(t, err)
	return vmi
}

func ignoreNotFound(err error) error {
	if err != nil && strings.Contains(err.Error(), "not found") {
		return nil
	}
	return err
}

// migrateAndWait migrates the VMI and waits for the migration to end
// (at most limit of virtual time); it returns the final migration.
func migrateAndWait(t *testing.T, ctx context.Context, c *cluster.Cluster, key store.Key, limit time.Duration) *virtkit.VirtualMachineInstanceMigration {
	t.Helper()
	mig, err := actions.Migrate(ctx, c.Store(), key, actions.MigrateOptions{})
	require.NoError(t, err)
	final, err := advanceUntil(ctx, c, limit, func() (bool, *virtkit.VirtualMachineInstanceMigration, error) {
		m := &virtkit.VirtualMachineInstanceMigration{}
		if err := c.Store().Get(ctx, store.KeyOf(mig), m); err != nil {
			return false, nil, err
		}
		return m.IsFinal(), m, nil
	})
	require.NoError(t, err, "migration %s of %s did not end", mig.Name, key)
	return final
}

// TestMigrationAfterRecreate migrates a VM back and forth, deletes it,
// applies it again under the same name (so with the same firmware UUID)
// and migrates it once more, twice: the new migrations must succeed like
// the first ones, leaving no domain behind and no guest paused, and no
// agent may mistake the new VMI's domain for the old one's.
func TestMigrationAfterRecreate(t *testing.T) {
	for _, hops := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("%d hops before the delete", hops), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c, logs := lifecycleCluster(t, ctx, 0)
			key := store.Key{Namespace: "vt", Name: "again"}
			var uids []types.UID
			for incarnation := range 3 {
				require.NoError(t, c.Apply(ctx, virtualVM(key.Name)))
				vmi := runningOn(t, ctx, c, key)
				require.NotContains(t, uids, vmi.UID)
				uids = append(uids, vmi.UID)
				for hop := range hops {
					from := vmi.Status.NodeName
					m := migrateAndWait(t, ctx, c, key, 5*time.Minute)
					require.Equal(t, virtkit.MigrationSucceeded, m.Status.Phase, "incarnation %d, hop %d: %+v", incarnation, hop, m.Status.MigrationState)
					vmi = runningOn(t, ctx, c, key)
					require.NotEqual(t, from, vmi.Status.NodeName)
					require.False(t, virtkit.IsConditionTrue(vmi.Status.Conditions, virtkit.VirtualMachineInstancePaused))
					require.NoError(t, cluster.CheckNoLeakedDomains(ctx, c))
					require.NoError(t, cluster.CheckNoPausedByEndedMigration(ctx, c))
					require.NoError(t, cluster.CheckNoDoubleRun(ctx, c))
				}
				require.NoError(t, c.Store().Delete(ctx, virtualVM(key.Name), store.DeleteOptions{}))
				_, err := advanceUntil(ctx, c, 2*time.Minute, func() (bool, struct{}, error) {
					err := c.Store().Get(ctx, key, &virtkit.VirtualMachineInstance{})
					return err != nil && ignoreNotFound(err) == nil, struct{}{}, ignoreNotFound(err)
				})
				require.NoError(t, err)
				require.NoError(t, cluster.CheckNoLeakedDomains(ctx, c))
			}
			require.NotContains(t, logs.String(), "domain name is taken")
		})
	}
}

// dumpOnFailure logs the cluster's log when the test fails.
func dumpOnFailure(t *testing.T, logs *syncBuffer) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
}

// keepsSourceHost is a simulated host whose outgoing migrations keep the
// source's persistent definition (no UndefineSource), as a hypervisor may.
type keepsSourceHost struct {
	*simHost
}

func (h keepsSourceHost) StartMigration(ctx context.Context, name string, p hypervisor.MigrationParams) (hypervisor.MigrationJob, error) {
	p.UndefineSource = false
	return h.simHost.StartMigration(ctx, name, p)
}

// TestMigrationThereAndBackLeavesNoDomain migrates a VM away and back on
// hosts that keep the source's definition: each old source removes the
// shut-off copy the migration left, including the host the guest had
// arrived at by migration (whose copy names the first host in its
// metadata).
func TestMigrationThereAndBackLeavesNoDomain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logs := &syncBuffer{}
	dumpOnFailure(t, logs)
	clk := sim.NewVirtualClock(virtualStart)
	network, err := sim.NewMeshNetwork(sim.Link{})
	require.NoError(t, err)
	c, err := cluster.New(cluster.Options{
		Clock:  clk,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
			h := sim.New(sim.Options{Name: name, Clock: clk, CPUs: 4, MemoryBytes: 4 << 30})
			return keepsSourceHost{simHost: h}, network.Join(h)
		},
	})
	require.NoError(t, err)
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(cctx) }()
	defer func() { stop(); <-done }()
	require.NoError(t, c.Settle(ctx))

	key := store.Key{Namespace: "vt", Name: "roundtrip"}
	require.NoError(t, c.Apply(ctx, virtualVM(key.Name)))
	runningOn(t, ctx, c, key)
	for i := range 3 {
		m := migrateAndWait(t, ctx, c, key, 2*time.Minute)
		require.Equal(t, virtkit.MigrationSucceeded, m.Status.Phase, "migration %d", i)
		runningOn(t, ctx, c, key)
		require.NoError(t, c.Advance(ctx, 2*time.Second))
		require.NoError(t, cluster.CheckNoLeakedDomains(ctx, c), "after migration %d", i)
	}
}
