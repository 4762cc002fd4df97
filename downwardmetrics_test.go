package virtkit

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const downwardMetricsVMI = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: dm, namespace: default}
spec:
  domain:
    memory: {guest: 128Mi}
    devices:
      disks:
      - {name: root, disk: {bus: virtio}}
      - {name: metrics, disk: {bus: virtio}}
  volumes:
  - {name: root, containerDisk: {image: quay.io/x/y}}
  - {name: metrics, downwardMetrics: {}}
`

func TestDownwardMetricsVolume(t *testing.T) {
	vmi := decodeOne[*VirtualMachineInstance](t, downwardMetricsVMI)
	require.NotNil(t, vmi.Spec.Volumes[1].DownwardMetrics)
	assert.Empty(t, Validate(vmi))
	cp := vmi.DeepCopy()
	assert.NotNil(t, cp.Spec.Volumes[1].DownwardMetrics, "deep copy keeps the source")

	for _, tc := range []struct {
		name, from, to, path string
	}{
		{"sata bus", "{name: metrics, disk: {bus: virtio}}", "{name: metrics, disk: {bus: sata}}", "spec.domain.devices.disks[1].disk.bus"},
		{"cdrom", "{name: metrics, disk: {bus: virtio}}", "{name: metrics, cdrom: {bus: sata}}", "spec.domain.devices.disks[1]"},
		{"two volumes", "{name: root, containerDisk: {image: quay.io/x/y}}", "{name: root, downwardMetrics: {}}", "spec.volumes"},
		{"with another source", "{name: metrics, downwardMetrics: {}}", "{name: metrics, downwardMetrics: {}, emptyDisk: {capacity: 1Gi}}", "spec.volumes[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := strings.Replace(downwardMetricsVMI, tc.from, tc.to, 1)
			require.NotEqual(t, downwardMetricsVMI, m)
			v := decodeOne[*VirtualMachineInstance](t, m)
			errs := Validate(v)
			require.NotEmpty(t, errs)
			var paths []string
			for _, e := range errs {
				paths = append(paths, e.Field)
			}
			assert.Contains(t, paths, tc.path)
		})
	}
}

func TestDownwardMetricsDevice(t *testing.T) {
	m := strings.Replace(downwardMetricsVMI, "    devices:\n", "    devices:\n      downwardMetrics: {}\n", 1)
	require.NotEqual(t, downwardMetricsVMI, m)
	vmi := decodeOne[*VirtualMachineInstance](t, m)
	require.NotNil(t, vmi.Spec.Domain.Devices.DownwardMetrics)
	assert.NotNil(t, vmi.DeepCopy().Spec.Domain.Devices.DownwardMetrics)
	assert.Empty(t, Validate(vmi))
}
