package virtkit

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// notHonoured is the error for a field of an instance type or preference
// that expansion would apply to a part of the VMI virtkit does not model.
// The path is the VM's matcher (spec.instancetype or spec.preference);
// the detail names the field of the instance type or preference.
func notHonoured(matcher, fieldPath, what, why string, v any) *field.Error {
	return &field.Error{
		Type:     field.ErrorTypeNotSupported,
		Field:    field.NewPath("spec", matcher).String(),
		BadValue: v,
		Detail:   fmt.Sprintf("the %s's %s asks for %s, which virtkit does not model: %s", matcher, fieldPath, what, why),
	}
}

// instancetypeNotModelled lists the fields of it that virtkit cannot
// apply to a VMI.
func instancetypeNotModelled(it *VirtualMachineInstancetypeSpec) field.ErrorList {
	var errs field.ErrorList
	add := func(fieldPath, what, why string, v any) {
		errs = append(errs, notHonoured("instancetype", fieldPath, what, why, v))
	}
	if len(it.GPUs) > 0 {
		add("spec.gpus", "device passthrough", whyPassthrough, len(it.GPUs))
	}
	if len(it.HostDevices) > 0 {
		add("spec.hostDevices", "device passthrough", whyPassthrough, len(it.HostDevices))
	}
	if p := it.IOThreadsPolicy; p != nil && *p != IOThreadsPolicyShared {
		add("spec.ioThreadsPolicy", "the "+string(*p)+" IO thread policy", whyIOThreads, string(*p))
	}
	if it.IOThreads != nil {
		add("spec.ioThreads", "a supplemental IO thread pool", whyIOThreads, "set")
	}
	if it.LaunchSecurity != nil {
		add("spec.launchSecurity", "confidential computing (SEV, SNP, TDX)", whyConfidential, "set")
	}
	if n := it.CPU.NUMA; n != nil && n.GuestMappingPassthrough != nil {
		add("spec.cpu.numa.guestMappingPassthrough", "guest NUMA mapped to the host's", whyNUMA, "set")
	}
	if it.CPU.Realtime != nil {
		add("spec.cpu.realtime", "realtime vCPUs", whyNUMA, "set")
	}
	return errs
}

// preferenceNotModelled lists the fields of pref that would change a part
// of spec (the template being expanded) that virtkit does not model.
// Preferences for devices the template cannot have (sound, mediated GPUs)
// change nothing, in KubeVirt as here, and are not errors.
func preferenceNotModelled(spec *VirtualMachineInstanceSpec, pref *VirtualMachinePreferenceSpec) field.ErrorList {
	var errs field.ErrorList
	add := func(fieldPath, what, why string, v any) {
		errs = append(errs, notHonoured("preference", fieldPath, what, why, v))
	}
	if d := pref.Devices; d != nil {
		if d.PreferredDisableHotplug != nil {
			add("spec.devices.preferredDisableHotplug", "disabling hotplug", "virtkit's VMI has no devices.disableHotplug", *d.PreferredDisableHotplug)
		}
		if d.PreferredDiskBlockSize != nil && len(spec.Domain.Devices.Disks) > 0 {
			add("spec.devices.preferredDiskBlockSize", "custom block sizes", "the domain builder writes no blockio element", "set")
		}
		if m := d.PreferredPanicDeviceModel; m != nil {
			add("spec.devices.preferredPanicDeviceModel", "a panic device", "the domain builder writes no panic device", string(*m))
		}
	}
	if pref.PreferredLaunchSecurity != nil {
		add("spec.preferredLaunchSecurity", "confidential computing (SEV, SNP, TDX)", whyConfidential, "set")
	}
	if v := pref.Volumes; v != nil && v.PreferredStorageClassName != "" {
		add("spec.volumes.preferredStorageClassName", "a storage class for dataVolumeTemplates", "expansion changes only the VM's template", v.PreferredStorageClassName)
	}
	return errs
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
