package controller

import (
	"context"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
)

// waitForDataVolumes keeps a VMI Pending until every DataVolume it uses
// has succeeded (condition DataVolumesReady, as KubeVirt sets it) and
// returns the node a node-local DataVolume pins it to.
func (r *VMIReconciler) waitForDataVolumes(ctx context.Context, vmi *virtkit.VirtualMachineInstance) (pin string, wait bool, err error) {
	g, err := dataVolumesOf(ctx, r.o.Store, vmi)
	if err != nil {
		return "", false, reconcile.TerminalError(err)
	}
	if !g.has {
		return "", false, nil
	}
	now := r.o.now()
	if g.ready {
		if virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstanceDataVolumesReady,
			Status: virtkit.ConditionTrue, Reason: virtkit.AllDVsReadyReason}, now) {
			// Written with the scheduling decision.
			r.o.Logger.Debug("datavolumes ready", "vmi", vmi.Namespace+"/"+vmi.Name, "node", g.node)
		}
		return g.node, false, nil
	}
	changed := false
	if vmi.Status.Phase == virtkit.VmPhaseUnset {
		vmi.SetPhase(virtkit.Pending, now)
		changed = true
	}
	if virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstanceDataVolumesReady,
		Status: virtkit.ConditionFalse, Reason: virtkit.NotAllDVsReadyReason, Message: g.message}, now) {
		changed = true
	}
	if changed {
		if err := r.o.Store.UpdateStatus(ctx, vmi); err != nil {
			return "", true, err
		}
	}
	return "", true, nil
}
