package virtkit

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// VolumePhase is the phase of a volume, of a hot-plugged one in
// particular.
type VolumePhase string

// Volume phases, as KubeVirt names them. KubeVirt's hot-plug goes through
// an attachment pod (AttachedToNode, MountedToPod, UnMountedFromPod);
// virtkit has no pods: a node agent resolves the volume on its host and
// attaches it to the running domain, so a hot-plugged volume is Pending
// until it is attached, Ready once the domain holds it, and Detaching
// from its removal from the spec until the domain has let it go. The
// pod phases are declared for manifests that carry them.
const (
	// VolumePending: the volume is in the spec but not attached yet.
	VolumePending VolumePhase = "Pending"
	// VolumeBound: the volume's claim is bound (KubeVirt; unused by
	// virtkit, which resolves and attaches in one step).
	VolumeBound VolumePhase = "Bound"
	// HotplugVolumeAttachedToNode: KubeVirt's attachment pod runs (unused).
	HotplugVolumeAttachedToNode VolumePhase = "AttachedToNode"
	// HotplugVolumeMounted: mounted into the launcher pod (unused).
	HotplugVolumeMounted VolumePhase = "MountedToPod"
	// VolumeReady: the running domain holds the volume's disk.
	VolumeReady VolumePhase = "Ready"
	// HotplugVolumeDetaching: the volume left the spec and its disk is
	// being detached from the running domain.
	HotplugVolumeDetaching VolumePhase = "Detaching"
	// HotplugVolumeUnMounted: unmounted from the launcher pod (unused).
	HotplugVolumeUnMounted VolumePhase = "UnMountedFromPod"
)

// Reasons of hot-plugged volume statuses and of the events recorded with
// them, as KubeVirt's virt-handler records them.
const (
	VolumeReadyReason     = "VolumeReady"
	VolumePendingReason   = "VolumePending"
	VolumeDetachingReason = "VolumeDetaching"
)

// HotplugVolumeStatus marks a volume status as a hot-plugged volume's.
// KubeVirt names the attachment pod; virtkit attaches without pods and
// leaves both fields empty.
type HotplugVolumeStatus struct {
	// AttachPodName is the name of KubeVirt's attachment pod.
	AttachPodName string `json:"attachPodName,omitempty"`
	// AttachPodUID is the UID of KubeVirt's attachment pod.
	AttachPodUID types.UID `json:"attachPodUID,omitempty"`
}

// HotplugVolumeSource is the source of a volume addvolume plugs in: a
// claim or a DataVolume.
type HotplugVolumeSource struct {
	// PersistentVolumeClaim is a claim in the VM's namespace.
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty"`
	// DataVolume is a DataVolume in the VM's namespace.
	DataVolume *DataVolumeSource `json:"dataVolume,omitempty"`
}

// AddVolumeOptions is the body of the addvolume subresource (virtctl
// addvolume): the volume and disk to plug into a running VMI, or into a
// VM's template.
type AddVolumeOptions struct {
	// Name is the name of the volume and of its disk; it overrides the
	// disk's own name.
	Name string `json:"name"`
	// Disk is the disk the volume is plugged in as.
	Disk *Disk `json:"disk"`
	// VolumeSource is where the volume's data comes from.
	VolumeSource *HotplugVolumeSource `json:"volumeSource"`
	// DryRun, when it holds All, checks the request and changes nothing.
	// +listType=atomic
	DryRun []string `json:"dryRun,omitempty"`
}

// RemoveVolumeOptions is the body of the removevolume subresource
// (virtctl removevolume).
type RemoveVolumeOptions struct {
	// Name names the volume and disk to unplug.
	Name string `json:"name"`
	// DryRun, when it holds All, checks the request and changes nothing.
	// +listType=atomic
	DryRun []string `json:"dryRun,omitempty"`
}

// VirtualMachineVolumeRequest is an addvolume or removevolume request
// queued on a VM's status until the controller applies it to the VM's
// template; exactly one of its fields is set.
type VirtualMachineVolumeRequest struct {
	// AddVolumeOptions adds a volume.
	AddVolumeOptions *AddVolumeOptions `json:"addVolumeOptions,omitempty"`
	// RemoveVolumeOptions removes a volume.
	RemoveVolumeOptions *RemoveVolumeOptions `json:"removeVolumeOptions,omitempty"`
}

// IsHotpluggable reports whether the volume is a hot-pluggable claim or
// DataVolume.
func (v *Volume) IsHotpluggable() bool {
	return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.Hotpluggable ||
		v.DataVolume != nil && v.DataVolume.Hotpluggable
}

// ApplyVolumeRequest applies an addvolume or removevolume request to a VMI
// spec: an add appends the volume (hot-pluggable) and its disk, named by
// the request, unless a volume of that name exists; a remove drops the
// volume and disk of that name. It reports whether spec changed.
func ApplyVolumeRequest(spec *VirtualMachineInstanceSpec, req VirtualMachineVolumeRequest) bool {
	switch {
	case req.AddVolumeOptions != nil:
		o := req.AddVolumeOptions
		if slices.ContainsFunc(spec.Volumes, func(v Volume) bool { return v.Name == o.Name }) || o.VolumeSource == nil {
			return false
		}
		vol := Volume{Name: o.Name}
		if p := o.VolumeSource.PersistentVolumeClaim; p != nil {
			c := *p
			c.Hotpluggable = true
			vol.PersistentVolumeClaim = &c
		}
		if dv := o.VolumeSource.DataVolume; dv != nil {
			c := *dv
			c.Hotpluggable = true
			vol.DataVolume = &c
		}
		spec.Volumes = append(spec.Volumes, vol)
		if !slices.ContainsFunc(spec.Domain.Devices.Disks, func(d Disk) bool { return d.Name == o.Name }) {
			disk := Disk{}
			if o.Disk != nil {
				disk = *o.Disk.DeepCopy()
			}
			disk.Name = o.Name
			spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, disk)
		}
		return true
	case req.RemoveVolumeOptions != nil:
		name := req.RemoveVolumeOptions.Name
		n, m := len(spec.Volumes), len(spec.Domain.Devices.Disks)
		spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v Volume) bool { return v.Name == name })
		spec.Domain.Devices.Disks = slices.DeleteFunc(spec.Domain.Devices.Disks, func(d Disk) bool { return d.Name == name })
		return n != len(spec.Volumes) || m != len(spec.Domain.Devices.Disks)
	}
	return false
}
