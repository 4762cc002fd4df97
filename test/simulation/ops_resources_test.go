package simulation

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// A running VM's sockets and memory changed by the resource operations:
// within the maxima the change reaches the guest, beyond them the VM
// waits for a restart, and the hot-plug invariant holds throughout.
func TestResourceOps(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := NewHarness(ctx, HarnessOptions{Seed: 1})
	require.NoError(t, err)
	defer func() { _ = h.Close() }()
	table := operationsByName()
	chk := newChecker(h)
	uctx := asUser(ctx)
	key := store.Key{Namespace: Namespace, Name: "vm-0"}
	vmi := func() *virtkit.VirtualMachineInstance {
		v := &virtkit.VirtualMachineInstance{}
		require.NoError(t, h.Store.Get(uctx, key, v))
		return v
	}
	restart := func() string {
		vm := &virtkit.VirtualMachine{}
		require.NoError(t, h.Store.Get(uctx, key, vm))
		if c := virtkit.GetCondition(vm.Status.Conditions, virtkit.VirtualMachineRestartRequired); c != nil {
			return c.Message
		}
		return ""
	}
	for i, tc := range []struct {
		op      Op
		sockets uint32 // the VMI's spec and status afterwards
		guest   string // the VMI's memory.guest and status.memory.guestRequested
		restart string // the VM's RestartRequired message
	}{
		{op: Op{Name: "apply-vm", Target: "vm-0", N: 0, Advance: 30000}, sockets: 1, guest: "128Mi"},
		{op: Op{Name: "set-sockets", Target: "vm-0", N: 1, Advance: 10000}, sockets: 2, guest: "128Mi"},
		{op: Op{Name: "set-memory", Target: "vm-0", N: 1, Advance: 10000}, sockets: 2, guest: "128Mi",
			restart: "memory updated in template spec. Memory-hotplug is not available for this VM configuration"},
		{op: Op{Name: "restart", Target: "vm-0", Advance: 30000}, sockets: 2, guest: "1Gi"},
		{op: Op{Name: "set-memory", Target: "vm-0", N: 2, Advance: 10000}, sockets: 2, guest: "2Gi"},
		{op: Op{Name: "set-sockets", Target: "vm-0", N: 4, Advance: 10000}, sockets: 2, guest: "2Gi",
			restart: "CPU sockets updated in template spec to a value higher than what's available"},
	} {
		require.NoError(t, table[tc.op.Name].run(uctx, h, tc.op), "step %d %s", i, tc.op)
		chk.afterOp(i, tc.op, false)
		require.NoError(t, h.Advance(ctx, tc.op.Advance.Duration()))
		v := vmi()
		require.Equal(t, virtkit.Running, v.Status.Phase, "step %d %s", i, tc.op)
		assert.Equal(t, tc.sockets, v.Spec.Domain.CPU.Sockets, "step %d %s: spec sockets", i, tc.op)
		if assert.NotNil(t, v.Status.CurrentCPUTopology, "step %d", i) {
			assert.Equal(t, tc.sockets, v.Status.CurrentCPUTopology.Sockets, "step %d %s: status sockets", i, tc.op)
		}
		assert.Equal(t, tc.guest, v.Spec.Domain.Memory.Guest.String(), "step %d %s: memory.guest", i, tc.op)
		assert.Equal(t, tc.guest, v.Status.Memory.GuestRequested.String(), "step %d %s: guestRequested", i, tc.op)
		assert.Equal(t, tc.restart, restart(), "step %d %s: RestartRequired", i, tc.op)
		vs, err := chk.final(uctx, i)
		require.NoError(t, err)
		assert.Empty(t, vs, "step %d %s", i, tc.op)
	}
}
