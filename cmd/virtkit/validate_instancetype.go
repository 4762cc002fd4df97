package main

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/store"
)

// instancetypeResolver holds the instance types and preferences a
// validate run knows: KubeVirt's common catalogue, then those of the
// given files (which replace a catalogue object of the same kind and
// name).
type instancetypeResolver struct {
	st store.Store
}

func newInstancetypeResolver(ctx context.Context, streams []decoded, common bool) (*instancetypeResolver, error) {
	st := store.NewMemory()
	r := &instancetypeResolver{st: st}
	var objs []virtkit.Object
	if common {
		catalogue, err := virtkit.CommonInstancetypes()
		if err != nil {
			return r, err
		}
		objs = catalogue
	}
	for _, s := range streams {
		for _, o := range s.objs {
			switch o.(type) {
			case *virtkit.VirtualMachineInstancetype, *virtkit.VirtualMachineClusterInstancetype,
				*virtkit.VirtualMachinePreference, *virtkit.VirtualMachineClusterPreference:
				objs = append(objs, o.DeepCopyObject().(virtkit.Object))
			}
		}
	}
	for _, o := range objs {
		if virtkit.IsNamespaced(o.GetObjectKind().GroupVersionKind()) && o.GetNamespace() == "" {
			o.SetNamespace("default")
		}
		virtkit.SetDefaults(o)
		err := st.Create(ctx, o)
		if errors.Is(err, store.ErrAlreadyExists) {
			cur := o.DeepCopyObject().(virtkit.Object)
			if err = st.Get(ctx, store.KeyOf(o), cur); err == nil {
				o.SetResourceVersion(cur.GetResourceVersion())
				err = st.Update(ctx, o)
			}
		}
		if err != nil {
			return r, err
		}
	}
	return r, nil
}

// admit runs the library's instancetype admission on a VM (in namespace
// "default" when it names none, as apply puts it there).
func (r *instancetypeResolver) admit(ctx context.Context, obj virtkit.Object) (field.ErrorList, error) {
	vm, ok := obj.(*virtkit.VirtualMachine)
	if !ok || vm.Spec.Instancetype == nil && vm.Spec.Preference == nil {
		return nil, nil
	}
	vm = vm.DeepCopy()
	if vm.Namespace == "" {
		vm.Namespace = "default"
	}
	return controller.AdmitInstancetype(ctx, r.st, vm)
}
