package virtkit

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Annotations KubeVirt accepts only with a feature gate virtkit does not
// implement.
const (
	IgnitionAnnotation     = "kubevirt.io/ignitiondata"
	HookSidecarsAnnotation = "hooks.kubevirt.io/hookSidecars"
)

// maxSpecDiffs bounds how many changed fields an update error lists.
const maxSpecDiffs = 16

// AdmitCreate prepares obj for creation on behalf of a user and returns
// what the user must not set. It clears the status of every kind except
// Node (see the package's admission rules) and reports reserved labels and
// gated annotations as Forbidden with their paths. Call it after
// SetDefaults and Validate; obj is modified in place.
func AdmitCreate(obj Object) field.ErrorList {
	var errs field.ErrorList
	switch t := obj.(type) {
	case *VirtualMachineInstance:
		t.Status = VirtualMachineInstanceStatus{}
		errs = append(errs, admitVMIMeta(&t.ObjectMeta, field.NewPath("metadata"))...)
	case *VirtualMachine:
		t.Status = VirtualMachineStatus{}
		if t.Spec.Template != nil {
			errs = append(errs, admitVMIMeta(&t.Spec.Template.ObjectMeta, field.NewPath("spec", "template", "metadata"))...)
		}
	case *VirtualMachineInstanceReplicaSet:
		t.Status = VirtualMachineInstanceReplicaSetStatus{}
		if t.Spec.Template != nil {
			errs = append(errs, admitVMIMeta(&t.Spec.Template.ObjectMeta, field.NewPath("spec", "template", "metadata"))...)
		}
	case *VirtualMachineInstanceMigration:
		t.Status = VirtualMachineInstanceMigrationStatus{}
	case *MigrationPolicy:
		t.Status = MigrationPolicyStatus{}
	case *DataVolume:
		t.Status = DataVolumeStatus{}
	case *VirtualMachineSnapshot:
		t.Status = nil
	case *VirtualMachineRestore:
		t.Status = nil
	case *VirtualMachineClone:
		t.Status = VirtualMachineCloneStatus{}
	case *VirtualMachineExport:
		t.Status = nil
	case *KubeVirt:
		t.Status = KubeVirtStatus{}
	}
	return errs
}

