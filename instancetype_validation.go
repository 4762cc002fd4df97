package virtkit

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateInstancetype checks an instance type of either scope.
func validateInstancetype(meta *metav1.ObjectMeta, namespaced bool, spec *VirtualMachineInstancetypeSpec) field.ErrorList {
	errs := validateObjectMeta(meta, namespaced, field.NewPath("metadata"))
	sp := field.NewPath("spec")
	if spec.CPU.Guest < 1 {
		errs = append(errs, field.Required(sp.Child("cpu", "guest"), "an instance type needs at least one vCPU"))
	}
	if spec.CPU.MaxSockets != nil && *spec.CPU.MaxSockets < spec.CPU.Guest {
		errs = append(errs, field.Invalid(sp.Child("cpu", "maxSockets"), *spec.CPU.MaxSockets, "must not be below cpu.guest"))
	}
	policies := []IOThreadsPolicy{IOThreadsPolicyShared, IOThreadsPolicyAuto, IOThreadsPolicySupplementalPool}
	if p := spec.IOThreadsPolicy; p != nil && !slices.Contains(policies, *p) {
		errs = append(errs, field.NotSupported(sp.Child("ioThreadsPolicy"), *p, policies))
	}
	mp := sp.Child("memory")
	if spec.Memory.Guest.Sign() <= 0 {
		errs = append(errs, field.Required(mp.Child("guest"), "an instance type needs guest memory"))
	}
	if mg := spec.Memory.MaxGuest; mg != nil && mg.Cmp(spec.Memory.Guest) < 0 {
		errs = append(errs, field.Invalid(mp.Child("maxGuest"), mg.String(), "must not be below memory.guest"))
	}
	if p := spec.Memory.OvercommitPercent; p < 0 || p > 100 {
		errs = append(errs, field.Invalid(mp.Child("overcommitPercent"), p, "must be between 0 and 100"))
	}
	if hp := spec.Memory.Hugepages; hp != nil {
		if _, err := resource.ParseQuantity(hp.PageSize); err != nil || hp.PageSize == "" {
			errs = append(errs, field.Invalid(mp.Child("hugepages", "pageSize"), hp.PageSize, "must be a page size such as 2Mi or 1Gi"))
		}
		if spec.Memory.OvercommitPercent != 0 {
			errs = append(errs, field.Invalid(mp.Child("overcommitPercent"), spec.Memory.OvercommitPercent,
				"memory overcommit is not allowed with hugepages"))
		}
	}
	return errs
}

// validatePreference checks a preference of either scope.
func validatePreference(meta *metav1.ObjectMeta, namespaced bool, spec *VirtualMachinePreferenceSpec) field.ErrorList {
	errs := validateObjectMeta(meta, namespaced, field.NewPath("metadata"))
	sp := field.NewPath("spec")
	if c := spec.CPU; c != nil {
		if t := c.PreferredCPUTopology; t != nil && !slices.Contains(cpuTopologies(), *t) {
			errs = append(errs, field.NotSupported(sp.Child("cpu", "preferredCPUTopology"), *t, cpuTopologies()))
		}
		if so := c.SpreadOptions; so != nil {
			if so.Ratio != nil && *so.Ratio < 1 {
				errs = append(errs, field.Invalid(sp.Child("cpu", "spreadOptions", "ratio"), *so.Ratio, "must be at least 1"))
			}
			if so.Across != nil && !slices.Contains(spreadAcross(), *so.Across) {
				errs = append(errs, field.NotSupported(sp.Child("cpu", "spreadOptions", "across"), *so.Across, spreadAcross()))
			}
		}
	}
	if d := spec.Devices; d != nil {
		dp := sp.Child("devices")
		buses := []DiskBus{DiskBusVirtio, DiskBusSATA, DiskBusSCSI, DiskBusUSB}
		for _, b := range []struct {
			name string
			bus  DiskBus
		}{{"preferredDiskBus", d.PreferredDiskBus}, {"preferredCdromBus", d.PreferredCdromBus}, {"preferredLunBus", d.PreferredLunBus}} {
			if b.bus != "" && !slices.Contains(buses, b.bus) {
				errs = append(errs, field.NotSupported(dp.Child(b.name), b.bus, buses))
			}
		}
	}
	if f := spec.Firmware; f != nil && isTrue(f.PreferredUseBios) && isTrue(f.PreferredUseEfi) {
		errs = append(errs, field.Invalid(sp.Child("firmware", "preferredUseBios"), true, "preferredUseBios and preferredUseEfi are mutually exclusive"))
	}
	if g := spec.PreferredTerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(sp.Child("preferredTerminationGracePeriodSeconds"), *g, "must be non-negative"))
	}
	if r := spec.Requirements; r != nil && r.Memory != nil && r.Memory.Guest.Sign() < 0 {
		errs = append(errs, field.Invalid(sp.Child("requirements", "memory", "guest"), r.Memory.Guest.String(), "must be non-negative"))
	}
	return errs
}

