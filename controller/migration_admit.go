package controller

import (
	"context"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// admit applies KubeVirt's create admission and canMigrateVMI; it returns
// a reason when the migration must fail.
func (r *MigrationReconciler) admit(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance) (string, error) {
	if vmi.IsFinal() {
		return virtkit.MigrationReasonVMIFinal, nil
	}
	if !vmi.IsRunning() || vmi.Status.NodeName == "" {
		return fmt.Sprintf("%s (phase %q)", virtkit.MigrationReasonNotRunning, vmi.Status.Phase), nil
	}
	if reason, err := r.notMigratable(ctx, mig, vmi); err != nil || reason != "" {
		return reason, err
	}
	r.slotMu.Lock()
	defer r.slotMu.Unlock()
	migs, err := r.migrationsOf(ctx, mig.Namespace, mig.Spec.VMIName)
	if err != nil {
		return "", err
	}
	for i := range migs {
		o := &migs[i]
		if o.UID == mig.UID || o.IsFinal() || o.Status.Phase == virtkit.MigrationPhaseUnset || o.DeletionTimestamp != nil {
			// A cancelled migration (deleted, finalizing) does not refuse
			// the next one: that one waits in Pending (takeSlot).
			continue
		}
		return fmt.Sprintf("%s (%s)", virtkit.MigrationReasonInFlight, o.Name), nil
	}
	if ms := vmi.Status.MigrationState; ms != nil && ms.MigrationUID != "" && ms.MigrationUID != mig.UID && !ms.Completed && !ms.Failed {
		for i := range migs {
			if migs[i].UID == ms.MigrationUID && !migs[i].IsFinal() && migs[i].DeletionTimestamp == nil {
				return fmt.Sprintf("%s (%s)", virtkit.MigrationReasonInFlight, migs[i].Name), nil
			}
		}
	}
	// Decided under the lock: write Pending now, so the next admission sees it.
	before := mig.Status.DeepCopy()
	mig.SetPhase(virtkit.MigrationPending, r.o.now())
	mig.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{
		MigrationUID: mig.UID, SourceNode: vmi.Status.NodeName,
	}
	if err := r.o.Store.UpdateStatus(ctx, mig); err != nil {
		mig.Status = *before
		return "", err
	}
	return "", nil
}

// notMigratable is the reason the VMI's LiveMigratable condition gives,
// "" when it is True. A volume migration is not held back by the
// node-local disks it copies (the node's condition may predate the VMI's
// status.migratedVolumes).
func (r *MigrationReconciler) notMigratable(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance) (string, error) {
	c := virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceIsMigratable)
	switch {
	case c == nil:
		return "Cannot migrate VMI, Reason: LiveMigratable condition not reported yet", nil
	case c.Status == virtkit.ConditionTrue:
		return "", nil
	case c.Reason == virtkit.DisksNotLiveMigratableReason && isVolumeMigration(mig):
		if ok, err := onlyMigratedDisksLocal(ctx, r.o.Store, vmi); err != nil || ok {
			return "", err
		}
	}
	return fmt.Sprintf("Cannot migrate VMI, Reason: %s, Message: %s", c.Reason, c.Message), nil
}

// requeueDelay is KubeVirt's wait for a slot by priority.
func requeueDelay(mig *virtkit.VirtualMachineInstanceMigration) time.Duration {
	if mig.Spec.Priority != nil {
		switch *mig.Spec.Priority {
		case virtkit.PrioritySystemCritical:
			return time.Second
		case virtkit.PriorityUserTriggered:
			return 3 * time.Second
		}
	}
	return 5 * time.Second
}

