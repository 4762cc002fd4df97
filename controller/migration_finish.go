package controller

import (
	"context"
	"errors"
	"reflect"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// endVMIState marks the VMI's migrationState failed when the controller
// ends a migration the agents have not ended.
func (r *MigrationReconciler) endVMIState(ctx context.Context, vmi *virtkit.VirtualMachineInstance, mig *virtkit.VirtualMachineInstanceMigration, reason string, now metav1.Time) error {
	ms := ownState(mig, vmi)
	if ms == nil || ms.Completed || ms.Failed {
		return nil
	}
	ms.Failed, ms.Completed = true, true
	ms.FailureReason = reason
	if ms.EndTimestamp == nil {
		ms.EndTimestamp = &now
	}
	return r.o.Store.UpdateStatus(ctx, vmi)
}

// fail moves the migration to Failed with a reason and stores it. A VMI
// migrationState of this migration that the agents have not ended is ended
// first, so no agent goes on with it.
func (r *MigrationReconciler) fail(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance, reason string) error {
	now := r.o.now()
	if vmi != nil {
		if err := r.endVMIState(ctx, vmi, mig, reason, now); err != nil {
			return err
		}
	}
	if ms := ownState(mig, vmi); ms != nil {
		mig.Status.MigrationState = ms.DeepCopy()
	}
	if mig.Status.MigrationState == nil {
		mig.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{MigrationUID: mig.UID}
	}
	ms := mig.Status.MigrationState
	ms.Failed, ms.Completed = true, true
	if ms.FailureReason == "" {
		ms.FailureReason = reason
	}
	if ms.EndTimestamp == nil {
		ms.EndTimestamp = &now
	}
	prev := mig.Status.Phase
	mig.SetPhase(virtkit.MigrationFailed, now)
	r.o.Logger.Info("migration failed", "migration", store.KeyOf(mig).String(), "vmi", mig.Spec.VMIName, "reason", reason)
	if err := r.o.Store.UpdateStatus(ctx, mig); err != nil {
		return err
	}
	r.recordMigrationPhase(ctx, mig, prev)
	return nil
}

// finalize copies the final state, cleans the VMI of a failed hand-off,
// removes the finalizer and prunes old migrations of the VMI.
func (r *MigrationReconciler) finalize(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance) error {
	if ms := ownState(mig, vmi); ms != nil && (ms.Completed || ms.Failed) && !reflect.DeepEqual(ms, mig.Status.MigrationState) {
		keepReason := ""
		if mig.Status.MigrationState != nil {
			keepReason = mig.Status.MigrationState.FailureReason
		}
		mig.Status.MigrationState = ms.DeepCopy()
		if mig.Status.MigrationState.FailureReason == "" {
			mig.Status.MigrationState.FailureReason = keepReason
		}
		if err := r.o.Store.UpdateStatus(ctx, mig); err != nil {
			return err
		}
	}
	if mig.Status.Phase == virtkit.MigrationFailed && vmi != nil {
		if err := r.releaseTarget(ctx, mig, vmi); err != nil {
			return err
		}
	}
	if removeFinalizers(mig, virtkit.VirtualMachineInstanceMigrationFinalizer) {
		if err := ignoreNotFound(r.o.Store.Update(ctx, mig)); err != nil {
			return err
		}
	}
	return r.prune(ctx, mig.Namespace, mig.Spec.VMIName)
}

// releaseTarget undoes the hand-off of a failed migration on the VMI: the
// target label and the target's activePods entry go (the target agent
// also cleans up; this is the backstop for a target that went away).
func (r *MigrationReconciler) releaseTarget(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance) error {
	ms := ownState(mig, vmi)
	if ms == nil || ms.TargetNode == "" || ms.TargetNode == vmi.Status.NodeName {
		return nil
	}
	if vmi.Labels[virtkit.MigrationTargetNodeNameLabel] == ms.TargetNode {
		delete(vmi.Labels, virtkit.MigrationTargetNodeNameLabel)
		status := vmi.Status.DeepCopy()
		if err := r.o.Store.Update(ctx, vmi); err != nil {
			return ignoreNotFound(err)
		}
		vmi.Status = *status
	}
	changed := false
	for uid, n := range vmi.Status.ActivePods {
		if n == ms.TargetNode {
			vmi.RemoveActivePod(uid)
			changed = true
		}
	}
	if changed {
		return ignoreNotFound(r.o.Store.UpdateStatus(ctx, vmi))
	}
	return nil
}

// prune deletes all but the newest KeepFinished finished migrations of a
// VMI.
func (r *MigrationReconciler) prune(ctx context.Context, namespace, vmiName string) error {
	if vmiName == "" {
		return nil
	}
	migs, err := r.migrationsOf(ctx, namespace, vmiName)
	if err != nil {
		return err
	}
	var finished []virtkit.VirtualMachineInstanceMigration
	for _, m := range migs {
		if m.IsFinal() && m.DeletionTimestamp == nil {
			finished = append(finished, m)
		}
	}
	if len(finished) <= r.m.KeepFinished {
		return nil
	}
	sort.Slice(finished, func(i, j int) bool {
		a, b := finished[i].CreationTimestamp, finished[j].CreationTimestamp
		if !a.Equal(&b) {
			return b.Before(&a) // newest first
		}
		return finished[i].Name > finished[j].Name
	})
	var errs []error
	for i := r.m.KeepFinished; i < len(finished); i++ {
		m := finished[i]
		if err := r.o.Store.Delete(ctx, &m, store.DeleteOptions{}); err != nil && !errors.Is(err, store.ErrNotFound) {
			errs = append(errs, err)
			continue
		}
		r.o.Logger.Debug("pruned finished migration", "migration", store.KeyOf(&m).String())
	}
	return errors.Join(errs...)
}
