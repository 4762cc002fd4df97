package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
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
		_, err := e.vm.Reconcile(e.ctx, Request{"default", "vm"})
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
		_, err := e.vm.Reconcile(e.ctx, Request{"default", "vm"})
		require.NoError(t, err)
	}
	assert.Equal(t, before, cs.vmStatusWrites.Load(), "reconciles that change nothing but the time write nothing")
	after := virtkit.GetCondition(e.getVM("vm").Status.Conditions, virtkit.VirtualMachineReady)
	require.NotNil(t, after)
	assert.Equal(t, cond.LastTransitionTime, after.LastTransitionTime)
}
