package virtkit_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit"
)

// KubeVirt's default LiveUpdate rollout leaves room to hot-plug CPUs and,
// from 1Gi of guest memory, memory; NoHotplug leaves both out, like its
// Stage rollout.
func ExampleDefaultOptions_noHotplug() {
	newVMI := func() *virtkit.VirtualMachineInstance {
		vmi := &virtkit.VirtualMachineInstance{}
		guest := resource.MustParse("2Gi")
		vmi.Spec.Domain.Memory = &virtkit.Memory{Guest: &guest}
		vmi.Spec.Domain.Resources.Limits = virtkit.ResourceList{virtkit.ResourceCPU: resource.MustParse("2")}
		return vmi
	}
	live := newVMI()
	virtkit.SetDefaults(live)
	fmt.Println("LiveUpdate: sockets", live.Spec.Domain.CPU.Sockets, "maxSockets", live.Spec.Domain.CPU.MaxSockets,
		"maxGuest", live.Spec.Domain.Memory.MaxGuest.String())

	staged := newVMI()
	virtkit.DefaultOptions{NoHotplug: true}.SetDefaults(staged)
	fmt.Println("NoHotplug: maxSockets", staged.Spec.Domain.CPU.MaxSockets, "maxGuest", staged.Spec.Domain.Memory.MaxGuest)
	// Output:
	// LiveUpdate: sockets 2 maxSockets 8 maxGuest 8Gi
	// NoHotplug: maxSockets 0 maxGuest <nil>
}

// An addvolume request (virtctl addvolume's body) applied to a VMI spec:
// the volume becomes hot-pluggable and its disk takes its name.
func ExampleApplyVolumeRequest() {
	spec := &virtkit.VirtualMachineInstanceSpec{}
	add := virtkit.VirtualMachineVolumeRequest{AddVolumeOptions: &virtkit.AddVolumeOptions{
		Name: "data",
		Disk: &virtkit.Disk{DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: virtkit.DiskBusSCSI}}},
		VolumeSource: &virtkit.HotplugVolumeSource{PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{
			ClaimName: "data-claim"}},
	}}
	fmt.Println(virtkit.ApplyVolumeRequest(spec, add), spec.Volumes[0].IsHotpluggable(), spec.Domain.Devices.Disks[0].Name)
	remove := virtkit.VirtualMachineVolumeRequest{RemoveVolumeOptions: &virtkit.RemoveVolumeOptions{Name: "data"}}
	fmt.Println(virtkit.ApplyVolumeRequest(spec, remove), len(spec.Volumes))
	// Output:
	// true true data
	// true 0
}
