package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// ErrInstancetypeConflict is wrapped by the error a VM start returns when
// its template conflicts with its instance type or preference.
var ErrInstancetypeConflict = errors.New("template conflicts with instancetype or preference")

// maxRevisionBytes bounds the snapshot read back from a ControllerRevision.
const maxRevisionBytes = 1 << 20

// expandInstancetype returns vm with its template expanded by the
// instance type and preference it names, as kept in the revisions the VM
// was first started with (created now if it has none, and recorded in
// s.vm's status). A VM that names neither is returned as it is.
func (r *VMReconciler) expandInstancetype(ctx context.Context, s *vmSync) (*virtkit.VirtualMachine, error) {
	vm := s.vm
	if vm.Spec.Instancetype == nil && vm.Spec.Preference == nil || vm.Spec.Template == nil {
		return vm, nil
	}
	var it *virtkit.VirtualMachineInstancetypeSpec
	var pref *virtkit.VirtualMachinePreferenceSpec
	if m := vm.Spec.Instancetype; m != nil {
		obj, ref, err := r.revision(ctx, vm, m.Name, actions.InstancetypeKind(m.Kind), m.RevisionName, vm.Status.InstancetypeRef)
		if err != nil {
			return nil, fmt.Errorf("spec.instancetype: %w", err)
		}
		vm.Status.InstancetypeRef = ref
		if it = virtkit.InstancetypeSpecOf(obj); it == nil {
			return nil, reconcile.TerminalError(fmt.Errorf("spec.instancetype: revision %s holds a %T", ref.ControllerRevisionRef.Name, obj))
		}
	}
	if m := vm.Spec.Preference; m != nil {
		obj, ref, err := r.revision(ctx, vm, m.Name, actions.PreferenceKind(m.Kind), m.RevisionName, vm.Status.PreferenceRef)
		if err != nil {
			return nil, fmt.Errorf("spec.preference: %w", err)
		}
		vm.Status.PreferenceRef = ref
		if pref = virtkit.PreferenceSpecOf(obj); pref == nil {
			return nil, reconcile.TerminalError(fmt.Errorf("spec.preference: revision %s holds a %T", ref.ControllerRevisionRef.Name, obj))
		}
	}
	out := vm.DeepCopy()
	// As KubeVirt's VM controller: volumes get their disks first, so the
	// preference's disk defaults apply to them.
	virtkit.SetDefaultVolumeDisks(&out.Spec.Template.Spec)
	if errs := virtkit.ApplyInstancetype(out.Spec.Template, it, pref, field.NewPath("spec", "template", "spec")); len(errs) > 0 {
		return nil, reconcile.TerminalError(fmt.Errorf("%w: %v", ErrInstancetypeConflict, errs.ToAggregate()))
	}
	return out, nil
}

// revision returns the object kept for a matcher: in revisionName if
// given, else in the revision the status already records for the same
// name and kind, else in a new revision made from the object as it is now.
func (r *VMReconciler) revision(ctx context.Context, vm *virtkit.VirtualMachine, name, kind, revisionName string, have *virtkit.InstancetypeStatusRef) (virtkit.Object, *virtkit.InstancetypeStatusRef, error) {
	ref := &virtkit.InstancetypeStatusRef{Name: name, Kind: kind}
	switch {
	case revisionName != "":
	case have != nil && have.Name == name && have.Kind == kind && have.ControllerRevisionRef != nil:
		revisionName = have.ControllerRevisionRef.Name
	}
	if revisionName != "" {
		var cr virtkit.ControllerRevision
		if err := r.o.Store.Get(ctx, store.Key{Namespace: vm.Namespace, Name: revisionName}, &cr); err != nil {
			return nil, nil, fmt.Errorf("revision %s: %w", revisionName, err)
		}
		obj, err := decodeRevision(&cr)
		if err != nil {
			return nil, nil, reconcile.TerminalError(err)
		}
		ref.ControllerRevisionRef = &virtkit.ControllerRevisionRef{Name: revisionName}
		return obj, ref, nil
	}
	obj, err := actions.GetInstancetypeObject(ctx, r.o.Store, vm.Namespace, name, kind)
	if err != nil {
		return nil, nil, err
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, nil, err
	}
	cr := &virtkit.ControllerRevision{
		TypeMeta: metav1.TypeMeta{APIVersion: virtkit.AppsSchemeGroupVersion.String(), Kind: virtkit.KindControllerRevision},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       vm.Namespace,
			Name:            fmt.Sprintf("%s-%s-%s-%d", vm.Name, obj.GetName(), obj.GetUID(), obj.GetGeneration()),
			OwnerReferences: []metav1.OwnerReference{newControllerRef(vm, virtkit.KindVirtualMachine)},
		},
		Data:     runtime.RawExtension{Raw: raw},
		Revision: obj.GetGeneration(),
	}
	if err := r.o.Store.Create(ctx, cr); err != nil && !errors.Is(err, store.ErrAlreadyExists) {
		return nil, nil, fmt.Errorf("create revision %s: %w", cr.Name, err)
	}
	ref.ControllerRevisionRef = &virtkit.ControllerRevisionRef{Name: cr.Name}
	return obj, ref, nil
}

// decodeRevision decodes a revision's snapshot strictly, bounded in size.
func decodeRevision(cr *virtkit.ControllerRevision) (virtkit.Object, error) {
	if len(cr.Data.Raw) > maxRevisionBytes {
		return nil, fmt.Errorf("revision %s: data of %d bytes exceeds %d", cr.Name, len(cr.Data.Raw), maxRevisionBytes)
	}
	objs, err := virtkit.DecodeBytes(cr.Data.Raw)
	if err != nil {
		return nil, fmt.Errorf("revision %s: %w", cr.Name, err)
	}
	if len(objs) != 1 {
		return nil, fmt.Errorf("revision %s: holds %d objects, want 1", cr.Name, len(objs))
	}
	return objs[0], nil
}

// deleteRevisions deletes the revisions a deleted VM's status names that
// the VM owns (there is no garbage collector to do it).
func (r *VMReconciler) deleteRevisions(ctx context.Context, vm *virtkit.VirtualMachine) error {
	for _, ref := range []*virtkit.InstancetypeStatusRef{vm.Status.InstancetypeRef, vm.Status.PreferenceRef} {
		if ref == nil || ref.ControllerRevisionRef == nil {
			continue
		}
		var cr virtkit.ControllerRevision
		err := r.o.Store.Get(ctx, store.Key{Namespace: vm.Namespace, Name: ref.ControllerRevisionRef.Name}, &cr)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if !ownedBy(&cr, vm) {
			continue // named by revisionName, not made for this VM
		}
		err = r.o.Store.Delete(ctx, &cr, store.DeleteOptions{})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("delete revision %s: %w", cr.Name, err)
		}
	}
	return nil
}

func ownedBy(obj metav1.Object, owner metav1.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == owner.GetUID() {
			return true
		}
	}
	return false
}
