package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

func (e *env) drain(node string, on bool) {
	e.t.Helper()
	n := &virtkit.Node{}
	require.NoError(e.t, e.st.Get(e.ctx, store.Key{Name: node}, n))
	n.Spec.Unschedulable = on
	n.Spec.Taints = nil
	if on {
		n.Spec.Taints = []virtkit.Taint{{Key: virtkit.DrainTaintKey, Effect: virtkit.TaintEffectNoSchedule}}
	}
	require.NoError(e.t, e.st.Update(e.ctx, n))
}

func (e *env) migrations() []virtkit.VirtualMachineInstanceMigration {
	e.t.Helper()
	l := &virtkit.VirtualMachineInstanceMigrationList{}
	require.NoError(e.t, e.st.List(e.ctx, l, store.ListOptions{}))
	return l.Items
}

func TestEviction(t *testing.T) {
	tests := []struct {
		name          string
		strategy      *virtkit.EvictionStrategy
		migratable    bool
		wantEvacuated bool
		wantMigration bool
	}{
		{name: "default None", strategy: nil},
		{name: "None", strategy: ptr(virtkit.EvictionStrategyNone)},
		{name: "External", strategy: ptr(virtkit.EvictionStrategyExternal), wantEvacuated: true},
		{name: "LiveMigrate", strategy: ptr(virtkit.EvictionStrategyLiveMigrate), migratable: true, wantEvacuated: true, wantMigration: true},
		// KubeVirt migrates no VMI that cannot migrate: such a migration
		// fails, and another would be created after it, forever.
		{name: "LiveMigrate not migratable", strategy: ptr(virtkit.EvictionStrategyLiveMigrate)},
		{name: "LiveMigrateIfPossible migratable", strategy: ptr(virtkit.EvictionStrategyLiveMigrateIfPossible), migratable: true, wantEvacuated: true, wantMigration: true},
		{name: "LiveMigrateIfPossible not migratable", strategy: ptr(virtkit.EvictionStrategyLiveMigrateIfPossible)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 1)
			vmi := newVMI("a", "1Gi")
			vmi.Spec.EvictionStrategy = tt.strategy
			require.NoError(t, e.st.Create(e.ctx, vmi))
			e.settle()
			if tt.migratable {
				v := e.getVMI("a")
				virtkit.SetCondition(&v.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstanceIsMigratable, Status: virtkit.ConditionTrue}, metav1.Now())
				require.NoError(t, e.st.UpdateStatus(e.ctx, v))
			}
			e.drain("n1", true)
			e.settle()

			v := e.getVMI("a")
			assert.Equal(t, virtkit.Running, v.Status.Phase, "the VMI keeps running")
			if tt.wantEvacuated {
				assert.Equal(t, "n1", v.Status.EvacuationNodeName)
				assert.True(t, virtkit.HasCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceEvictionRequested, virtkit.ConditionTrue, virtkit.EvictionRequestedReason))
			} else {
				assert.Empty(t, v.Status.EvacuationNodeName)
				assert.Nil(t, virtkit.GetCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceEvictionRequested))
			}
			migs := e.migrations()
			if !tt.wantMigration {
				assert.Empty(t, migs)
				return
			}
			require.Len(t, migs, 1, "exactly one, even after many reconciles")
			m := migs[0]
			assert.Regexp(t, "^kubevirt-evacuation-", m.Name)
			assert.Equal(t, "n1", m.Annotations[virtkit.EvacuationMigrationAnnotation])
			assert.Equal(t, "a", m.Spec.VMIName)
			require.NotNil(t, m.Spec.Priority)
			assert.Equal(t, virtkit.PrioritySystemCritical, *m.Spec.Priority)

			// Undrained: the request is withdrawn.
			e.drain("n1", false)
			e.settle()
			v = e.getVMI("a")
			assert.Empty(t, v.Status.EvacuationNodeName)
			assert.Nil(t, virtkit.GetCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceEvictionRequested))
		})
	}
}

func TestCordonWithoutDrainTaintIsNotADrain(t *testing.T) {
	n := &virtkit.Node{Spec: virtkit.NodeSpec{Unschedulable: true}}
	assert.False(t, IsDraining(n))
	n.Spec.Taints = []virtkit.Taint{{Key: virtkit.DrainTaintKey, Effect: virtkit.TaintEffectNoSchedule}}
	assert.True(t, IsDraining(n))
	n.Spec.Unschedulable = false
	assert.False(t, IsDraining(n))
}

func ptr[T any](v T) *T { return &v }

