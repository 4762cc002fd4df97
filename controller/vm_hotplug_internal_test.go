package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/virtkit/virtkit"
)

func hotVolume(name string) (virtkit.Volume, virtkit.Disk) {
	return virtkit.Volume{Name: name, VolumeSource: virtkit.VolumeSource{PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{
			ClaimName: name + "-claim", Hotpluggable: true}}},
		virtkit.Disk{Name: name, DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: virtkit.DiskBusSCSI}}}
}

func specWith(names ...string) *virtkit.VirtualMachineInstanceSpec {
	s := &virtkit.VirtualMachineInstanceSpec{
		Volumes: []virtkit.Volume{{Name: "root", VolumeSource: virtkit.VolumeSource{ContainerDisk: &virtkit.ContainerDiskSource{Image: "img"}}}},
		Domain:  virtkit.DomainSpec{Devices: virtkit.Devices{Disks: []virtkit.Disk{{Name: "root"}}}},
	}
	for _, n := range names {
		v, d := hotVolume(n)
		s.Volumes = append(s.Volumes, v)
		s.Domain.Devices.Disks = append(s.Domain.Devices.Disks, d)
	}
	return s
}

func volumeNames(s *virtkit.VirtualMachineInstanceSpec) []string {
	var out []string
	for _, v := range s.Volumes {
		out = append(out, v.Name)
	}
	return out
}

// The running VMI's hot-pluggable volumes follow the template's; its
// other volumes stay.
func TestSyncHotplugVolumes(t *testing.T) {
	for _, tc := range []struct {
		name          string
		vmi, template []string
		changed       bool
		want          []string
	}{
		{"nothing to do", []string{"a"}, []string{"a"}, false, []string{"root", "a"}},
		{"added", nil, []string{"a", "b"}, true, []string{"root", "a", "b"}},
		{"removed", []string{"a", "b"}, []string{"b"}, true, []string{"root", "b"}},
		{"swapped", []string{"a"}, []string{"b"}, true, []string{"root", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := specWith(tc.vmi...)
			assert.Equal(t, tc.changed, syncHotplugVolumes(vmi, specWith(tc.template...)))
			assert.Equal(t, tc.want, volumeNames(vmi))
			assert.Len(t, vmi.Domain.Devices.Disks, len(tc.want), "each volume keeps its disk")
		})
	}
}

// A request is done once a spec reflects it.
func TestVolumeRequestDone(t *testing.T) {
	add := virtkit.VirtualMachineVolumeRequest{AddVolumeOptions: &virtkit.AddVolumeOptions{Name: "a"}}
	remove := virtkit.VirtualMachineVolumeRequest{RemoveVolumeOptions: &virtkit.RemoveVolumeOptions{Name: "a"}}
	assert.True(t, volumeRequestDone(specWith("a"), add))
	assert.False(t, volumeRequestDone(specWith(), add))
	assert.True(t, volumeRequestDone(specWith(), remove))
	assert.False(t, volumeRequestDone(specWith("a"), remove))
}

// Hot-pluggable volumes do not count as a template change needing a
// restart.
func TestWithoutHotplugVolumes(t *testing.T) {
	s := specWith("a", "b")
	withoutHotplugVolumes(s)
	assert.Equal(t, []string{"root"}, volumeNames(s))
	assert.Len(t, s.Domain.Devices.Disks, 1)
}
