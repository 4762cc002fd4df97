package virtkit

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// AdmitFeatureGates returns the fields of obj (a VMI, or the template of
// a VM or a replica set) that need a feature gate gates leaves off, each
// an Invalid error at the field's path with KubeVirt's message naming the
// gate. Other kinds have no gated fields.
func AdmitFeatureGates(obj Object, gates FeatureGates) field.ErrorList {
	switch t := obj.(type) {
	case *VirtualMachineInstance:
		return gatedFields(&t.Spec, field.NewPath("spec"), gates)
	case *VirtualMachine:
		if t.Spec.Template != nil {
			return gatedFields(&t.Spec.Template.Spec, field.NewPath("spec", "template", "spec"), gates)
		}
	case *VirtualMachineInstanceReplicaSet:
		if t.Spec.Template != nil {
			return gatedFields(&t.Spec.Template.Spec, field.NewPath("spec", "template", "spec"), gates)
		}
	}
	return nil
}

func gatedFields(spec *VirtualMachineInstanceSpec, sp *field.Path, gates FeatureGates) field.ErrorList {
	var errs field.ErrorList
	off := func(gate string) bool { return !gates.IsEnabled(gate) }
	notEnabled := func(gate string) string { return gate + " feature gate is not enabled in kubevirt-config" }
	vp := sp.Child("volumes")
	volumes := map[string]*Volume{}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		volumes[v.Name] = v
		if v.HostDisk != nil && off(FeatureGateHostDisk) {
			errs = append(errs, field.Invalid(vp.Index(i), v.Name, FeatureGateHostDisk+" feature gate is not enabled"))
		}
		if v.DownwardMetrics != nil && off(FeatureGateDownwardMetrics) {
			errs = append(errs, field.Invalid(vp.Index(i), v.Name,
				"downwardMetrics disks are not allowed: "+FeatureGateDownwardMetrics+" feature gate is not enabled."))
		}
	}
	dom := &spec.Domain
	dp := sp.Child("domain")
	dev := &dom.Devices
	if dev.DownwardMetrics != nil && off(FeatureGateDownwardMetrics) {
		errs = append(errs, field.Invalid(dp.Child("devices", "downwardMetrics"), "set",
			"downwardMetrics virtio serial is not allowed: "+FeatureGateDownwardMetrics+" feature gate is not enabled"))
	}
	if len(dev.HostDevices) > 0 && off(FeatureGateHostDevices) {
		errs = append(errs, field.Invalid(dp.Child("devices", "hostDevices"), len(dev.HostDevices),
			"Host Devices feature gate is not enabled in kubevirt-config"))
	}
	if len(dev.GPUs) > 0 && off(FeatureGateGPU) {
		errs = append(errs, field.Invalid(dp.Child("devices", "gpus"), len(dev.GPUs), notEnabled(FeatureGateGPU)))
	}
	if len(dev.PanicDevices) > 0 && off(FeatureGatePanicDevices) {
		errs = append(errs, field.Invalid(dp.Child("devices", "panicDevices"), len(dev.PanicDevices), notEnabled(FeatureGatePanicDevices)))
	}
	if c := dom.CPU; c != nil && c.NUMA != nil && c.NUMA.GuestMappingPassthrough != nil && off(FeatureGateNUMA) {
		np := dp.Child("cpu", "numa", "guestMappingPassthrough")
		errs = append(errs, field.Invalid(np, "set", fmt.Sprintf("%s, invalid entry %s", notEnabled(FeatureGateNUMA), np)))
	}
	if ls := dom.LaunchSecurity; ls != nil {
		switch {
		case (ls.SEV != nil || ls.SNP != nil) && off(FeatureGateWorkloadEncryptionSEV):
			errs = append(errs, field.Invalid(dp.Child("launchSecurity"), "set", notEnabled(FeatureGateWorkloadEncryptionSEV)))
		case ls.TDX != nil && off(FeatureGateWorkloadEncryptionTDX):
			errs = append(errs, field.Invalid(dp.Child("launchSecurity"), "set", notEnabled(FeatureGateWorkloadEncryptionTDX)))
		}
	}
	for i, iface := range dev.Interfaces {
		if iface.PasstBinding != nil && off(FeatureGatePasstBinding) {
			errs = append(errs, field.Invalid(dp.Child("devices", "interfaces").Index(i).Child("name"), iface.Name,
				FeatureGatePasstBinding+" feature gate is not enabled"))
		}
	}
	for _, fs := range dev.Filesystems {
		v, ok := volumes[fs.Name]
		if ok && (v.PersistentVolumeClaim != nil || v.DataVolume != nil) && off(FeatureGateVirtIOFSStorageVolumes) {
			errs = append(errs, field.Invalid(dp.Child("devices", "filesystems"), fs.Name,
				"virtiofs is not allowed: virtiofs feature gate is not enabled for PVC"))
			break
		}
	}
	for i, d := range dev.Disks {
		if _, ok := volumes[d.Name]; !ok && d.CDRom != nil && off(FeatureGateDeclarativeHotplugVolumes) {
			errs = append(errs, field.Invalid(dp.Child("devices", "disks").Index(i), d.Name,
				FeatureGateDeclarativeHotplugVolumes+" feature gate not enabled, cannot define an empty CD-ROM disk"))
		}
	}
	return errs
}