// validateVMMatchers checks a VM's spec.instancetype and spec.preference
// as KubeVirt's VM admission does before it looks the objects up.
func validateVMMatchers(vm *VirtualMachine) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	if m := vm.Spec.Instancetype; m != nil {
		p := sp.Child("instancetype")
		if m.Name == "" && m.InferFromVolume == "" {
			errs = append(errs, field.Required(p.Child("name"), "an instancetype matcher needs a name"))
		}
		errs = append(errs, validateInference(vm, m.InferFromVolume, m.InferFromVolumeFailurePolicy, p)...)
		kinds := []string{KindVirtualMachineInstancetype, KindVirtualMachineClusterInstancetype}
		if _, ok := InstancetypeMatcherKind(m.Kind); !ok {
			errs = append(errs, field.NotSupported(p.Child("kind"), m.Kind, kinds))
		}
	}
	if m := vm.Spec.Preference; m != nil {
		p := sp.Child("preference")
		if m.Name == "" && m.InferFromVolume == "" {
			errs = append(errs, field.Required(p.Child("name"), "a preference matcher needs a name"))
		}
		errs = append(errs, validateInference(vm, m.InferFromVolume, m.InferFromVolumeFailurePolicy, p)...)
		kinds := []string{KindVirtualMachinePreference, KindVirtualMachineClusterPreference}
		if _, ok := PreferenceMatcherKind(m.Kind); !ok {
			errs = append(errs, field.NotSupported(p.Child("kind"), m.Kind, kinds))
		}
	}
	return errs
}

// validateInference checks inferFromVolume: a template volume that is a
// dataVolume or a persistentVolumeClaim, and a known failure policy.
func validateInference(vm *VirtualMachine, volume string, policy *InferFromVolumeFailurePolicy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if policy != nil && *policy != RejectInferFromVolumeFailure && *policy != IgnoreInferFromVolumeFailure {
		errs = append(errs, field.NotSupported(p.Child("inferFromVolumeFailurePolicy"), *policy,
			[]InferFromVolumeFailurePolicy{RejectInferFromVolumeFailure, IgnoreInferFromVolumeFailure}))
	}
	if volume == "" || vm.Spec.Template == nil {
		return errs
	}
	for _, v := range vm.Spec.Template.Spec.Volumes {
		if v.Name != volume {
			continue
		}
		if v.DataVolume == nil && v.PersistentVolumeClaim == nil {
			errs = append(errs, field.Invalid(p.Child("inferFromVolume"), volume, "only dataVolume and persistentVolumeClaim volumes name an instancetype or preference"))
		}
		return errs
	}
	return append(errs, field.Invalid(p.Child("inferFromVolume"), volume, "no such volume in spec.template.spec.volumes"))
}

func validateControllerRevision(r *ControllerRevision) field.ErrorList {
	errs := validateObjectMeta(&r.ObjectMeta, true, field.NewPath("metadata"))
	if r.Revision < 0 {
		errs = append(errs, field.Invalid(field.NewPath("revision"), r.Revision, "must be non-negative"))
	}
	return errs
}

func cpuTopologies() []PreferredCPUTopology {
	return []PreferredCPUTopology{PreferSockets, PreferCores, PreferThreads, PreferSpread, PreferAny,
		DeprecatedPreferSockets, DeprecatedPreferCores, DeprecatedPreferThreads, DeprecatedPreferSpread, DeprecatedPreferAny}
}

// Values of spreadOptions.across.
const (
	SpreadAcrossSocketsCores        = "SocketsCores"
	SpreadAcrossCoresThreads        = "CoresThreads"
	SpreadAcrossSocketsCoresThreads = "SocketsCoresThreads"
)

func spreadAcross() []string {
	return []string{SpreadAcrossSocketsCores, SpreadAcrossCoresThreads, SpreadAcrossSocketsCoresThreads}
}

func isTrue(b *bool) bool { return b != nil && *b }

// InstancetypeMatcherKind is the kind a VM's spec.instancetype.kind names,
// read as KubeVirt reads it: case-insensitively, as the kind or its
// singular or plural resource name (virtctl writes
// virtualmachineclusterinstancetype); empty is
// VirtualMachineClusterInstancetype. ok is false for any other kind.
func InstancetypeMatcherKind(kind string) (string, bool) {
	switch strings.ToLower(kind) {
	case "", "virtualmachineclusterinstancetype", "virtualmachineclusterinstancetypes":
		return KindVirtualMachineClusterInstancetype, true
	case "virtualmachineinstancetype", "virtualmachineinstancetypes":
		return KindVirtualMachineInstancetype, true
	}
	return "", false
}

// PreferenceMatcherKind is InstancetypeMatcherKind for
// spec.preference.kind; empty is VirtualMachineClusterPreference.
func PreferenceMatcherKind(kind string) (string, bool) {
	switch strings.ToLower(kind) {
	case "", "virtualmachineclusterpreference", "virtualmachineclusterpreferences":
		return KindVirtualMachineClusterPreference, true
	case "virtualmachinepreference", "virtualmachinepreferences":
		return KindVirtualMachinePreference, true
	}
	return "", false
}
