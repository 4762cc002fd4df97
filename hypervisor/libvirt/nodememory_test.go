//go:build libvirt && cgo

package libvirt_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor/libvirt"
)

// TestNodeMemoryOnTestDriver reads the test driver's host memory: a total
// equal to the node info's and a free amount within it, measured and not
// modelled.
func TestNodeMemoryOnTestDriver(t *testing.T) {
	ctx := context.Background()
	h, err := libvirt.New(ctx, libvirt.Options{URI: "test:///default"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })

	nm, err := h.NodeMemory(ctx)
	require.NoError(t, err)
	hi, err := h.Host(ctx)
	require.NoError(t, err)
	total, ok := nm.Total.Get()
	require.True(t, ok, "total measured")
	assert.Equal(t, hi.MemoryBytes, total)
	free, ok := nm.Free.Get()
	require.True(t, ok, "free measured")
	assert.LessOrEqual(t, free, total)
	assert.False(t, nm.Modelled)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = h.NodeMemory(cancelled)
	assert.ErrorIs(t, err, context.Canceled)
}