// takeSlot moves a Pending migration on when the parallel limits allow
// (KubeVirt's handleTargetPodCreation).
func (r *MigrationReconciler) takeSlot(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance) (virtkit.VirtualMachineInstanceMigrationPhase, reconcile.Result, error) {
	wait := reconcile.Result{RequeueAfter: requeueDelay(mig)}
	if len(vmi.ActiveNodes()) > 1 {
		// A previous target is still being cleaned up.
		return "", reconcile.Result{RequeueAfter: time.Second}, nil
	}
	if prev, err := r.previousInFlight(ctx, mig, vmi); err != nil || prev != "" {
		if prev != "" {
			r.o.Logger.Debug("migration waits for the previous one to end", "migration", mig.Name, "previous", prev)
		}
		return "", reconcile.Result{RequeueAfter: time.Second}, err
	}
	if mig.Status.MigrationState == nil || mig.Status.MigrationState.SourceNode == "" {
		mig.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{MigrationUID: mig.UID, SourceNode: vmi.Status.NodeName}
	}
	if _, evac := mig.Annotations[virtkit.EvacuationMigrationAnnotation]; evac {
		wait, err := r.evacuationBackoff(ctx, mig)
		if err != nil {
			return "", reconcile.Result{}, err
		}
		if wait > 0 {
			return "", reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	r.slotMu.Lock()
	defer r.slotMu.Unlock()
	// From the store, not the cache: the slot just taken by the previous
	// decision must count (the parallel limits are never exceeded).
	all := &virtkit.VirtualMachineInstanceMigrationList{}
	if err := r.o.Store.List(ctx, all, store.ListOptions{}); err != nil {
		return "", reconcile.Result{}, err
	}
	running, outbound := 0, 0
	src := sourceOf(mig)
	for i := range all.Items {
		o := &all.Items[i]
		if o.UID == mig.UID || !o.IsRunning() {
			continue
		}
		running++
		if sourceOf(o) == src {
			outbound++
		}
	}
	if running >= int(*r.cfg.ParallelMigrationsPerCluster) {
		r.o.Logger.Debug("migration waits: cluster limit", "migration", mig.Name, "running", running)
		return "", wait, nil
	}
	if outbound >= int(*r.cfg.ParallelOutboundMigrationsPerNode) {
		r.o.Logger.Debug("migration waits: node limit", "migration", mig.Name, "node", src, "outbound", outbound)
		return "", wait, nil
	}
	// Decided under the lock: the slot is taken once the phase is stored.
	before := mig.Status.DeepCopy()
	mig.SetPhase(virtkit.MigrationScheduling, r.o.now())
	if err := r.o.Store.UpdateStatus(ctx, mig); err != nil {
		mig.Status = *before
		return "", reconcile.Result{}, err
	}
	return "", reconcile.Result{}, nil
}

// evacuationBackoff is KubeVirt's wait before another evacuation attempt
// of a VMI: 20 s after the last failed evacuation migration, doubling per
// consecutive failure. It returns how long is left.
func (r *MigrationReconciler) evacuationBackoff(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration) (time.Duration, error) {
	migs, err := r.migrationsOf(ctx, mig.Namespace, mig.Spec.VMIName)
	if err != nil {
		return 0, err
	}
	var evac []virtkit.VirtualMachineInstanceMigration
	for _, m := range migs {
		if _, ok := m.Annotations[virtkit.EvacuationMigrationAnnotation]; ok && m.UID != mig.UID && m.IsFinal() {
			evac = append(evac, m)
		}
	}
	sort.Slice(evac, func(i, j int) bool {
		a, b := evac[i].CreationTimestamp, evac[j].CreationTimestamp
		return b.Before(&a) // newest first
	})
	failures := 0
	var lastFailed *metav1.Time
	for i := range evac {
		if evac[i].Status.Phase != virtkit.MigrationFailed {
			break
		}
		if failures == 0 {
			lastFailed = phaseSince(&evac[i], virtkit.MigrationFailed)
		}
		failures++
	}
	if failures == 0 || lastFailed == nil {
		return 0, nil
	}
	backoff := 20 * time.Second << min(failures-1, 10)
	left := lastFailed.Add(backoff).Sub(r.o.Clock.Now())
	return max(left, 0), nil
}
