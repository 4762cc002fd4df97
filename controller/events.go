package controller

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/events"
)

func (o ReconcilerOptions) event(ctx context.Context, regarding virtkit.Object, eventType, reason, action, format string, args ...any) {
	events.RecordEvent(ctx, o.Events, regarding, eventType, reason, action, format, args...)
}

// recordVMIDelete records the deletion of a VMI by its VM or ReplicaSet.
func (r *VMReconciler) recordVMIDelete(ctx context.Context, vmi *virtkit.VirtualMachineInstance, err error) {
	recordVMIDelete(ctx, r.o, vmi, err)
}

func (r *ReplicaSetReconciler) recordVMIDelete(ctx context.Context, vmi *virtkit.VirtualMachineInstance, err error) {
	recordVMIDelete(ctx, r.o, vmi, err)
}

func recordVMIDelete(ctx context.Context, o ReconcilerOptions, vmi *virtkit.VirtualMachineInstance, err error) {
	owner := controllerOf(vmi)
	if owner == nil || o.Events == nil {
		return
	}
	// The event is about the owner; its owner reference names it without
	// another read.
	meta := metav1.ObjectMeta{Namespace: vmi.Namespace, Name: owner.Name, UID: owner.UID}
	var ref virtkit.Object
	switch owner.Kind {
	case virtkit.KindVirtualMachine:
		ref = &virtkit.VirtualMachine{ObjectMeta: meta}
	case virtkit.KindVirtualMachineInstanceReplicaSet:
		ref = &virtkit.VirtualMachineInstanceReplicaSet{ObjectMeta: meta}
	default:
		return
	}
	if err != nil {
		o.event(ctx, ref, virtkit.EventTypeWarning, virtkit.EventReasonFailedDelete, "Delete", "Error deleting virtual machine instance %s: %v", vmi.Name, err)
		return
	}
	o.event(ctx, ref, virtkit.EventTypeNormal, virtkit.EventReasonSuccessfulDelete, "Delete", "Deleted virtual machine instance %s", vmi.Name)
}
