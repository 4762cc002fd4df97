package sim_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

func hostdevDomainXML(name, hostdev string) string {
	return fmt.Sprintf(`<domain type='qemu'>
  <name>%s</name>
  <memory unit='MiB'>128</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64'>hvm</type></os>
  <devices>%s</devices>
</domain>`, name, hostdev)
}

const (
	pciHostdev  = `<hostdev mode='subsystem' type='pci' managed='yes'><source><address domain='0x0000' bus='0x65' slot='0x00' function='0x0'/></source></hostdev>`
	mdevHostdev = `<hostdev mode='subsystem' type='mdev' model='vfio-pci'><source><address uuid='6f0a8a53-4f4a-4c8b-9d58-2a3c1e7e9b10'/></source></hostdev>`
	goneHostdev = `<hostdev mode='subsystem' type='pci' managed='yes'><source><address domain='0x0000' bus='0x66' slot='0x00' function='0x0'/></source></hostdev>`
)

func TestSimHostDevicesAttach(t *testing.T) {
	ctx := context.Background()
	inv := hypervisor.HostDevices{
		PCI:      []hypervisor.PCIDevice{{Address: "0000:65:00.0", VendorID: "10de", DeviceID: "1eb8"}},
		Mediated: []hypervisor.MediatedDevice{{UUID: "6f0a8a53-4f4a-4c8b-9d58-2a3c1e7e9b10", TypeName: "GRID T4-1Q", TypeID: "nvidia-222", Parent: "0000:66:00.0"}},
	}
	h := sim.New(sim.Options{Name: "gpu", HostDevices: inv})
	got, err := h.HostDevices(ctx)
	require.NoError(t, err)
	assert.Equal(t, inv, got)

	for _, tc := range []struct {
		name, hostdev string
	}{{"pci", pciHostdev}, {"mdev", mdevHostdev}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range []string{tc.name + "-a", tc.name + "-b"} {
				_, err := h.Define(ctx, hostdevDomainXML(n, tc.hostdev))
				require.NoError(t, err)
			}
			require.NoError(t, h.Start(ctx, tc.name+"-a", hypervisor.StartOptions{}))
			err := h.Start(ctx, tc.name+"-b", hypervisor.StartOptions{})
			require.ErrorIs(t, err, hypervisor.ErrInvalidState, "the device is held by the first domain")
			assert.Contains(t, err.Error(), tc.name+"-a")
			require.NoError(t, h.Destroy(ctx, tc.name+"-a"))
			require.NoError(t, h.Start(ctx, tc.name+"-b", hypervisor.StartOptions{}), "released when the first domain stops")
		})
	}

	_, err = h.Define(ctx, hostdevDomainXML("gone", goneHostdev))
	require.NoError(t, err, "as libvirt, define does not look for the device")
	require.ErrorIs(t, h.Start(ctx, "gone", hypervisor.StartOptions{}), hypervisor.ErrInvalidArgument)

	plain := sim.New(sim.Options{Name: "plain"})
	got, err = plain.HostDevices(ctx)
	require.NoError(t, err)
	assert.Empty(t, got.PCI)
	assert.Empty(t, got.Mediated)
}
