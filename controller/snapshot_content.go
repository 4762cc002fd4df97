package controller

import (
	"context"

	"github.com/virtkit/virtkit"
)

// SnapshotContentReconciler releases deleted
// VirtualMachineSnapshotContents: it deletes their volume snapshots first
// (the storage a content holds), then the content's finalizer.
type SnapshotContentReconciler struct {
	o  ReconcilerOptions
	so SnapshotOptions
}

var _ Reconciler = (*SnapshotContentReconciler)(nil)

// NewSnapshotContentReconciler returns the VirtualMachineSnapshotContent
// reconciler.
func NewSnapshotContentReconciler(o ReconcilerOptions, so SnapshotOptions) (*SnapshotContentReconciler, error) {
	o, err := o.withDefaults("snapshotcontent")
	if err != nil {
		return nil, err
	}
	return &SnapshotContentReconciler{o: o, so: so}, nil
}

// Watches returns every VirtualMachineSnapshotContent.
func (r *SnapshotContentReconciler) Watches() []Watch {
	return []Watch{{NewList: func() virtkit.ObjectList { return &virtkit.VirtualMachineSnapshotContentList{} }, Map: ObjectKey}}
}

// Reconcile implements Reconciler.
func (r *SnapshotContentReconciler) Reconcile(ctx context.Context, req Request) (Result, error) {
	c := &virtkit.VirtualMachineSnapshotContent{}
	found, err := getOptional(ctx, r.o.Store, keyOf(req), c)
	if err != nil || !found || c.DeletionTimestamp == nil || !hasFinalizer(c, SnapshotContentFinalizer) {
		return Result{}, err
	}
	if r.so.Volumes != nil {
		for _, b := range c.Spec.VolumeBackups {
			if b.VolumeSnapshotName == nil {
				continue
			}
			if err := r.so.Volumes.Delete(ctx, *b.VolumeSnapshotName, backupVolume(c.Namespace, &b)); err != nil {
				return Result{}, err
			}
		}
	}
	removeFinalizers(c, SnapshotContentFinalizer)
	return Result{}, r.o.Store.Update(ctx, c)
}
