package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// A user deletes the VMI of an Always VM, and the VM controller's
// finalizer is the last one on it: the VM controller's own write removes
// the VMI. Its Deleted event must still wake the VM, which then creates
// the next VMI. (It used to be taken for the echo of the controller's own
// write, and the VM stayed without a VMI until the next resync.)
func TestVMCreatesTheNextVMIAfterItsOwnWriteRemovedTheLast(t *testing.T) {
	e := newEnv(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctrl, err := reconcile.New(e.st, e.vm, reconcile.Options{
		Name: "vm", ResyncPeriod: time.Hour, RateLimiter: fastRateLimiter(),
	}, e.vm.Watches()...)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		assert.NoError(t, ctrl.Start(ctx))
	}()
	defer func() { cancel(); <-done }()

	require.NoError(t, e.st.Create(ctx, newVM("vm", virtkit.RunStrategyAlways)))
	k := key("vm")
	first := &virtkit.VirtualMachineInstance{}
	require.Eventually(t, func() bool { return e.st.Get(ctx, k, first) == nil }, 5*time.Second, 5*time.Millisecond)

	// Only the VM controller's finalizer is left (no VMI controller runs
	// here to hold its own), then the user deletes the VMI.
	require.NoError(t, retryOnConflict(ctx, func() error {
		vmi := &virtkit.VirtualMachineInstance{}
		if err := e.st.Get(ctx, k, vmi); err != nil {
			return err
		}
		vmi.Finalizers = []string{virtkit.VirtualMachineControllerFinalizer}
		return e.st.Update(ctx, vmi)
	}))
	require.NoError(t, e.st.Delete(ctx, first.DeepCopy(), store.DeleteOptions{}))

	next := &virtkit.VirtualMachineInstance{}
	assert.Eventually(t, func() bool {
		return e.st.Get(ctx, k, next) == nil && next.UID != first.UID
	}, 5*time.Second, 5*time.Millisecond, "the VM creates its next VMI")
}
