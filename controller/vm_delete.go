package controller

import (
	"context"
	"errors"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// syncDeleted stops the VMI of a deleted VM and then lets the VM go. A VM
// deleted with the orphan propagation policy (the "orphan" finalizer) leaves
// its VMI running: the garbage collector removes the owner reference, and
// this reconciler its finalizer from the VMI, as does a VMI the collector
// already orphaned.
func (r *VMReconciler) syncDeleted(ctx context.Context, s *vmSync) (reconcile.Result, error) {
	if s.vmi != nil {
		// Read from the store, after the VM: the collector drops the owner
		// reference before the orphan finalizer, so a VM read without that
		// finalizer and a VMI still owned means the VMI is not orphaned
		// (a cached VMI may predate the collector's write).
		fresh := &virtkit.VirtualMachineInstance{}
		found, err := getOptional(ctx, r.o.Store, store.KeyOf(s.vmi), fresh)
		if err != nil {
			return reconcile.Result{}, err
		}
		s.vmi = nil
		if found {
			s.vmi = fresh
		}
	}
	if s.vmi != nil {
		ref := controllerOf(s.vmi)
		if ref == nil || ref.UID != s.vm.UID || hasFinalizer(s.vm, store.FinalizerOrphanDependents) {
			if err := r.releaseOrphan(ctx, s.vmi); err != nil {
				return reconcile.Result{}, err
			}
			s.vmi = nil
		}
	}
	if s.vmi != nil {
		vmi, err := r.releaseAndDelete(ctx, s.vmi)
		if err != nil {
			return reconcile.Result{}, err
		}
		s.vmi = vmi
		s.deletedVMI = true
		return reconcile.Result{}, r.updateStatus(ctx, s)
	}
	if err := r.deleteRevisions(ctx, s.vm); err != nil {
		return reconcile.Result{}, err
	}
	if removeFinalizers(s.vm, virtkit.VirtualMachineControllerFinalizer) {
		err := r.o.Store.Update(ctx, s.vm)
		if errors.Is(err, store.ErrNotFound) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}

func controlledByVMNamed(vmi *virtkit.VirtualMachineInstance, name string) bool {
	ref := controllerOf(vmi)
	return ref != nil && ref.Kind == virtkit.KindVirtualMachine && ref.Name == name
}

// releaseOrphan drops the VM controller's finalizer from a VMI the VM
// leaves behind.
func (r *VMReconciler) releaseOrphan(ctx context.Context, vmi *virtkit.VirtualMachineInstance) error {
	if !hasFinalizer(vmi, virtkit.VirtualMachineControllerFinalizer) {
		return nil
	}
	vmi = vmi.DeepCopy()
	removeFinalizers(vmi, virtkit.VirtualMachineControllerFinalizer)
	return ignoreNotFound(r.o.Store.Update(ctx, vmi))
}
