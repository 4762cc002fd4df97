package sim_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// TestNodeMemoryFollowsTheGuests checks the modelled host memory: free is
// the host's memory minus the resident sets Stats reports for its active
// guests, and what the model has no figure for is not measured.
func TestNodeMemoryFollowsTheGuests(t *testing.T) {
	ctx := context.Background()
	const total = 4 << 30
	h, _ := virtualHost(t, sim.Options{Name: "mem-host", MemoryBytes: total})

	free := func() uint64 {
		t.Helper()
		nm, err := h.NodeMemory(ctx)
		require.NoError(t, err)
		assert.Equal(t, hypervisor.Some[uint64](total), nm.Total)
		assert.True(t, nm.Modelled)
		for name, m := range map[string]hypervisor.Measured[uint64]{"buffers": nm.Buffers, "cached": nm.Cached, "available": nm.Available} {
			assert.False(t, m.Valid, name)
		}
		v, ok := nm.Free.Get()
		require.True(t, ok)
		return v
	}
	rss := func(name string) uint64 {
		t.Helper()
		st, err := h.Stats(ctx, name)
		require.NoError(t, err)
		v, ok := st.Memory.RSS.Get()
		require.True(t, ok)
		return v
	}

	assert.Equal(t, uint64(total), free(), "no guest")

	runningDomain(t, h, "a", 1<<30)
	runningDomain(t, h, "b", 1<<30)
	require.NoError(t, h.SetWorkload("b", sim.Workload{DirtyRate: 16 << 20, WorkingSet: 512 << 20}))
	assert.Equal(t, uint64(total)-rss("a")-rss("b"), free(), "two guests")
	assert.Greater(t, rss("b"), rss("a"), "the working set is resident")

	// A defined, inactive guest uses no host memory.
	_, err := h.Define(ctx, sizedDomainXML("c", 1<<30, 1))
	require.NoError(t, err)
	require.NoError(t, h.Destroy(ctx, "a"))
	assert.Equal(t, uint64(total)-rss("b"), free(), "one active guest")

	// More guest memory than the host has: free stops at zero.
	runningDomain(t, h, "big", 8<<30)
	require.NoError(t, h.SetWorkload("big", sim.Workload{DirtyRate: 16 << 20}))
	assert.Zero(t, free(), "overcommitted")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = h.NodeMemory(cancelled)
	assert.ErrorIs(t, err, context.Canceled)
}
