package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// gcFixture is a store with a VM "vm", a ReplicaSet "rs" and a VMI "vmi"
// owned by both, the VM's reference blocking its owner's deletion.
func gcFixture(t *testing.T) (context.Context, *store.Memory, *GarbageCollector, *virtkit.VirtualMachine, *virtkit.VirtualMachineInstanceReplicaSet) {
	t.Helper()
	ctx := t.Context()
	st := store.NewMemory()
	gc, err := NewGarbageCollector(ReconcilerOptions{Store: st})
	require.NoError(t, err)
	vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm"}}
	require.NoError(t, st.Create(ctx, vm))
	rs := &virtkit.VirtualMachineInstanceReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "rs"}}
	require.NoError(t, st.Create(ctx, rs))
	no := false
	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vmi", OwnerReferences: []metav1.OwnerReference{
		newControllerRef(vm, virtkit.KindVirtualMachine),
		{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstanceReplicaSet, Name: "rs", UID: rs.UID, BlockOwnerDeletion: &no},
	}}}
	require.NoError(t, st.Create(ctx, vmi))
	return ctx, st, gc, vm, rs
}

func gcReconcile(t *testing.T, gc *GarbageCollector, kind, name string) reconcile.Result {
	t.Helper()
	res, err := gc.Reconcile(t.Context(), GarbageCollectorRequest(kind, "default", name))
	require.NoError(t, err)
	return res
}

func TestGarbageCollector(t *testing.T) {
	policy := func(p metav1.DeletionPropagation) store.DeleteOptions {
		return store.DeleteOptions{PropagationPolicy: &p}
	}
	t.Run("orphan drops only the owner's reference, then the finalizer", func(t *testing.T) {
		ctx, st, gc, vm, rs := gcFixture(t)
		require.NoError(t, st.Delete(ctx, vm, policy(metav1.DeletePropagationOrphan)))
		gcReconcile(t, gc, virtkit.KindVirtualMachine, "vm")
		requireNotFound(t, st.Get(ctx, key("vm"), &virtkit.VirtualMachine{}))
		vmi := &virtkit.VirtualMachineInstance{}
		require.NoError(t, st.Get(ctx, key("vmi"), vmi))
		require.Len(t, vmi.OwnerReferences, 1)
		assert.Equal(t, rs.UID, vmi.OwnerReferences[0].UID)
		assert.Nil(t, vmi.DeletionTimestamp)
	})
	t.Run("foreground deletes dependents and waits for the blocking ones", func(t *testing.T) {
		ctx, st, gc, vm, _ := gcFixture(t)
		vmi := &virtkit.VirtualMachineInstance{}
		require.NoError(t, st.Get(ctx, key("vmi"), vmi))
		vmi.Finalizers = []string{"example.com/hold"}
		require.NoError(t, st.Update(ctx, vmi))
		require.NoError(t, st.Delete(ctx, vm, policy(metav1.DeletePropagationForeground)))
		res := gcReconcile(t, gc, virtkit.KindVirtualMachine, "vm")
		assert.Positive(t, res.RequeueAfter, "waits for the VMI")
		require.NoError(t, st.Get(ctx, key("vmi"), vmi))
		assert.NotNil(t, vmi.DeletionTimestamp, "the dependent is being deleted")
		got := &virtkit.VirtualMachine{}
		require.NoError(t, st.Get(ctx, key("vm"), got), "the owner waits")
		assert.Contains(t, got.Finalizers, store.FinalizerDeleteDependents)

		vmi.Finalizers = nil
		require.NoError(t, st.Update(ctx, vmi))
		gcReconcile(t, gc, virtkit.KindVirtualMachine, "vm")
		requireNotFound(t, st.Get(ctx, key("vm"), &virtkit.VirtualMachine{}))
	})
	t.Run("background: a dependent with another live owner loses the dangling reference", func(t *testing.T) {
		ctx, st, gc, vm, rs := gcFixture(t)
		require.NoError(t, st.Delete(ctx, vm, policy(metav1.DeletePropagationBackground)))
		gcReconcile(t, gc, virtkit.KindVirtualMachine, "vm")
		vmi := &virtkit.VirtualMachineInstance{}
		require.NoError(t, st.Get(ctx, key("vmi"), vmi))
		require.Len(t, vmi.OwnerReferences, 1)
		assert.Equal(t, rs.UID, vmi.OwnerReferences[0].UID)

		require.NoError(t, st.Delete(ctx, rs, store.DeleteOptions{}))
		gcReconcile(t, gc, virtkit.KindVirtualMachineInstanceReplicaSet, "rs")
		requireNotFound(t, st.Get(ctx, key("vmi"), &virtkit.VirtualMachineInstance{}))
	})
	t.Run("a new owner of the same name does not keep the old one's dependents", func(t *testing.T) {
		ctx, st, gc, vm, _ := gcFixture(t)
		require.NoError(t, st.Delete(ctx, vm, store.DeleteOptions{}))
		again := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm"}}
		require.NoError(t, st.Create(ctx, again))
		gcReconcile(t, gc, virtkit.KindVirtualMachine, "vm")
		vmi := &virtkit.VirtualMachineInstance{}
		require.NoError(t, st.Get(ctx, key("vmi"), vmi), "the ReplicaSet still owns it")
		require.Len(t, vmi.OwnerReferences, 1)
		assert.Equal(t, virtkit.KindVirtualMachineInstanceReplicaSet, vmi.OwnerReferences[0].Kind)
	})
	t.Run("a leaf kind deleted with orphan just loses the finalizer", func(t *testing.T) {
		ctx, st, gc, _, _ := gcFixture(t)
		cr := &virtkit.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cr"}}
		require.NoError(t, st.Create(ctx, cr))
		require.NoError(t, st.Delete(ctx, cr, policy(metav1.DeletePropagationOrphan)))
		gcReconcile(t, gc, "ControllerRevision", "cr")
		requireNotFound(t, st.Get(ctx, key("cr"), &virtkit.ControllerRevision{}))
	})
	t.Run("malformed request", func(t *testing.T) {
		_, _, gc, _, _ := gcFixture(t)
		_, err := gc.Reconcile(t.Context(), reconcile.Request{Namespace: "default", Name: "vm"})
		require.ErrorIs(t, err, store.ErrInvalid)
		assert.True(t, reconcile.IsTerminal(err))
	})
}

