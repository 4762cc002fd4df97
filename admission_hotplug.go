package virtkit

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// vmiImmutableDetail is the message of a forbidden VMI spec change.
const vmiImmutableDetail = "a VirtualMachineInstance's spec is immutable after creation"

// AdmitVolumeHotplug checks a change of a VMI spec (at p) from old to
// spec: only hot-pluggable volumes
// (persistentVolumeClaim or dataVolume with hotpluggable: true) and their
// disks may be added or removed, as KubeVirt's VMI update admission
// allows; a new hot-plugged disk must be a disk on the scsi bus without a
// dedicated I/O thread. Every other change is Forbidden with its path.
func AdmitVolumeHotplug(spec, old *VirtualMachineInstanceSpec, p *field.Path) field.ErrorList {
	newHot, oldHot := hotplugVolumes(spec), hotplugVolumes(old)
	if len(newHot) == 0 && len(oldHot) == 0 {
		return forbidChanges(*spec, *old, p, vmiImmutableDetail)
	}
	var errs field.ErrorList
	stripped := func(s *VirtualMachineInstanceSpec, hot map[string]int) *VirtualMachineInstanceSpec {
		c := s.DeepCopy()
		c.Volumes = c.Volumes[:0]
		for i, v := range s.Volumes {
			if _, ok := hot[v.Name]; !ok {
				c.Volumes = append(c.Volumes, *s.Volumes[i].DeepCopy())
			}
		}
		c.Domain.Devices.Disks = c.Domain.Devices.Disks[:0]
		for i, d := range s.Domain.Devices.Disks {
			if _, ok := hot[d.Name]; !ok {
				c.Domain.Devices.Disks = append(c.Domain.Devices.Disks, *s.Domain.Devices.Disks[i].DeepCopy())
			}
		}
		return c
	}
	errs = append(errs, forbidChanges(*stripped(spec, newHot), *stripped(old, oldHot), p, vmiImmutableDetail)...)
	disks := map[string]int{}
	for i, d := range spec.Domain.Devices.Disks {
		disks[d.Name] = i
	}
	oldDisks := map[string]int{}
	for i, d := range old.Domain.Devices.Disks {
		oldDisks[d.Name] = i
	}
	diskPath := p.Child("domain", "devices", "disks")
	for name, vi := range newHot {
		vp := p.Child("volumes").Index(vi)
		di, hasDisk := disks[name]
		if oi, existed := oldHot[name]; existed {
			// A hot-plugged volume stays as it was, or goes.
			if !equality.Semantic.DeepEqual(spec.Volumes[vi], old.Volumes[oi]) {
				errs = append(errs, field.Forbidden(vp, "a hot-plugged volume cannot change; remove it and add it again"))
			}
			if od, ok := oldDisks[name]; ok && hasDisk && !equality.Semantic.DeepEqual(spec.Domain.Devices.Disks[di], old.Domain.Devices.Disks[od]) {
				errs = append(errs, field.Forbidden(diskPath.Index(di), "a hot-plugged disk cannot change; remove it and add it again"))
			}
			continue
		}
		if !hasDisk {
			errs = append(errs, field.Required(diskPath, fmt.Sprintf("hot-plugged volume %s needs a disk of the same name", name)))
			continue
		}
		errs = append(errs, admitHotplugDisk(&spec.Domain.Devices.Disks[di], diskPath.Index(di))...)
	}
	return errs
}

// admitHotplugDisk checks the disk of a newly hot-plugged volume.
func admitHotplugDisk(d *Disk, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if d.Disk == nil || d.CDRom != nil || d.LUN != nil {
		return append(errs, field.Invalid(p, d.Name, fmt.Sprintf("Disk %s requires diskDevice of type 'disk' to be hotplugged.", d.Name)))
	}
	if d.Disk.Bus != DiskBusSCSI {
		errs = append(errs, field.Invalid(p.Child("disk", "bus"), d.Disk.Bus, fmt.Sprintf("hotplugged Disk %s does not use a scsi bus", d.Name)))
	}
	if d.DedicatedIOThread != nil && *d.DedicatedIOThread {
		errs = append(errs, field.Invalid(p.Child("dedicatedIOThread"), true,
			fmt.Sprintf("hotplugged Disk %s can't use dedicated IOThread: scsi bus is unsupported.", d.Name)))
	}
	return errs
}

// hotplugVolumes maps the names of spec's hot-pluggable volumes to their
// indexes.
func hotplugVolumes(spec *VirtualMachineInstanceSpec) map[string]int {
	out := map[string]int{}
	for i := range spec.Volumes {
		if spec.Volumes[i].IsHotpluggable() {
			out[spec.Volumes[i].Name] = i
		}
	}
	return out
}
