package virtkit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func hotplugSpec(bus DiskBus, hot ...string) *VirtualMachineInstanceSpec {
	s := &VirtualMachineInstanceSpec{
		Volumes: []Volume{{Name: "root", VolumeSource: VolumeSource{ContainerDisk: &ContainerDiskSource{Image: "img"}}}},
		Domain:  DomainSpec{Devices: Devices{Disks: []Disk{{Name: "root", DiskDevice: DiskDevice{Disk: &DiskTarget{Bus: DiskBusVirtio}}}}}},
	}
	for _, n := range hot {
		s.Volumes = append(s.Volumes, Volume{Name: n, VolumeSource: VolumeSource{DataVolume: &DataVolumeSource{Name: n, Hotpluggable: true}}})
		s.Domain.Devices.Disks = append(s.Domain.Devices.Disks, Disk{Name: n, DiskDevice: DiskDevice{Disk: &DiskTarget{Bus: bus}}})
	}
	return s
}

// Only hot-pluggable volumes and their disks may come and go on a VMI;
// a new one must be a disk on the scsi bus.
func TestAdmitVolumeHotplug(t *testing.T) {
	type want struct {
		path string
		kind field.ErrorType
	}
	for _, tc := range []struct {
		name     string
		old, new *VirtualMachineInstanceSpec
		want     []want
	}{
		{"add", hotplugSpec(DiskBusSCSI), hotplugSpec(DiskBusSCSI, "a"), nil},
		{"remove", hotplugSpec(DiskBusSCSI, "a"), hotplugSpec(DiskBusSCSI), nil},
		{"add on virtio", hotplugSpec(DiskBusSCSI), hotplugSpec(DiskBusVirtio, "a"),
			[]want{{"spec.domain.devices.disks[1].disk.bus", field.ErrorTypeInvalid}}},
		{"change a hot-plugged disk", hotplugSpec(DiskBusSCSI, "a"), hotplugSpec(DiskBusSATA, "a"),
			[]want{{"spec.domain.devices.disks[1]", field.ErrorTypeForbidden}}},
		{"remove the root disk", hotplugSpec(DiskBusSCSI), func() *VirtualMachineInstanceSpec {
			s := hotplugSpec(DiskBusSCSI, "a")
			s.Volumes, s.Domain.Devices.Disks = s.Volumes[1:], s.Domain.Devices.Disks[1:]
			return s
		}(), []want{{"spec.domain.devices.disks", field.ErrorTypeForbidden}, {"spec.volumes", field.ErrorTypeForbidden}}},
		{"other change", hotplugSpec(DiskBusSCSI), func() *VirtualMachineInstanceSpec {
			s := hotplugSpec(DiskBusSCSI, "a")
			s.Hostname = "other"
			return s
		}(), []want{{"spec.hostname", field.ErrorTypeForbidden}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []want
			for _, e := range AdmitVolumeHotplug(tc.new, tc.old, field.NewPath("spec")) {
				got = append(got, want{e.Field, e.Type})
			}
			assert.ElementsMatch(t, tc.want, got)
		})
	}
}
