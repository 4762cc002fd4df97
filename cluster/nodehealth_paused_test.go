package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/store"
)

// A VMI whose node went silent right after the migration monitor paused
// its guest and the migration failed (the source could not resume it) is
// failed by the node-health controller without the guest's conditions: a
// failed VMI is not "paused by the migration monitor", before or after
// its agent comes back.
func TestUnresponsiveNodeFailsPausedVMIWithoutPausedCondition(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clk := sim.NewVirtualClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	c, err := cluster.New(cluster.Options{Clock: clk, Nodes: 1, Seed: 7})
	require.NoError(t, err)
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
	require.NoError(t, c.Store().Get(ctx, store.KeyOf(vmi), vmi))
	require.Equal(t, virtkit.Running, vmi.Status.Phase)

	// The agent dies after it reported the guest paused by the migration
	// monitor of a migration that then failed.
	require.NoError(t, c.CrashAgent(ctx, "node-1"))
	now := metav1.NewTime(clk.Now())
	vmi.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{MigrationUID: "m-1", SourceNode: "node-1",
		TargetNode: "node-2", StartTimestamp: &now, EndTimestamp: &now, Failed: true}
	virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstancePaused,
		Status: virtkit.ConditionTrue, Reason: virtkit.PausedByMigrationMonitorReason}, now)
	require.NoError(t, c.Store().UpdateStatus(ctx, vmi))
	require.Error(t, cluster.CheckNoPausedByEndedMigration(ctx, c), "the invariant sees the paused guest")

	require.NoError(t, c.Advance(ctx, 10*time.Minute))
	require.NoError(t, c.Store().Get(ctx, store.KeyOf(vmi), vmi))
	require.Equal(t, virtkit.Failed, vmi.Status.Phase)
	assert.Equal(t, virtkit.NodeUnresponsiveReason, vmi.Status.Reason)
	assert.NoError(t, cluster.CheckNoPausedByEndedMigration(ctx, c))

	require.NoError(t, c.RestartAgent(ctx, "node-1"))
	require.NoError(t, c.Advance(ctx, time.Minute))
	assert.NoError(t, cluster.CheckNoPausedByEndedMigration(ctx, c))
}
