package actions

import (
	"context"
	"fmt"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// InstancetypeSpecs looks up the instance type and preference vm names
// (nil when it names none) as they are now in st, without revisions.
// When the preference's lookup fails, the instance type found is
// returned with the error.
// Admission uses it to report conflicts before the VM is stored.
func InstancetypeSpecs(ctx context.Context, st store.Store, vm *virtkit.VirtualMachine) (*virtkit.VirtualMachineInstancetypeSpec, *virtkit.VirtualMachinePreferenceSpec, error) {
	var it *virtkit.VirtualMachineInstancetypeSpec
	var pref *virtkit.VirtualMachinePreferenceSpec
	if m := vm.Spec.Instancetype; m != nil {
		obj, err := GetInstancetypeObject(ctx, st, vm.Namespace, m.Name, InstancetypeKind(m.Kind))
		if err != nil {
			return nil, nil, err
		}
		it = virtkit.InstancetypeSpecOf(obj)
	}
	if m := vm.Spec.Preference; m != nil {
		obj, err := GetInstancetypeObject(ctx, st, vm.Namespace, m.Name, PreferenceKind(m.Kind))
		if err != nil {
			return it, nil, err // it tells the caller which lookup failed
		}
		pref = virtkit.PreferenceSpecOf(obj)
	}
	return it, pref, nil
}

// GetInstancetypeObject reads the instance type or preference of the given
// kind (namespaced kinds in namespace) from st, with its kind set.
func GetInstancetypeObject(ctx context.Context, st store.Store, namespace, name, kind string) (virtkit.Object, error) {
	gvk := virtkit.InstancetypeSchemeGroupVersion.WithKind(kind)
	obj, err := virtkit.NewObject(gvk)
	if err != nil {
		return nil, err
	}
	key := store.Key{Name: name}
	if virtkit.IsNamespaced(gvk) {
		key.Namespace = namespace
	}
	if err := st.Get(ctx, key, obj); err != nil {
		return nil, fmt.Errorf("%s %s: %w", kind, name, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

// InstancetypeKind is the kind an instance type matcher names, in any of
// KubeVirt's spellings (see virtkit.InstancetypeMatcherKind); an unknown
// one is returned as it is, for the lookup to fail on.
func InstancetypeKind(k string) string {
	if kind, ok := virtkit.InstancetypeMatcherKind(k); ok {
		return kind
	}
	return k
}

// PreferenceKind is InstancetypeKind for a preference matcher.
func PreferenceKind(k string) string {
	if kind, ok := virtkit.PreferenceMatcherKind(k); ok {
		return kind
	}
	return k
}
