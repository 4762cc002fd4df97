package admission

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/store"
)

// AdmitInstancetype checks a VM against the instance type and preference
// it names, as KubeVirt's VM admission does: both must exist, and the
// template must not set what the instance type sets (each conflict at its
// path under spec.template.spec).
func AdmitInstancetype(ctx context.Context, st store.Store, obj virtkit.Object) (field.ErrorList, error) {
	vm, ok := obj.(*virtkit.VirtualMachine)
	if !ok || vm.Spec.Template == nil || vm.Spec.Instancetype == nil && vm.Spec.Preference == nil {
		return nil, nil
	}
	it, pref, err := actions.InstancetypeSpecs(ctx, st, vm)
	if errors.Is(err, store.ErrNotFound) {
		p := field.NewPath("spec", "instancetype")
		if vm.Spec.Instancetype == nil || it != nil {
			p = field.NewPath("spec", "preference")
		}
		return field.ErrorList{field.NotFound(p.Child("name"), err.Error())}, nil
	}
	if err != nil {
		return nil, err
	}
	tmpl := vm.Spec.Template.DeepCopy()
	return virtkit.ApplyInstancetype(tmpl, it, pref, field.NewPath("spec", "template", "spec")), nil
}