// AdmitUpdate prepares obj, the state a user asks for, to replace old, the
// stored object, and returns what the user may not change. obj gets old's
// status (a spec update never writes status) and keeps old's reserved VMI
// labels when it does not name them; setting or changing one is
// Forbidden. A VMI's or a migration's spec may not change: each changed
// field is Forbidden with its path; only a VMI's hot-pluggable volumes and
// their disks may come and go ([AdmitVolumeHotplug]). Call it after
// SetDefaults and Validate; obj is modified in place. Objects of different
// kinds give one Invalid error.
func AdmitUpdate(obj, old Object) field.ErrorList {
	if reflect.TypeOf(obj) != reflect.TypeOf(old) {
		return field.ErrorList{field.Invalid(field.NewPath("kind"), fmt.Sprintf("%T", obj), fmt.Sprintf("cannot replace a %T", old))}
	}
	var errs field.ErrorList
	switch t := obj.(type) {
	case *VirtualMachineInstance:
		o := old.(*VirtualMachineInstance)
		t.Status = *o.Status.DeepCopy()
		errs = append(errs, admitReservedLabelsUpdate(&t.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata", "labels"))...)
		errs = append(errs, admitVMIAnnotations(t.Annotations, field.NewPath("metadata", "annotations"))...)
		errs = append(errs, AdmitVolumeHotplug(&t.Spec, &o.Spec, field.NewPath("spec"))...)
	case *VirtualMachine:
		t.Status = *old.(*VirtualMachine).Status.DeepCopy()
		if t.Spec.Template != nil {
			errs = append(errs, admitVMIMeta(&t.Spec.Template.ObjectMeta, field.NewPath("spec", "template", "metadata"))...)
		}
	case *VirtualMachineInstanceReplicaSet:
		t.Status = *old.(*VirtualMachineInstanceReplicaSet).Status.DeepCopy()
		if t.Spec.Template != nil {
			errs = append(errs, admitVMIMeta(&t.Spec.Template.ObjectMeta, field.NewPath("spec", "template", "metadata"))...)
		}
	case *VirtualMachineInstanceMigration:
		o := old.(*VirtualMachineInstanceMigration)
		t.Status = *o.Status.DeepCopy()
		errs = append(errs, forbidChanges(t.Spec, o.Spec, field.NewPath("spec"),
			"a migration's spec is immutable after creation")...)
		errs = append(errs, admitMigrationSelectorLabel(t, o)...)
	case *MigrationPolicy:
		t.Status = *old.(*MigrationPolicy).Status.DeepCopy()
	case *DataVolume:
		o := old.(*DataVolume)
		t.Status = *o.Status.DeepCopy()
		keepDataVolumeAnnotations(t, o)
		errs = append(errs, forbidChanges(t.Spec, o.Spec, field.NewPath("spec"),
			"a DataVolume's spec is immutable after creation")...)
	case *Node:
		t.Status = *old.(*Node).Status.DeepCopy()
	case *VirtualMachineSnapshot:
		o := old.(*VirtualMachineSnapshot)
		t.Status = o.Status.DeepCopy()
		errs = append(errs, admitSnapshotKindUpdate(t.Spec, o.Spec, KindVirtualMachineSnapshot)...)
	case *VirtualMachineRestore:
		o := old.(*VirtualMachineRestore)
		t.Status = o.Status.DeepCopy()
		errs = append(errs, admitSnapshotKindUpdate(t.Spec, o.Spec, KindVirtualMachineRestore)...)
	case *VirtualMachineClone:
		o := old.(*VirtualMachineClone)
		t.Status = *o.Status.DeepCopy()
		errs = append(errs, admitSnapshotKindUpdate(t.Spec, o.Spec, KindVirtualMachineClone)...)
	case *VirtualMachineExport:
		o := old.(*VirtualMachineExport)
		t.Status = o.Status.DeepCopy()
		errs = append(errs, admitSnapshotKindUpdate(t.Spec, o.Spec, KindVirtualMachineExport)...)
	case *KubeVirt:
		t.Status = *old.(*KubeVirt).Status.DeepCopy()
	}
	return errs
}

// admitVMIMeta checks the metadata of a VMI or of a VMI template as it
// arrives from a user.
func admitVMIMeta(meta *metav1.ObjectMeta, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedKeys(meta.Labels) {
		if slices.Contains(reservedLabels[:], k) {
			errs = append(errs, field.Forbidden(p.Child("labels").Key(k), "reserved label: only virtkit's controllers may set it"))
		}
	}
	return append(errs, admitVMIAnnotations(meta.Annotations, p.Child("annotations"))...)
}

func admitVMIAnnotations(annotations map[string]string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range []string{IgnitionAnnotation, HookSidecarsAnnotation} {
		if _, ok := annotations[k]; ok {
			errs = append(errs, field.Forbidden(p.Key(k), "needs a KubeVirt feature gate that virtkit does not implement"))
		}
	}
	return errs
}

// admitReservedLabelsUpdate keeps old's reserved labels that meta does not
// name and forbids adding or changing one.
func admitReservedLabelsUpdate(meta, old *metav1.ObjectMeta, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range reservedLabels {
		was, had := old.Labels[k]
		now, has := meta.Labels[k]
		switch {
		case has && (!had || now != was):
			errs = append(errs, field.Forbidden(p.Key(k), "reserved label: only virtkit's controllers may set or change it"))
		case had && !has:
			if meta.Labels == nil {
				meta.Labels = map[string]string{}
			}
			meta.Labels[k] = was
		}
	}
	return errs
}

// admitMigrationSelectorLabel: the kubevirt.io/vmi-name label of a
// migration that has not finished may not change, as in KubeVirt.
func admitMigrationSelectorLabel(mig, old *VirtualMachineInstanceMigration) field.ErrorList {
	if old.Status.Phase == MigrationSucceeded || old.Status.Phase == MigrationFailed {
		return nil
	}
	was, had := old.Labels[MigrationSelectorLabel]
	if !had {
		return nil
	}
	if now, has := mig.Labels[MigrationSelectorLabel]; !has || now != was {
		return field.ErrorList{field.Forbidden(field.NewPath("metadata", "labels").Key(MigrationSelectorLabel),
			"may not change while the migration is in flight")}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// forbidChanges returns one Forbidden error per field that differs between
// a and b (values of the same type), at most maxSpecDiffs of them, with
// their JSON paths.
func forbidChanges(a, b any, p *field.Path, detail string) field.ErrorList {
	var paths []*field.Path
	diffPaths(reflect.ValueOf(a), reflect.ValueOf(b), p, &paths)
	if len(paths) == 0 && !equality.Semantic.DeepEqual(a, b) {
		paths = append(paths, p)
	}
	var errs field.ErrorList
	for i, dp := range paths {
		if i == maxSpecDiffs {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("%s (and %d more changed fields)", detail, len(paths)-i)))
			break
		}
		errs = append(errs, field.Forbidden(dp, detail))
	}
	return errs
}

// diffPaths appends the paths where a and b differ, descending into
// structs (by JSON name), maps and equally long lists; anything else that
// differs is reported where it is. Values are compared with
// equality.Semantic, so 1Gi equals 1024Mi.
func diffPaths(a, b reflect.Value, p *field.Path, out *[]*field.Path) {
	if len(*out) > maxSpecDiffs {
		return
	}
	if !a.IsValid() || !b.IsValid() {
		if a.IsValid() != b.IsValid() {
			*out = append(*out, p)
		}
		return
	}
	if equality.Semantic.DeepEqual(a.Interface(), b.Interface()) {
		return
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			*out = append(*out, p)
			return
		}
		diffPaths(a.Elem(), b.Elem(), p, out)
		return
	case reflect.Struct:
		if !allFieldsExported(a.Type()) {
			break // a value type such as Quantity: compare as a whole
		}
		for i := range a.NumField() {
			sf := a.Type().Field(i)
			name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			child := p
			if !(hasTagOption(opts, "inline") || (sf.Anonymous && name == "")) {
				if name == "" {
					name = sf.Name
				}
				child = p.Child(name)
			}
			diffPaths(a.Field(i), b.Field(i), child, out)
		}
		return
	case reflect.Map:
		if a.Type().Key().Kind() != reflect.String {
			break
		}
		keys := map[string]bool{}
		for _, m := range []reflect.Value{a, b} {
			for _, k := range m.MapKeys() {
				keys[k.String()] = true
			}
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		slices.Sort(sorted)
		for _, k := range sorted {
			kv := reflect.ValueOf(k).Convert(a.Type().Key())
			diffPaths(a.MapIndex(kv), b.MapIndex(kv), p.Key(k), out)
		}
		return
	case reflect.Slice:
		if a.Len() != b.Len() {
			break
		}
		for i := range a.Len() {
			diffPaths(a.Index(i), b.Index(i), p.Index(i), out)
		}
		return
	}
	*out = append(*out, p)
}

func allFieldsExported(t reflect.Type) bool {
	for i := range t.NumField() {
		if !t.Field(i).IsExported() {
			return false
		}
	}
	return true
}
