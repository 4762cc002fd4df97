//go:build libvirt && cgo

package libvirt_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/libvirt"
)

func TestMachineTypesAndVCPUAffinityOnTestDriver(t *testing.T) {
	ctx := context.Background()
	h, err := libvirt.New(ctx, libvirt.Options{URI: "test:///default"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })

	// The test driver's capabilities list no machine types (see
	// TestMachineTypesFromCaps for QEMU's); the call must still work.
	ms, err := h.MachineTypes(ctx)
	require.NoError(t, err)
	for _, m := range ms {
		assert.NotEmpty(t, m.Name)
	}

	// The test driver's own running domain, with its vCPU pinning.
	doms, err := h.List(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, doms)
	hi, err := h.Host(ctx)
	require.NoError(t, err)
	m, err := h.VCPUAffinity(ctx, doms[0].Name)
	require.NoError(t, err)
	require.Len(t, m, doms[0].VCPUs)
	for _, v := range m {
		assert.Len(t, v, hi.CPUs)
	}

	_, err = h.VCPUAffinity(ctx, "no-such-domain")
	assert.ErrorIs(t, err, hypervisor.ErrNotFound)
}

// The test driver has no PCI or mediated devices; listing them works.
func TestHostDevicesOnTestDriver(t *testing.T) {
	ctx := context.Background()
	h, err := libvirt.New(ctx, libvirt.Options{URI: "test:///default"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	devs, err := h.HostDevices(ctx)
	require.NoError(t, err)
	assert.Empty(t, devs.PCI)
	assert.Empty(t, devs.Mediated)
}
