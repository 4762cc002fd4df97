package libvirt

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

// Node device descriptions as libvirt writes them: a virtio disk's PCI
// function, a GPU offering one mediated device type, and one mediated
// device of that type.
const (
	nodeDevVirtio = `<device>
  <name>pci_0000_00_02_0</name>
  <parent>computer</parent>
  <capability type='pci'>
    <class>0x018000</class>
    <domain>0</domain><bus>0</bus><slot>2</slot><function>0</function>
    <product id='0x1042'>Virtio 1.0 block device</product>
    <vendor id='0x1af4'>Red Hat, Inc.</vendor>
  </capability>
</device>`
	nodeDevGPU = `<device>
  <name>pci_0000_65_00_0</name>
  <parent>computer</parent>
  <capability type='pci'>
    <domain>0</domain><bus>101</bus><slot>0</slot><function>0</function>
    <product id='0x1EB8'>TU104GL [Tesla T4]</product>
    <vendor id='0x10de'>NVIDIA Corporation</vendor>
    <capability type='mdev_types'>
      <type id='nvidia-222'>
        <name>GRID T4-1Q</name>
        <deviceAPI>vfio-pci</deviceAPI>
        <availableInstances>15</availableInstances>
      </type>
    </capability>
  </capability>
</device>`
	nodeDevMdev = `<device>
  <name>mdev_6f0a8a53_4f4a_4c8b_9d58_2a3c1e7e9b10_0000_65_00_0</name>
  <parent>pci_0000_65_00_0</parent>
  <capability type='mdev'>
    <type id='nvidia-222'/>
    <uuid>6f0a8a53-4f4a-4c8b-9d58-2a3c1e7e9b10</uuid>
    <parent_addr>0000:65:00.0</parent_addr>
    <iommuGroup number='12'/>
  </capability>
</device>`
)

func TestHostDevicesFromXML(t *testing.T) {
	got, err := hostDevicesFromXML([]string{nodeDevMdev, nodeDevVirtio, nodeDevGPU})
	require.NoError(t, err)
	assert.Equal(t, hypervisor.HostDevices{
		PCI: []hypervisor.PCIDevice{
			{Address: "0000:00:02.0", VendorID: "1af4", DeviceID: "1042"},
			{Address: "0000:65:00.0", VendorID: "10de", DeviceID: "1eb8"},
		},
		Mediated: []hypervisor.MediatedDevice{
			{UUID: "6f0a8a53-4f4a-4c8b-9d58-2a3c1e7e9b10", TypeName: "GRID T4-1Q", TypeID: "nvidia-222", Parent: "0000:65:00.0"},
		},
	}, got)

	_, err = hostDevicesFromXML([]string{"<device"})
	require.Error(t, err)
}
