package node

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/store"
)

func TestHostDeviceSlotsAndAssignment(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	h := sim.New(sim.Options{Name: "n1", HostDevices: hypervisor.HostDevices{
		PCI: []hypervisor.PCIDevice{
			{Address: "0000:66:00.0", VendorID: "10de", DeviceID: "1eb8"},
			{Address: "0000:65:00.0", VendorID: "10DE", DeviceID: "1EB8"},
			{Address: "0000:3d:00.0", VendorID: "8086", DeviceID: "37c8"},
			{Address: "0000:00:02.0", VendorID: "1af4", DeviceID: "1042"}, // not permitted
		},
		Mediated: []hypervisor.MediatedDevice{
			{UUID: "6F0A8A53-4F4A-4C8B-9D58-2A3C1E7E9B10", TypeName: "GRID T4-1Q", TypeID: "nvidia-222"},
			{UUID: "7f0a8a53-4f4a-4c8b-9d58-2a3c1e7e9b10", TypeName: "GRID T4-2Q", TypeID: "nvidia-223"},
		},
	}})
	a, err := New(Options{NodeName: "n1", Store: st, Hypervisor: h})
	require.NoError(t, err)

	// Without a KubeVirt object nothing is permitted.
	slots, err := a.hostDeviceSlots(ctx)
	require.NoError(t, err)
	assert.Empty(t, slots)

	kv := virtkit.DefaultKubeVirt()
	kv.Spec.Configuration.PermittedHostDevices = &virtkit.PermittedHostDevices{
		PciHostDevices: []virtkit.PciHostDevice{
			{PCIVendorSelector: "10de:1eb8", ResourceName: "nvidia.com/T4"},
			{PCIVendorSelector: "8086:37c8", ResourceName: "intel.com/qat", ExternalResourceProvider: true},
		},
		MediatedDevices: []virtkit.MediatedHostDevice{{MDEVNameSelector: "GRID T4-1Q", ResourceName: "nvidia.com/GRID_T4-1Q"}},
	}
	require.NoError(t, st.Create(ctx, kv))
	slots, err = a.hostDeviceSlots(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[virtkit.ResourceName][]domain.AssignedDevice{
		"nvidia.com/T4":         {{PCIAddress: "0000:65:00.0"}, {PCIAddress: "0000:66:00.0"}},
		"nvidia.com/GRID_T4-1Q": {{MdevUUID: "6f0a8a53-4f4a-4c8b-9d58-2a3c1e7e9b10"}},
	}, slots, "external providers advertise their own devices")

	capacity := virtkit.ResourceList{}
	a.addDeviceCapacity(ctx, capacity)
	q := capacity["nvidia.com/T4"]
	assert.Equal(t, int64(2), q.Value())
	assert.NotContains(t, capacity, virtkit.ResourceName("intel.com/qat"))

	vmi := func(name string, gpus ...string) *virtkit.VirtualMachineInstance {
		v := &virtkit.VirtualMachineInstance{}
		v.Name, v.Namespace = name, "default"
		for i, g := range gpus {
			v.Spec.Domain.Devices.GPUs = append(v.Spec.Domain.Devices.GPUs, virtkit.GPU{Name: string(rune('a' + i)), DeviceName: g})
		}
		return v
	}
	got, err := a.assignHostDevices(ctx, vmi("one", "nvidia.com/T4", "nvidia.com/GRID_T4-1Q"), "default_one")
	require.NoError(t, err)
	assert.Equal(t, map[string]domain.AssignedDevice{"a": {PCIAddress: "0000:65:00.0"}, "b": {MdevUUID: "6f0a8a53-4f4a-4c8b-9d58-2a3c1e7e9b10"}}, got)

	// A domain defined with the first T4 holds it.
	_, err = h.Define(ctx, `<domain type='qemu'><name>default_one</name><memory unit='MiB'>128</memory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os>
<devices><hostdev mode='subsystem' type='pci' managed='yes'><source><address domain='0x0000' bus='0x65' slot='0x00' function='0x0'/></source></hostdev></devices></domain>`)
	require.NoError(t, err)
	got, err = a.assignHostDevices(ctx, vmi("two", "nvidia.com/T4"), "default_two")
	require.NoError(t, err)
	assert.Equal(t, map[string]domain.AssignedDevice{"a": {PCIAddress: "0000:66:00.0"}}, got)
	got, err = a.assignHostDevices(ctx, vmi("one", "nvidia.com/T4"), "default_one")
	require.NoError(t, err, "a domain's own devices are free for it")
	assert.Equal(t, map[string]domain.AssignedDevice{"a": {PCIAddress: "0000:65:00.0"}}, got)

	_, err = a.assignHostDevices(ctx, vmi("three", "nvidia.com/T4", "nvidia.com/T4"), "default_three")
	require.ErrorIs(t, err, domain.ErrUnsupported)
	assert.Contains(t, err.Error(), "spec.domain.devices.gpus[1].deviceName")
	_, err = a.assignHostDevices(ctx, vmi("four", "intel.com/qat"), "default_four")
	require.ErrorIs(t, err, domain.ErrUnsupported)
	assert.Contains(t, err.Error(), "spec.domain.devices.gpus[0].deviceName: this node has no permitted host device intel.com/qat")

	none, err := a.assignHostDevices(ctx, vmi("plain"), "default_plain")
	require.NoError(t, err)
	assert.Nil(t, none)
}

