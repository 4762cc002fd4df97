package controller

import (
	"context"
	"runtime"
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

// heldStore commits an update, hands the committed object to committed,
// and returns only once release is closed: a writer descheduled between
// the store's commit (its watchers have the event) and its return.
type heldStore struct {
	store.Store
	committed chan virtkit.Object
	release   chan struct{}
}

func (s heldStore) UpdateStatus(ctx context.Context, obj virtkit.Object) error {
	if err := s.Store.UpdateStatus(ctx, obj); err != nil {
		return err
	}
	s.committed <- obj.DeepCopyObject().(virtkit.Object)
	<-s.release
	return nil
}

// The event of our own write, delivered before the write has returned to
// the reconciler, is still ours: it waits for the write to end and is
// skipped. Taken as someone else's (the watch goroutine happening to run
// before the writer), it woke the reconciler once more, so a seeded
// scenario retried a failing write at once in one run and after the key's
// backoff in the next.
func TestOwnWritesEventBeforeTheWriteReturned(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	vm := newVM("vm", virtkit.RunStrategyAlways)
	require.NoError(t, st.Create(ctx, vm))
	held := heldStore{Store: st, committed: make(chan virtkit.Object, 1), release: make(chan struct{})}
	own := newOwnWrites()
	rec := recordingStore{Store: held, own: own}
	mapFn := own.skipOwn(reconcile.ObjectKey)

	vm.Status.PrintableStatus = virtkit.VirtualMachineStatusStarting
	wrote := make(chan error, 1)
	go func() { wrote <- rec.UpdateStatus(ctx, vm) }()
	event := <-held.committed // the watch has it; the writer has not returned

	mapped := make(chan []reconcile.Request, 1)
	go func() { mapped <- mapFn(ctx, event) }()
	// Release the writer once the event has been judged (before the fix)
	// or waits for the write (after).
	for waiting := false; !waiting && len(mapped) == 0; {
		runtime.Gosched()
		own.mu.Lock()
		waiting = own.waiting > 0
		own.mu.Unlock()
	}
	close(held.release)
	require.NoError(t, <-wrote)
	assert.Empty(t, <-mapped, "our own write's event, delivered before the write returned")

	// Someone else's write of an object we are not writing goes through
	// at once.
	other := event.DeepCopyObject().(*virtkit.VirtualMachine)
	other.Labels = map[string]string{"by": "someone else"}
	require.NoError(t, st.Update(ctx, other))
	assert.Len(t, mapFn(ctx, other), 1, "someone else's write")
}
