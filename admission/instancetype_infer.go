package admission

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/store"
)

// InferFromVolume resolves a VM's inferFromVolume matchers as KubeVirt's
// VM mutation does: the volume's DataVolume (a dataVolumeTemplate of the
// VM, else the DataVolume in the store; a persistentVolumeClaim is the
// claim of the DataVolume of its name) carries labels naming the instance
// type and preference, and the matcher becomes one by name and kind. When
// the labels are missing, the failure policy decides: Reject (the
// default) refuses the VM at the matcher's inferFromVolume, Ignore drops
// the matcher. Then the dataVolumeTemplates that name no storage class get
// the preference's preferredStorageClassName. obj is changed in place; the API server and cluster.Apply
// run it before defaulting, as KubeVirt runs its mutation before admission.
func InferFromVolume(ctx context.Context, st store.Store, obj virtkit.Object) (field.ErrorList, error) {
	vm, ok := obj.(*virtkit.VirtualMachine)
	if !ok || vm.Spec.Template == nil {
		return nil, nil
	}
	var errs field.ErrorList
	if m := vm.Spec.Instancetype; m != nil && m.InferFromVolume != "" {
		p := field.NewPath("spec", "instancetype")
		name, kind, ferr, err := inferFrom(ctx, st, vm, m.InferFromVolume, virtkit.DefaultInstancetypeLabel,
			virtkit.DefaultInstancetypeKindLabel, virtkit.KindVirtualMachineClusterInstancetype, p)
		switch {
		case err != nil:
			return nil, err
		case ferr != nil && ignoring(m.InferFromVolumeFailurePolicy):
			vm.Spec.Instancetype = nil
		case ferr != nil:
			errs = append(errs, ferr)
		default:
			vm.Spec.Instancetype = &virtkit.InstancetypeMatcher{Name: name, Kind: kind}
		}
	}
	if m := vm.Spec.Preference; m != nil && m.InferFromVolume != "" {
		p := field.NewPath("spec", "preference")
		name, kind, ferr, err := inferFrom(ctx, st, vm, m.InferFromVolume, virtkit.DefaultPreferenceLabel,
			virtkit.DefaultPreferenceKindLabel, virtkit.KindVirtualMachineClusterPreference, p)
		switch {
		case err != nil:
			return nil, err
		case ferr != nil && ignoring(m.InferFromVolumeFailurePolicy):
			vm.Spec.Preference = nil
		case ferr != nil:
			errs = append(errs, ferr)
		default:
			vm.Spec.Preference = &virtkit.PreferenceMatcher{Name: name, Kind: kind}
		}
	}
	if len(errs) > 0 {
		return errs, nil
	}
	return nil, applyPreferredStorageClass(ctx, st, vm)
}

// applyPreferredStorageClass gives the VM's dataVolumeTemplates the
// storage class its preference prefers, as KubeVirt's VM mutation does. A
// preference that does not exist is left for the instance type check to
// report.
func applyPreferredStorageClass(ctx context.Context, st store.Store, vm *virtkit.VirtualMachine) error {
	m := vm.Spec.Preference
	if m == nil || m.Name == "" || len(vm.Spec.DataVolumeTemplates) == 0 {
		return nil
	}
	obj, err := actions.GetInstancetypeObject(ctx, st, vm.Namespace, m.Name, actions.PreferenceKind(m.Kind))
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	virtkit.ApplyPreferredStorageClass(vm, virtkit.PreferenceSpecOf(obj))
	return nil
}

func ignoring(p *virtkit.InferFromVolumeFailurePolicy) bool {
	return p != nil && *p == virtkit.IgnoreInferFromVolumeFailure
}

// inferFrom reads the name and kind labels of a volume's DataVolume. A
// volume that names nothing is a field error (ferr); err is a store error.
func inferFrom(ctx context.Context, st store.Store, vm *virtkit.VirtualMachine, volume, nameLabel, kindLabel, defaultKind string, p *field.Path) (name, kind string, ferr *field.Error, err error) {
	fp := p.Child("inferFromVolume")
	var dvName string
	for _, v := range vm.Spec.Template.Spec.Volumes {
		if v.Name != volume {
			continue
		}
		switch {
		case v.DataVolume != nil:
			dvName = v.DataVolume.Name
		case v.PersistentVolumeClaim != nil:
			dvName = v.PersistentVolumeClaim.ClaimName
		default:
			return "", "", field.Invalid(fp, volume, "only dataVolume and persistentVolumeClaim volumes name an instancetype or preference"), nil
		}
	}
	if dvName == "" {
		return "", "", field.Invalid(fp, volume, "no such volume in spec.template.spec.volumes"), nil
	}
	var labels map[string]string
	from := ""
	for _, t := range vm.Spec.DataVolumeTemplates {
		if t.ObjectMeta.Name == dvName {
			labels, from = t.ObjectMeta.Labels, "dataVolumeTemplate "+dvName
		}
	}
	if from == "" {
		dv := &virtkit.DataVolume{}
		err := st.Get(ctx, store.Key{Namespace: vm.Namespace, Name: dvName}, dv)
		if errors.Is(err, store.ErrNotFound) {
			return "", "", field.Invalid(fp, volume, fmt.Sprintf("DataVolume %s/%s not found", vm.Namespace, dvName)), nil
		}
		if err != nil {
			return "", "", nil, err
		}
		labels, from = dv.Labels, "DataVolume "+vm.Namespace+"/"+dvName
	}
	name = labels[nameLabel]
	if name == "" {
		return "", "", field.Invalid(fp, volume, fmt.Sprintf("%s has no label %s", from, nameLabel)), nil
	}
	kind = labels[kindLabel]
	if kind == "" {
		kind = defaultKind
	}
	return name, kind, nil, nil
}
