package node_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// Running guests started together are not refreshed together: each VMI's
// safety-net refresh comes StatusInterval after its last reconcile,
// stretched by its own random fraction of StatusJitter. Nothing is
// refreshed before StatusInterval and everything by its stretched end.
func TestStatusResyncIsJittered(t *testing.T) {
	const guests = 20
	clk := testingclock.NewFakeClock(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	mem := store.NewMemory()
	a, _ := startAgent(t, node.Options{NodeName: nodeName, Store: mem, Clock: clk, FenceTimeout: -1,
		Hypervisor: sim.New(sim.Options{Name: nodeName, CPUs: 64, MemoryBytes: 64 << 30}),
		// Long enough that neither the resync nor a heartbeat falls in
		// the window stepped through below.
		ResyncPeriod: time.Hour, HeartbeatInterval: time.Hour,
		StatusInterval: 10 * time.Second, StatusJitter: 0.5})
	for i := range guests {
		newScheduledVMI(t, mem, fmt.Sprintf("j-%02d", i))
	}
	reconciles := func() uint64 { return a.Controller().Stats().Reconciles }
	// Settled: every guest Running and no reconcile for a while (the
	// fake clock has not moved, so none came from a timer).
	last := reconciles()
	require.Eventually(t, func() bool {
		for i := range guests {
			vmi, ok := getVMI(t, mem, fmt.Sprintf("j-%02d", i))
			if !ok || vmi.Status.Phase != virtkit.Running {
				return false
			}
		}
		now := reconciles()
		settled := now == last
		last = now
		return settled
	}, 20*time.Second, 300*time.Millisecond)
	settled := reconciles()

	// Exactly StatusInterval later: an unjittered refresh would take every
	// guest now; a jittered one almost none (each waits a random extra).
	clk.Step(10 * time.Second)
	time.Sleep(300 * time.Millisecond)
	early := reconciles() - settled
	assert.Less(t, early, uint64(guests/2), "refreshes at exactly StatusInterval")

	// By StatusInterval × 1.5 every guest was refreshed once.
	clk.Step(5*time.Second + time.Millisecond)
	require.Eventually(t, func() bool { return reconciles()-settled >= guests }, 10*time.Second, 20*time.Millisecond,
		"every guest refreshed by the end of its jitter (%d)", reconciles()-settled)
}