// Permitted USB devices are advertised in slots of one device per
// selector, and a domain holding a USB device keeps its slot busy.
func TestUSBHostDeviceSlots(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	h := sim.New(sim.Options{Name: "n1", HostDevices: hypervisor.HostDevices{USB: []hypervisor.USBDevice{
		{Bus: 3, Device: 7, VendorID: "46f4", ProductID: "0001"},
		{Bus: 3, Device: 8, VendorID: "46f4", ProductID: "0001"},
		{Bus: 1, Device: 2, VendorID: "1b1c", ProductID: "1a0a"},
		{Bus: 1, Device: 4, VendorID: "0000", ProductID: "0000"}, // not permitted
	}}})
	a, err := New(Options{NodeName: "n1", Store: st, Hypervisor: h})
	require.NoError(t, err)
	kv := virtkit.DefaultKubeVirt()
	kv.Spec.Configuration.PermittedHostDevices = &virtkit.PermittedHostDevices{USB: []virtkit.USBHostDevice{
		{ResourceName: "kubevirt.io/storage", Selectors: []virtkit.USBSelector{{Vendor: "46F4", Product: "0001"}}},
		{ResourceName: "kubevirt.io/pair", Selectors: []virtkit.USBSelector{{Vendor: "46f4", Product: "0001"}, {Vendor: "1b1c", Product: "1a0a"}}},
		{ResourceName: "kubevirt.io/none", Selectors: []virtkit.USBSelector{{Vendor: "ffff", Product: "0001"}}},
	}}
	require.NoError(t, st.Create(ctx, kv))
	capacity := virtkit.ResourceList{}
	a.addDeviceCapacity(ctx, capacity)
	for r, want := range map[virtkit.ResourceName]int64{"kubevirt.io/storage": 2, "kubevirt.io/pair": 1} {
		q := capacity[r]
		assert.Equal(t, want, q.Value(), r)
	}
	assert.NotContains(t, capacity, virtkit.ResourceName("kubevirt.io/none"))

	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Name, vmi.Namespace = "u", "default"
	vmi.Spec.Domain.Devices.HostDevices = []virtkit.HostDevice{{Name: "stick", DeviceName: "kubevirt.io/storage"}}
	_, err = h.Define(ctx, `<domain type='qemu'><name>default_other</name><memory unit='MiB'>128</memory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os>
<devices><hostdev mode='subsystem' type='usb'><source><address bus='3' device='7'/></source></hostdev></devices></domain>`)
	require.NoError(t, err)
	got, err := a.assignHostDevices(ctx, vmi, "default_u")
	require.NoError(t, err)
	assert.Equal(t, map[string]domain.AssignedDevice{"stick": {USB: []domain.USBDevice{{Bus: 3, Device: 8, Vendor: "46f4", Product: "0001"}}}}, got,
		"the device another domain holds is not free")
}