func requireNotFound(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, store.ErrNotFound)
}

// The collector's watch of VMIs maps a VMI to its owners only when it may
// be going away, so live VMIs' status writes cost nothing.
func TestGarbageCollectorWatchesMap(t *testing.T) {
	_, _, gc, vm, _ := gcFixture(t)
	var mapVMI reconcile.MapFunc
	for _, w := range gc.Watches() {
		if _, ok := w.NewList().(*virtkit.VirtualMachineInstanceList); ok {
			mapVMI = w.Map
		}
	}
	require.NotNil(t, mapVMI)
	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vmi",
		Finalizers: []string{"x"}, OwnerReferences: []metav1.OwnerReference{newControllerRef(vm, virtkit.KindVirtualMachine)}}}
	assert.Empty(t, mapVMI(t.Context(), vmi), "a live VMI with finalizers")
	now := metav1.Now()
	vmi.DeletionTimestamp = &now
	assert.Equal(t, []reconcile.Request{GarbageCollectorRequest(virtkit.KindVirtualMachine, "default", "vm")}, mapVMI(t.Context(), vmi))
	vmi.Finalizers = append(vmi.Finalizers, store.FinalizerOrphanDependents)
	assert.Equal(t, []reconcile.Request{
		GarbageCollectorRequest(virtkit.KindVirtualMachineInstance, "default", "vmi"),
		GarbageCollectorRequest(virtkit.KindVirtualMachine, "default", "vm"),
	}, mapVMI(t.Context(), vmi))
}
