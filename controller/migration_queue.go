package controller

import (
	"context"

	"github.com/virtkit/virtkit"
)

// previousInFlight names another migration of the VMI that has not ended
// (a cancelled one still finalizing, say), or "" when there is none: a
// Pending migration waits for it rather than failing (KubeVirt's
// canMigrateVMI). A VMI migrationState of another migration that no longer
// exists, or has ended, may be taken over.
func (r *MigrationReconciler) previousInFlight(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance) (string, error) {
	migs, err := r.migrationsOf(ctx, mig.Namespace, mig.Spec.VMIName)
	if err != nil {
		return "", err
	}
	for i := range migs {
		o := &migs[i]
		if o.UID == mig.UID || o.IsFinal() || o.Status.Phase == virtkit.MigrationPhaseUnset && o.DeletionTimestamp == nil {
			continue
		}
		return o.Name, nil
	}
	return "", nil
}
