//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package libvirt_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
)

// TestRealNodeMemory reads a real libvirtd's host memory: QEMU's driver
// reports MemTotal, MemFree, Buffers and Cached, and the parts fit inside
// the total. (The node info's memory is not compared: libvirt may report
// there what the daemon's cgroup allows.)
func TestRealNodeMemory(t *testing.T) {
	h := openReal(t, libvirttest.SourceURI)
	ctx := context.Background()
	nm, err := h.NodeMemory(ctx)
	require.NoError(t, err)
	total, ok := nm.Total.Get()
	require.True(t, ok)
	for name, m := range map[string]interface{ Get() (uint64, bool) }{"free": nm.Free, "buffers": nm.Buffers, "cached": nm.Cached} {
		v, ok := m.Get()
		if assert.True(t, ok, name) {
			assert.Less(t, v, total, name)
		}
	}
	free, _ := nm.Free.Get()
	assert.Positive(t, free)
	assert.False(t, nm.Modelled)
}
