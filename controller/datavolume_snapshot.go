package controller

import (
	"context"
	"fmt"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// snapshotSourceNode finds the volume snapshot a DataVolume's
// spec.source.snapshot names and returns the node its data lives on (""
// for a shared storage class: any node). While no VirtualMachineSnapshotContent
// records the snapshot, the DataVolume waits as CDI's does for a clone
// without a source: Bound Unknown and Ready False with reason
// CloneWithoutSource, and a warning event; a snapshot not yet ready to use
// keeps it Pending.
func (r *DataVolumeReconciler) snapshotSourceNode(ctx context.Context, dv *virtkit.DataVolume) (node string, wait bool, err error) {
	src := dv.Spec.Source.Snapshot
	ns := src.Namespace
	if ns == "" {
		ns = dv.Namespace
	}
	now := r.o.now()
	st := &dv.Status
	if ns != dv.Namespace {
		msg := fmt.Sprintf("spec.source.snapshot.namespace: a volume snapshot in another namespace (%s) is not supported", ns)
		st.Phase = virtkit.DataVolumeFailed
		st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeReady, Status: virtkit.ConditionFalse,
			Reason: virtkit.DataVolumeReasonError, Message: msg}, now)
		r.o.event(ctx, dv, virtkit.EventTypeWarning, virtkit.DataVolumeReasonError, "Clone", "%s", msg)
		return "", true, r.o.Store.UpdateStatus(ctx, dv)
	}
	var contents virtkit.VirtualMachineSnapshotContentList
	if err := r.o.Store.List(ctx, &contents, store.ListOptions{Namespace: ns}); err != nil {
		return "", false, err
	}
	ref, ok := virtkit.FindVolumeSnapshot(contents.Items, src.Name)
	if !ok {
		msg := virtkit.MessageCloneWithoutSource("snapshot", src.Name)
		bound := st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeBound, Status: virtkit.ConditionUnknown,
			Reason: virtkit.DataVolumeReasonCloneWithoutSource, Message: msg}, now)
		ready := st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeReady, Status: virtkit.ConditionFalse,
			Reason: virtkit.DataVolumeReasonCloneWithoutSource}, now)
		if bound || ready {
			r.o.event(ctx, dv, virtkit.EventTypeWarning, virtkit.DataVolumeReasonCloneWithoutSource, "Clone", "%s", msg)
			return "", true, r.o.Store.UpdateStatus(ctx, dv)
		}
		return "", true, nil
	}
	if !ref.Ready {
		msg := fmt.Sprintf("volume snapshot %s/%s is not ready to use", ns, src.Name)
		if st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeBound, Status: virtkit.ConditionFalse,
			Reason: virtkit.DataVolumeReasonPending, Message: msg}, now) {
			return "", true, r.o.Store.UpdateStatus(ctx, dv)
		}
		return "", true, nil
	}
	st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeReady, Status: virtkit.ConditionFalse}, now)
	return ref.Backup.PersistentVolumeClaim.Annotations[virtkit.DataVolumeVolumeNodeAnnotation], false, nil
}
