package virtkit

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateSourceRef checks a snapshot source or restore target: KubeVirt
// snapshots and restores only VirtualMachines (apiGroup kubevirt.io).
func validateVMRef(ref *TypedLocalObjectReference, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case ref.APIGroup == nil:
		errs = append(errs, field.Required(p.Child("apiGroup"), "missing apiGroup"))
	case *ref.APIGroup != GroupName:
		errs = append(errs, field.NotSupported(p.Child("apiGroup"), *ref.APIGroup, []string{GroupName}))
	}
	if ref.Kind != KindVirtualMachine {
		errs = append(errs, field.NotSupported(p.Child("kind"), ref.Kind, []string{KindVirtualMachine}))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "name of the VirtualMachine"))
	}
	return errs
}

// Rule S1: a snapshot's source is a VirtualMachine; deletionPolicy is
// Delete or Retain; failureDeadline is not negative.
func validateSnapshot(s *VirtualMachineSnapshot) field.ErrorList {
	errs := validateObjectMeta(&s.ObjectMeta, true, field.NewPath("metadata"))
	sp := field.NewPath("spec")
	errs = append(errs, validateVMRef(&s.Spec.Source, sp.Child("source"))...)
	if dp := s.Spec.DeletionPolicy; dp != nil && *dp != VirtualMachineSnapshotContentDelete && *dp != VirtualMachineSnapshotContentRetain {
		errs = append(errs, field.NotSupported(sp.Child("deletionPolicy"), *dp,
			[]DeletionPolicy{VirtualMachineSnapshotContentDelete, VirtualMachineSnapshotContentRetain}))
	}
	if fd := s.Spec.FailureDeadline; fd != nil && fd.Duration < 0 {
		errs = append(errs, field.Invalid(sp.Child("failureDeadline"), fd.Duration.String(), "must not be negative"))
	}
	return errs
}

// Rule S2: a snapshot content holds a VirtualMachine and one backup per
// volume name.
func validateSnapshotContent(c *VirtualMachineSnapshotContent) field.ErrorList {
	errs := validateObjectMeta(&c.ObjectMeta, true, field.NewPath("metadata"))
	sp := field.NewPath("spec")
	if c.Spec.Source.VirtualMachine == nil {
		errs = append(errs, field.Required(sp.Child("source", "virtualMachine"), "the copied VirtualMachine"))
	}
	seen := map[string]bool{}
	for i, b := range c.Spec.VolumeBackups {
		p := sp.Child("volumeBackups").Index(i)
		switch {
		case b.VolumeName == "":
			errs = append(errs, field.Required(p.Child("volumeName"), ""))
		case seen[b.VolumeName]:
			errs = append(errs, field.Duplicate(p.Child("volumeName"), b.VolumeName))
		}
		seen[b.VolumeName] = true
		if b.PersistentVolumeClaim.Name == "" {
			errs = append(errs, field.Required(p.Child("persistentVolumeClaim", "metadata", "name"), ""))
		}
	}
	return errs
}

// Rule S3: a restore targets a VirtualMachine and names a snapshot; its
// patches are single JSON patch operations under /spec/, /metadata/labels/
// or /metadata/annotations/ (ValidateVMPatches); volumeRestorePolicy is
// RandomizeNames or InPlace.
func validateRestore(r *VirtualMachineRestore) field.ErrorList {
	errs := validateObjectMeta(&r.ObjectMeta, true, field.NewPath("metadata"))
	sp := field.NewPath("spec")
	errs = append(errs, validateVMRef(&r.Spec.Target, sp.Child("target"))...)
	if r.Spec.VirtualMachineSnapshotName == "" {
		errs = append(errs, field.Required(sp.Child("virtualMachineSnapshotName"), "name of the snapshot to restore"))
	}
	errs = append(errs, ValidateVMPatches(r.Spec.Patches, sp.Child("patches"))...)
	if vp := r.Spec.VolumeRestorePolicy; vp != nil {
		switch *vp {
		case VolumeRestorePolicyRandomizeNames, VolumeRestorePolicyInPlace:
		default:
			errs = append(errs, field.NotSupported(sp.Child("volumeRestorePolicy"), *vp,
				[]VolumeRestorePolicy{VolumeRestorePolicyRandomizeNames, VolumeRestorePolicyInPlace}))
		}
	}
	return errs
}

// AdmitRestore checks a restore against the objects it names, as
// KubeVirt's restore admission does: the snapshot must exist and not have
// failed, and an existing target VM (the snapshot's source, say) must be
// stopped (runStrategy Halted, or running false). vm is the target VM, nil
// when it does not exist yet (restore to a new VM); snapshot is nil when
// it does not exist. A snapshot still in progress is admitted: the restore
// waits for it. The InPlace volume restore policy is only for a restore
// into the snapshot's own source VM (virtkit's rule: overwriting the
// source's volumes from a restore to another VM would take them from it).
func AdmitRestore(r *VirtualMachineRestore, snapshot *VirtualMachineSnapshot, vm *VirtualMachine) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	switch {
	case snapshot == nil:
		errs = append(errs, field.NotFound(sp.Child("virtualMachineSnapshotName"), r.Spec.VirtualMachineSnapshotName))
	case snapshot.Status != nil && snapshot.Status.Phase == SnapshotFailed:
		errs = append(errs, field.Invalid(sp.Child("virtualMachineSnapshotName"), r.Spec.VirtualMachineSnapshotName,
			fmt.Sprintf("VirtualMachineSnapshot %q has failed and cannot be restored", snapshot.Name)))
	}
	if inPlace(r) && snapshot != nil && !restoresSource(r, snapshot, vm) {
		errs = append(errs, field.Forbidden(sp.Child("volumeRestorePolicy"),
			fmt.Sprintf("the InPlace volume restore policy overwrites the volumes of VirtualMachine %q: the target must be that VirtualMachine", snapshot.Spec.Source.Name)))
	}
	if vm != nil && !vmStopped(vm) {
		errs = append(errs, field.Forbidden(sp.Child("target", "name"),
			fmt.Sprintf("VirtualMachine %q is not stopped: a restore into an existing VM needs runStrategy Halted", vm.Name)))
	}
	return errs
}

// inPlace reports whether the restore overwrites the volumes it restores.
func inPlace(r *VirtualMachineRestore) bool {
	return r.Spec.VolumeRestorePolicy != nil && *r.Spec.VolumeRestorePolicy == VolumeRestorePolicyInPlace
}

// restoresSource reports whether the restore's target is the VM the
// snapshot was taken of: the same name and, when both are known, the same
// uid (a VM deleted and made again under its name is another VM).
func restoresSource(r *VirtualMachineRestore, snapshot *VirtualMachineSnapshot, vm *VirtualMachine) bool {
	if r.Spec.Target.Name != snapshot.Spec.Source.Name {
		return false
	}
	if vm != nil && snapshot.Status != nil && snapshot.Status.SourceUID != nil && string(vm.UID) != *snapshot.Status.SourceUID {
		return false
	}
	return true
}

// vmStopped reports whether the VM is asked to be off.
func vmStopped(vm *VirtualMachine) bool {
	if vm.Spec.RunStrategy != nil {
		return *vm.Spec.RunStrategy == RunStrategyHalted
	}
	return vm.Spec.Running != nil && !*vm.Spec.Running
}

// admitSnapshotUpdate forbids changing the spec of a snapshot kind.
func admitSnapshotKindUpdate(spec, old any, kind string) field.ErrorList {
	return forbidChanges(spec, old, field.NewPath("spec"), "a "+kind+"'s spec is immutable after creation")
}
