package virtkit

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// applyInstancetypeHost applies the instance type's IO threads, IO thread
// policy, launch security, GPUs and host devices, in KubeVirt's order; a
// template that sets one the instance type sets conflicts.
func applyInstancetypeHost(spec *VirtualMachineInstanceSpec, it *VirtualMachineInstancetypeSpec, base *field.Path) field.ErrorList {
	var errs field.ErrorList
	dp := base.Child("domain")
	if t := it.IOThreads; t != nil && t.SupplementalPoolThreadCount != nil {
		if have := spec.Domain.IOThreads; have != nil && have.SupplementalPoolThreadCount != nil {
			errs = append(errs, conflict(dp.Child("ioThreads", "supplementalPoolThreadCount"), *have.SupplementalPoolThreadCount))
		} else {
			if spec.Domain.IOThreads == nil {
				spec.Domain.IOThreads = &DiskIOThreads{}
			}
			n := *t.SupplementalPoolThreadCount
			spec.Domain.IOThreads.SupplementalPoolThreadCount = &n
		}
	}
	if p := it.IOThreadsPolicy; p != nil {
		if have := spec.Domain.IOThreadsPolicy; have != nil {
			errs = append(errs, conflict(dp.Child("ioThreadsPolicy"), string(*have)))
		} else {
			v := *p
			spec.Domain.IOThreadsPolicy = &v
		}
	}
	if it.LaunchSecurity != nil {
		if spec.Domain.LaunchSecurity != nil {
			errs = append(errs, conflict(dp.Child("launchSecurity"), "set"))
		} else {
			spec.Domain.LaunchSecurity = it.LaunchSecurity.DeepCopy()
		}
	}
	dev := &spec.Domain.Devices
	if len(it.GPUs) > 0 {
		if len(dev.GPUs) > 0 {
			errs = append(errs, conflict(dp.Child("devices", "gpus"), len(dev.GPUs)))
		} else {
			dev.GPUs = deepCopySlice(it.GPUs)
		}
	}
	if len(it.HostDevices) > 0 {
		if len(dev.HostDevices) > 0 {
			errs = append(errs, conflict(dp.Child("devices", "hostDevices"), len(dev.HostDevices)))
		} else {
			dev.HostDevices = deepCopySlice(it.HostDevices)
		}
	}
	return errs
}

// deepCopySlice copies in and each element deeply.
func deepCopySlice[T any, P interface {
	*T
	DeepCopy() *T
}](in []T) []T {
	out := slices.Clone(in)
	for i := range in {
		out[i] = *P(&in[i]).DeepCopy()
	}
	return out
}

// applyPreferredPanicDevices gives panic devices that name no model the
// preferred one, adding one such device when the template has none.
func applyPreferredPanicDevices(dev *Devices, model *PanicDeviceModel) {
	if model == nil {
		return
	}
	if len(dev.PanicDevices) == 0 {
		m := *model
		dev.PanicDevices = []PanicDevice{{Model: &m}}
		return
	}
	for i := range dev.PanicDevices {
		if dev.PanicDevices[i].Model == nil {
			m := *model
			dev.PanicDevices[i].Model = &m
		}
	}
}

// checkArchitecture checks the preference's required architecture
// against the template's (after the preferred one is applied; amd64,
// virtkit's default, when neither says).
func checkArchitecture(spec *VirtualMachineInstanceSpec, pref *VirtualMachinePreferenceSpec, base *field.Path) field.ErrorList {
	if pref.Requirements == nil || pref.Requirements.Architecture == nil || *pref.Requirements.Architecture == "" {
		return nil
	}
	arch := spec.Architecture
	if arch == "" && pref.PreferredArchitecture != nil {
		arch = *pref.PreferredArchitecture
	}
	if arch == "" {
		arch = "amd64"
	}
	if want := *pref.Requirements.Architecture; arch != want {
		return field.ErrorList{field.Invalid(base.Child("architecture"), arch,
			fmt.Sprintf("preference requires architecture %s", want))}
	}
	return nil
}

// ApplyPreferredStorageClass gives the VM's dataVolumeTemplates that name
// no storage class (in spec.pvc or spec.storage) the preference's
// volumes.preferredStorageClassName, as KubeVirt's VM mutation does. It
// reports whether it changed vm.
func ApplyPreferredStorageClass(vm *VirtualMachine, pref *VirtualMachinePreferenceSpec) bool {
	if pref == nil || pref.Volumes == nil || pref.Volumes.PreferredStorageClassName == "" {
		return false
	}
	changed := false
	for i := range vm.Spec.DataVolumeTemplates {
		s := &vm.Spec.DataVolumeTemplates[i].Spec
		for _, claim := range []*PersistentVolumeClaimSpec{s.PVC, s.Storage} {
			if claim != nil && claim.StorageClassName == nil {
				name := pref.Volumes.PreferredStorageClassName
				claim.StorageClassName = &name
				changed = true
			}
		}
	}
	return changed
}
