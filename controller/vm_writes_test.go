package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// countingStore counts status writes per kind.
type countingStore struct {
	store.Store
	vmStatusWrites atomic.Int64
}

func (c *countingStore) UpdateStatus(ctx context.Context, obj virtkit.Object) error {
	if _, ok := obj.(*virtkit.VirtualMachine); ok {
		c.vmStatusWrites.Add(1)
	}
	return c.Store.UpdateStatus(ctx, obj)
}

// A VM whose VMI has not reported readiness yet (not scheduled, say) gets
// its Ready condition from the VM controller. Reconciling it again, seconds
// later, must not rewrite the status with a new transition time: that write
// would trigger the next reconcile, and so on for ever.
func TestVMStatusNotRewrittenWhenOnlyTimeMoves(t *testing.T) {
	var cs *countingStore
	e := newEnvWith(t, 0, func(st store.Store) store.Store {
		cs = &countingStore{Store: st}
		return cs
	})
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
	// Only the VM controller runs: the VMI it creates has no conditions yet.
	for i := 0; i < 2; i++ {
		_, err := e.vm.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "vm"})
		require.NoError(t, err)
	}
	vmi := e.getVMI("vm")
	require.NotNil(t, vmi)
	require.Nil(t, virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceReady))

	before := cs.vmStatusWrites.Load()
	cond := virtkit.GetCondition(e.getVM("vm").Status.Conditions, virtkit.VirtualMachineReady)
	require.NotNil(t, cond)
	for i := 0; i < 5; i++ {
		e.clock.Advance(3 * time.Second)
		_, err := e.vm.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "vm"})
		require.NoError(t, err)
	}
	assert.Equal(t, before, cs.vmStatusWrites.Load(), "reconciles that change nothing but the time write nothing")
	after := virtkit.GetCondition(e.getVM("vm").Status.Conditions, virtkit.VirtualMachineReady)
	require.NotNil(t, after)
	assert.Equal(t, cond.LastTransitionTime, after.LastTransitionTime)
}

// While its VMI is Scheduled (handed to the node agent), the VM's status is
// not rewritten for the conditions copied from the VMI alone: the write for
// the next phase carries them, or a requeue writes them after a bound.
func TestVMStatusWaitsForThePhaseDuringHandOff(t *testing.T) {
	var cs *countingStore
	e := newEnvWith(t, 0, func(st store.Store) store.Store {
		cs = &countingStore{Store: st}
		return cs
	})
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
	_, err := e.vm.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "vm"})
	require.NoError(t, err)
	require.Equal(t, virtkit.VirtualMachineStatusStarting, e.getVM("vm").Status.PrintableStatus)

	vmi := e.getVMI("vm")
	vmi.Status.Phase, vmi.Status.NodeName = virtkit.Scheduled, "n1"
	virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstancePodScheduled, Status: virtkit.ConditionTrue}, metav1.NewTime(e.clock.Now()))
	require.NoError(t, e.st.UpdateStatus(e.ctx, vmi))

	before := cs.vmStatusWrites.Load()
	res, err := e.vm.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "vm"})
	require.NoError(t, err)
	assert.Equal(t, before, cs.vmStatusWrites.Load(), "only a copied condition changed during the hand-off")
	assert.Positive(t, res.RequeueAfter)
	assert.LessOrEqual(t, res.RequeueAfter, handOffFlush)

	// The VMI runs: the phase change is written at once, with the
	// conditions held back.
	vmi = e.getVMI("vm")
	vmi.Status.Phase = virtkit.Running
	virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstanceReady, Status: virtkit.ConditionTrue}, metav1.NewTime(e.clock.Now()))
	require.NoError(t, e.st.UpdateStatus(e.ctx, vmi))
	_, err = e.vm.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "vm"})
	require.NoError(t, err)
	assert.Equal(t, before+1, cs.vmStatusWrites.Load())
	vm := e.getVM("vm")
	assert.Equal(t, virtkit.VirtualMachineStatusRunning, vm.Status.PrintableStatus)
	assert.NotNil(t, virtkit.GetCondition(vm.Status.Conditions, virtkit.VirtualMachineInstancePodScheduled))
}

// A VMI stuck in Scheduled gets its conditions onto the VM after the bound.
func TestVMStatusHandOffHoldIsBounded(t *testing.T) {
	var cs *countingStore
	e := newEnvWith(t, 0, func(st store.Store) store.Store {
		cs = &countingStore{Store: st}
		return cs
	})
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
	_, err := e.vm.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "vm"})
	require.NoError(t, err)
	vmi := e.getVMI("vm")
	vmi.Status.Phase, vmi.Status.NodeName = virtkit.Scheduled, "n1"
	virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstancePodScheduled, Status: virtkit.ConditionTrue}, metav1.NewTime(e.clock.Now()))
	require.NoError(t, e.st.UpdateStatus(e.ctx, vmi))
	before := cs.vmStatusWrites.Load()
	_, err = e.vm.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "vm"})
	require.NoError(t, err)
	require.Equal(t, before, cs.vmStatusWrites.Load())

	e.clock.Advance(handOffFlush)
	_, err = e.vm.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "vm"})
	require.NoError(t, err)
	assert.Equal(t, before+1, cs.vmStatusWrites.Load())
	assert.NotNil(t, virtkit.GetCondition(e.getVM("vm").Status.Conditions, virtkit.VirtualMachineInstancePodScheduled))
}
