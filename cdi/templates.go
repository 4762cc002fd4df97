package cdi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// ErrNotOwned: a DataVolume named by a template exists but another object
// controls it.
var ErrNotOwned = errors.New("datavolume exists and is not owned by the virtual machine")

// TemplateOptions configure a TemplateReconciler. The zero value works
// once Store is set.
type TemplateOptions struct {
	// Store holds VirtualMachines and DataVolumes.
	Store store.Store
	// Logger; nil discards.
	Logger *slog.Logger
}

// TemplateReconciler reconciles VirtualMachines (requests are VM keys):
// every dataVolumeTemplate gets a DataVolume in the VM's namespace with a
// controller owner reference to the VM; when the VM is deleted, the
// DataVolumes it controls are deleted too (garbage collection).
type TemplateReconciler struct {
	opts TemplateOptions
	log  *slog.Logger
}

var _ reconcile.Reconciler = (*TemplateReconciler)(nil)

// NewTemplateReconciler returns a reconciler over opts.Store.
func NewTemplateReconciler(opts TemplateOptions) *TemplateReconciler {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &TemplateReconciler{opts: opts, log: log}
}

// Reconcile implements reconcile.Reconciler.
func (r *TemplateReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if r.opts.Store == nil {
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("cdi: TemplateOptions.Store is nil: %w", store.ErrInvalid))
	}
	vm := &virtkit.VirtualMachine{}
	err := r.opts.Store.Get(ctx, store.Key{Namespace: req.Namespace, Name: req.Name}, vm)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return reconcile.Result{}, r.collect(ctx, req.Namespace, req.Name, "")
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("get vm %s: %w", req, err)
	}
	if vm.DeletionTimestamp != nil {
		if slices.Contains(vm.Finalizers, store.FinalizerOrphanDependents) {
			return reconcile.Result{}, nil // the garbage collector orphans them
		}
		return reconcile.Result{}, r.collect(ctx, vm.Namespace, vm.Name, vm.UID)
	}
	var errs []error
	for i := range vm.Spec.DataVolumeTemplates {
		t := &vm.Spec.DataVolumeTemplates[i]
		existing := &virtkit.DataVolume{}
		err := r.opts.Store.Get(ctx, store.Key{Namespace: vm.Namespace, Name: t.ObjectMeta.Name}, existing)
		switch {
		case err == nil:
			if !controlledByVM(existing, vm.Name, vm.UID) {
				errs = append(errs, fmt.Errorf("dataVolumeTemplates[%d] %s/%s: %w", i, vm.Namespace, t.ObjectMeta.Name, ErrNotOwned))
			}
		case errors.Is(err, store.ErrNotFound):
			dv := virtkit.DataVolumeForTemplate(vm, t)
			virtkit.SetDataVolumeDefaults(dv)
			if verrs := virtkit.Validate(dv); len(verrs) > 0 {
				errs = append(errs, fmt.Errorf("dataVolumeTemplates[%d]: %w: %v", i, store.ErrInvalid, verrs.ToAggregate()))
				continue
			}
			if err := r.opts.Store.Create(ctx, dv); err != nil && !errors.Is(err, store.ErrAlreadyExists) {
				errs = append(errs, fmt.Errorf("create datavolume %s/%s: %w", dv.Namespace, dv.Name, err))
				continue
			}
			r.log.InfoContext(ctx, "created datavolume for template", "vm", req.String(), "datavolume", dv.Name)
		default:
			errs = append(errs, fmt.Errorf("get datavolume %s/%s: %w", vm.Namespace, t.ObjectMeta.Name, err))
		}
	}
	return reconcile.Result{}, errors.Join(errs...)
}

// collect deletes the DataVolumes of namespace controlled by the VM named
// name (of the given UID, when known).
func (r *TemplateReconciler) collect(ctx context.Context, namespace, name string, uid types.UID) error {
	var list virtkit.DataVolumeList
	if err := r.opts.Store.List(ctx, &list, store.ListOptions{Namespace: namespace}); err != nil {
		return fmt.Errorf("list datavolumes in %s: %w", namespace, err)
	}
	var errs []error
	for i := range list.Items {
		dv := &list.Items[i]
		if !controlledByVM(dv, name, uid) {
			continue
		}
		if err := r.opts.Store.Delete(ctx, dv, store.DeleteOptions{}); err != nil && !errors.Is(err, store.ErrNotFound) {
			errs = append(errs, fmt.Errorf("delete datavolume %s/%s: %w", dv.Namespace, dv.Name, err))
			continue
		}
		r.log.InfoContext(ctx, "deleted datavolume of deleted vm", "vm", namespace+"/"+name, "datavolume", dv.Name)
	}
	return errors.Join(errs...)
}

// controlledByVM reports whether dv's controller owner reference is the VM
// named name (and of the given UID, when uid is not empty).
func controlledByVM(dv *virtkit.DataVolume, name string, uid types.UID) bool {
	ref := metav1.GetControllerOf(dv)
	return ref != nil && ref.Kind == virtkit.KindVirtualMachine && ref.Name == name && (uid == "" || ref.UID == uid)
}
