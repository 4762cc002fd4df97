package libvirt

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

func TestMachineTypesFromCaps(t *testing.T) {
	// The shape of libvirt 9's capabilities for QEMU 7.2 (abridged).
	const caps = `<capabilities>
  <host><cpu><arch>x86_64</arch></cpu></host>
  <guest>
    <os_type>hvm</os_type>
    <arch name='i686'><machine>pc-i440fx-7.2</machine></arch>
  </guest>
  <guest>
    <os_type>hvm</os_type>
    <arch name='x86_64'>
      <machine canonical='pc-q35-7.2' maxCpus='288'>q35</machine>
      <machine maxCpus='288'>pc-q35-7.2</machine>
      <machine maxCpus='255' deprecated='yes'>pc-i440fx-1.4</machine>
      <domain type='qemu'/>
      <domain type='kvm'><machine maxCpus='255' deprecated='yes'>pc-i440fx-1.5</machine></domain>
    </arch>
  </guest>
</capabilities>`
	ms, err := machineTypesFromCaps(caps)
	require.NoError(t, err)
	assert.Equal(t, []hypervisor.MachineType{
		{Name: "q35", Canonical: "pc-q35-7.2"},
		{Name: "pc-q35-7.2"},
		{Name: "pc-i440fx-1.4", Deprecated: true},
		{Name: "pc-i440fx-1.5", Deprecated: true},
	}, ms)

	_, err = machineTypesFromCaps("<capabilities")
	assert.Error(t, err)
}