// An eviction through the API marks the VMI (status.evacuationNodeName) on
// a node kubectl drain only cordoned: the VMI is migrated by its strategy,
// uncordoning does not withdraw the mark, and the mark goes once the VMI
// has left the node.
func TestEvictionMarkWithoutDrainTaint(t *testing.T) {
	tests := []struct {
		name          string
		strategy      virtkit.EvictionStrategy
		wantMigration bool
	}{
		{name: "LiveMigrate", strategy: virtkit.EvictionStrategyLiveMigrate, wantMigration: true},
		{name: "LiveMigrateIfPossible", strategy: virtkit.EvictionStrategyLiveMigrateIfPossible, wantMigration: true},
		{name: "External", strategy: virtkit.EvictionStrategyExternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 2)
			vmi := newVMI("a", "1Gi")
			vmi.Spec.EvictionStrategy = ptr(tt.strategy)
			require.NoError(t, e.st.Create(e.ctx, vmi))
			e.settle()
			v := e.getVMI("a")
			node := v.Status.NodeName
			require.NotEmpty(t, node)
			n := &virtkit.Node{}
			require.NoError(t, e.st.Get(e.ctx, store.Key{Name: node}, n))
			n.Spec.Unschedulable = true // kubectl cordon: no drain taint
			require.NoError(t, e.st.Update(e.ctx, n))
			e.settle()
			assert.Empty(t, e.migrations(), "a cordon alone evacuates nothing")

			v = e.getVMI("a")
			virtkit.SetCondition(&v.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstanceIsMigratable, Status: virtkit.ConditionTrue}, metav1.Now())
			v.Status.EvacuationNodeName = node // what the eviction API writes
			require.NoError(t, e.st.UpdateStatus(e.ctx, v))
			// The VMI's watch event reaches the reconciler through its
			// map, which wakes the node; the env's passes reconcile every
			// node but do not feed the watches.
			assert.Contains(t, e.ev.Watches()[1].Map(e.ctx, v), reconcile.Request{Name: node})
			e.settle()

			v = e.getVMI("a")
			assert.Equal(t, node, v.Status.EvacuationNodeName)
			c := virtkit.GetCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceEvictionRequested)
			require.NotNil(t, c)
			assert.Equal(t, virtkit.ConditionTrue, c.Status)
			migs := e.migrations()
			if !tt.wantMigration {
				assert.Empty(t, migs)
				return
			}
			require.Len(t, migs, 1)
			assert.Equal(t, node, migs[0].Annotations[virtkit.EvacuationMigrationAnnotation])

			// Uncordoned: an eviction's mark stays.
			require.NoError(t, e.st.Get(e.ctx, store.Key{Name: node}, n))
			n.Spec.Unschedulable = false
			require.NoError(t, e.st.Update(e.ctx, n))
			e.settle()
			assert.Equal(t, node, e.getVMI("a").Status.EvacuationNodeName)

			// The VMI left the node (as a migration's handover moves it):
			// the mark goes.
			v = e.getVMI("a")
			v.Status.NodeName = "elsewhere"
			require.NoError(t, e.st.UpdateStatus(e.ctx, v))
			assert.Contains(t, e.ev.Watches()[1].Map(e.ctx, v), reconcile.Request{Name: node})
			e.settle()
			v = e.getVMI("a")
			assert.Empty(t, v.Status.EvacuationNodeName)
			assert.Nil(t, virtkit.GetCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceEvictionRequested))
		})
	}
}

// The eviction strategy of a VMI that names none is the KubeVirt object's
// as it is at each eviction (ReconcilerOptions.DefaultEvictionStrategy
// while there is no KubeVirt object), not the one the reconciler started
// with.
func TestEvictionReadsTheClusterStrategyAtEachEviction(t *testing.T) {
	e := newEnv(t, 2)
	var err error
	e.ev, err = NewEvictionReconciler(ReconcilerOptions{Store: e.st, Clock: e.clock, DefaultEvictionStrategy: virtkit.EvictionStrategyExternal})
	require.NoError(t, err)
	require.NoError(t, e.st.Create(e.ctx, newVMI("a", "1Gi")))
	e.settle()
	v := e.getVMI("a")
	require.Nil(t, v.Spec.EvictionStrategy)
	node := v.Status.NodeName
	require.NotEmpty(t, node)
	virtkit.SetCondition(&v.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstanceIsMigratable, Status: virtkit.ConditionTrue}, metav1.Now())
	require.NoError(t, e.st.UpdateStatus(e.ctx, v))

	// No KubeVirt object: the option's External marks and migrates nothing.
	e.drain(node, true)
	e.settle()
	assert.Equal(t, node, e.getVMI("a").Status.EvacuationNodeName, "External marks the VMI")
	assert.Empty(t, e.migrations())

	// The KubeVirt object names None: nothing more happens.
	e.drain(node, false)
	e.settle()
	require.Empty(t, e.getVMI("a").Status.EvacuationNodeName)
	kv := &virtkit.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: virtkit.DefaultKubeVirtNamespace, Name: virtkit.DefaultKubeVirtName}}
	kv.Spec.Configuration.EvictionStrategy = ptr(virtkit.EvictionStrategyNone)
	require.NoError(t, e.st.Create(e.ctx, kv))
	e.drain(node, true)
	e.settle()
	assert.Empty(t, e.getVMI("a").Status.EvacuationNodeName, "None: the taint alone evicts nothing")
	assert.Empty(t, e.migrations())

	// Changed to LiveMigrate while the node drains: the next pass migrates.
	require.NoError(t, e.st.Get(e.ctx, store.KeyOf(kv), kv))
	kv.Spec.Configuration.EvictionStrategy = ptr(virtkit.EvictionStrategyLiveMigrate)
	require.NoError(t, e.st.Update(e.ctx, kv))
	e.settle()
	assert.Equal(t, node, e.getVMI("a").Status.EvacuationNodeName)
	migs := e.migrations()
	require.Len(t, migs, 1)
	assert.Equal(t, node, migs[0].Annotations[virtkit.EvacuationMigrationAnnotation])
}
