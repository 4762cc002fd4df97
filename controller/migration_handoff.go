package controller

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// handOff writes the VMI's migrationState and target label: from here on
// the node agents carry the migration out.
func (r *MigrationReconciler) handOff(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance) error {
	planned := mig.Status.MigrationState
	if planned == nil || planned.TargetNode == "" {
		return fmt.Errorf("migration %s: Scheduled without a target node", store.KeyOf(mig))
	}
	own := ownState(mig, vmi)
	if own != nil && own.TargetNode != planned.TargetNode {
		if own.TargetNode != "" && vmi.Labels[virtkit.MigrationTargetNodeNameLabel] == own.TargetNode {
			// An earlier hand-off reached the agents, but the
			// migration's own status write was lost and its target was
			// placed again: keep the target the agents were told.
			planned.SourceNode, planned.TargetNode = own.SourceNode, own.TargetNode
		} else {
			// An earlier hand-off wrote the state but never labelled the
			// VMI for its target, so no agent acts on it: hand off the
			// target placed now instead.
			own = nil
		}
	}
	if own == nil {
		policy, err := r.policyFor(ctx, vmi)
		if err != nil {
			return err
		}
		ms := &virtkit.VirtualMachineInstanceMigrationState{
			MigrationUID: mig.UID,
			SourceNode:   planned.SourceNode,
			TargetNode:   planned.TargetNode,
		}
		var p *virtkit.MigrationPolicy
		if policy != nil {
			p = policy
			name := policy.Name
			ms.MigrationPolicyName = &name
		}
		ms.MigrationConfiguration = ResolveMigrationConfiguration(r.m.Config, p)
		vmi.Status.MigrationState = ms
		if err := r.o.Store.UpdateStatus(ctx, vmi); err != nil {
			return err
		}
	}
	if vmi.Labels[virtkit.MigrationTargetNodeNameLabel] != planned.TargetNode {
		if vmi.Labels == nil {
			vmi.Labels = map[string]string{}
		}
		vmi.Labels[virtkit.MigrationTargetNodeNameLabel] = planned.TargetNode
		copyMigrationTraceParent(mig, vmi)
		status := vmi.Status.DeepCopy()
		if err := r.o.Store.Update(ctx, vmi); err != nil {
			return err
		}
		vmi.Status = *status
	}
	r.o.Logger.Info("migration handed off", "migration", store.KeyOf(mig).String(), "vmi", vmi.Name,
		"source", planned.SourceNode, "target", planned.TargetNode)
	return nil
}

// inFlight handles a handed-off migration: abort requests, a target
// node that went away before the migration started, and a target that does
// not take the VMI over once the source is done.
func (r *MigrationReconciler) inFlight(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState, now metav1.Time) error {
	if ms == nil {
		return nil
	}
	if mig.DeletionTimestamp != nil && !ms.AbortRequested && !ms.Completed && !ms.Failed {
		virtkit.SetCondition(&mig.Status.Conditions, virtkit.Condition{
			Type: virtkit.VirtualMachineInstanceMigrationAbortRequested, Status: virtkit.ConditionTrue,
		}, now)
		ms.AbortRequested = true
		if err := r.o.Store.UpdateStatus(ctx, vmi); err != nil {
			return err
		}
		r.o.Logger.Info("migration abort requested", "migration", store.KeyOf(mig).String(), "vmi", vmi.Name)
	}
	if ms.EndTimestamp != nil && !ms.Completed && !ms.Failed {
		// The source is done; the target has not taken the VMI over. Wait
		// no longer than the migration's progress timeout for it.
		limit := time.Duration(virtkit.DefaultProgressTimeout) * time.Second
		if c := ms.MigrationConfiguration; c != nil && c.ProgressTimeout != nil && *c.ProgressTimeout > 0 {
			limit = time.Duration(*c.ProgressTimeout) * time.Second
		}
		if now.Sub(ms.EndTimestamp.Time) > limit {
			reason := fmt.Sprintf("%s within %d seconds", virtkit.MigrationReasonNotTakenOver, int(limit.Seconds()))
			if err := r.endVMIState(ctx, vmi, mig, reason, now); err != nil {
				return err
			}
			return r.fail(ctx, mig, vmi, reason)
		}
	}
	if ms.StartTimestamp == nil && !ms.Completed && !ms.Failed {
		n := &virtkit.Node{}
		found, err := getOptional(ctx, r.o.Store, store.Key{Name: ms.TargetNode}, n)
		if err != nil {
			return err
		}
		if !found || virtkit.HasCondition(n.Status.Conditions, virtkit.NodeReady, virtkit.ConditionFalse, "") {
			if err := r.endVMIState(ctx, vmi, mig, virtkit.MigrationReasonTargetDown, now); err != nil {
				return err
			}
			return r.fail(ctx, mig, vmi, virtkit.MigrationReasonTargetDown)
		}
	}
	return nil
}
