package controller

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// The event of a reconciler's own write is skipped once; anyone else's
// write, and a second delivery of the same version, are enqueued.
func TestOwnWritesSkipTheirOwnEventOnce(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	own := newOwnWrites()
	rec := recordingStore{Store: st, own: own}
	mapFn := own.skipOwn(reconcile.ObjectKey)

	vm := newVM("vm", virtkit.RunStrategyAlways)
	require.NoError(t, rec.Create(ctx, vm))
	assert.Empty(t, mapFn(ctx, vm.DeepCopy()), "our create")
	assert.Len(t, mapFn(ctx, vm.DeepCopy()), 1, "the same version again (a resync)")

	vm.Status.PrintableStatus = virtkit.VirtualMachineStatusStarting
	require.NoError(t, rec.UpdateStatus(ctx, vm))
	mine := vm.DeepCopy()

	other := vm.DeepCopy()
	other.Labels = map[string]string{"by": "someone else"}
	require.NoError(t, st.Update(ctx, other))
	assert.Len(t, mapFn(ctx, other), 1, "someone else's write")
	assert.Empty(t, mapFn(ctx, mine), "our status write, delivered late")

	// A no-op write produces no event and is not remembered.
	before := other.ResourceVersion
	require.NoError(t, rec.Update(ctx, other))
	require.Equal(t, before, other.ResourceVersion)
	assert.Len(t, mapFn(ctx, other), 1)

	// Memory stays bounded per object.
	for i := range 10 {
		other.Annotations = map[string]string{"n": strconv.Itoa(i)}
		require.NoError(t, rec.Update(ctx, other))
	}
	assert.Len(t, own.rv[ownKeyOf(other)], ownWritesPerKey)
	own.forget(virtkit.KindVirtualMachine, store.KeyOf(other))
	assert.Empty(t, own.rv)
}

// A write that removes the object (its last finalizer went) is not
// remembered: the Deleted event it causes is news to the reconciler,
// which may have to act on the absence (a VM creating its next VMI).
func TestOwnWritesDeletedEventOfOwnFinalizerRemovalWakes(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	own := newOwnWrites()
	rec := recordingStore{Store: st, own: own}
	mapFn := own.skipOwn(reconcile.ObjectKey)

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	events, err := st.Watch(wctx, &virtkit.VirtualMachineInstanceList{}, store.WatchOptions{})
	require.NoError(t, err)

	vmi := newVMI("vmi", "64Mi")
	vmi.Finalizers = []string{virtkit.VirtualMachineControllerFinalizer}
	require.NoError(t, st.Create(ctx, vmi))
	require.NoError(t, st.Delete(ctx, vmi.DeepCopy(), store.DeleteOptions{}))
	require.NoError(t, st.Get(ctx, store.KeyOf(vmi), vmi))
	require.NotNil(t, vmi.DeletionTimestamp)

	vmi.Finalizers = nil
	require.NoError(t, rec.Update(ctx, vmi))
	var deleted virtkit.Object
	for ev := range events {
		if ev.Type == store.Deleted {
			deleted = ev.Object
			break
		}
	}
	require.NotNil(t, deleted)
	assert.Len(t, mapFn(ctx, deleted), 1, "the Deleted event of our finalizer removal")
}
