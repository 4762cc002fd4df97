package virtkit

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// containerPathReservedPrefixes are the paths of KubeVirt's own sockets
// and state, which a containerPath volume may not share.
var containerPathReservedPrefixes = []string{"/var/run/kubevirt", "/var/run/libvirt"}

// containerPathVolumes checks containerPath volumes as KubeVirt does: its
// CRD schema (an absolute path without "..", read-only) and its VMI
// admitter (a filesystem, not a disk; no reserved prefix), which checks
// VMIs only, when they are created. The admitter
// reports the last two under spec.domain.volumes, KubeVirt's own path
// for them, which is kept so errors match KubeVirt's.
func (v *vmiValidator) containerPathVolumes(disks, shared map[string]bool) {
	for i := range v.spec.Volumes {
		vol := &v.spec.Volumes[i]
		cp := vol.ContainerPath
		if cp == nil {
			continue
		}
		p := v.sp.Child("volumes").Index(i).Child("containerPath")
		switch {
		case cp.Path == "":
			v.add(field.Required(p.Child("path"), ""))
		case !strings.HasPrefix(cp.Path, "/"):
			v.add(field.Invalid(p.Child("path"), cp.Path, "path must be absolute (start with '/')"))
		case strings.Contains(cp.Path, ".."):
			v.add(field.Invalid(p.Child("path"), cp.Path, "path must not contain '..'"))
		case len(cp.Path) > 4096:
			v.add(field.TooLong(p.Child("path"), cp.Path, 4096))
		}
		if cp.ReadOnly != nil && !*cp.ReadOnly {
			v.add(field.Invalid(p.Child("readOnly"), false, "readOnly must be true, write access is not supported"))
		}
		if !v.isVMI {
			continue // KubeVirt checks the rest when the VMI is created
		}
		kp := v.sp.Child("domain", "volumes").Index(i)
		if disks[vol.Name] {
			v.add(field.Invalid(kp, vol.Name, fmt.Sprintf("ContainerPath volume '%s' must be mapped to a filesystem, not a disk", vol.Name)))
		}
		if !shared[vol.Name] {
			v.add(field.Invalid(kp, vol.Name, fmt.Sprintf("ContainerPath volume '%s' must have a matching filesystem defined in spec.domain.devices.filesystems", vol.Name)))
		}
		for _, prefix := range containerPathReservedPrefixes {
			if strings.HasPrefix(cp.Path, prefix) {
				v.add(field.Invalid(kp.Child("containerPath", "path"), cp.Path,
					fmt.Sprintf("ContainerPath volume '%s' uses reserved path prefix '%s'", vol.Name, prefix)))
				break
			}
		}
	}
}
