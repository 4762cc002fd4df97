package controller

// The VM's status: computed from the VM and its VMI, written when it
// changed, and held back while the VMI is behind the VM's generation.

import (
	"context"
	"strconv"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
	"k8s.io/apimachinery/pkg/api/equality"
)

// vmOnlyConditions are owned by the VM; every other condition type is a
// copy of the VMI's.
var vmOnlyConditions = map[virtkit.ConditionType]bool{
	virtkit.VirtualMachineFailure:                true,
	virtkit.VirtualMachineRestartRequired:        true,
	virtkit.VirtualMachineManualRecoveryRequired: true,
}

// updateStatus computes the VM status and writes it if it changed.
func (r *VMReconciler) updateStatus(ctx context.Context, s *vmSync) error {
	vm := s.vm
	st := &vm.Status
	vmi := s.vmi
	if vmi != nil && s.deletedVMI && vmi.IsFinal() {
		vmi = nil // a final VMI being deleted is as good as gone
	}

	rs, rsErr := vm.RunStrategy()
	if rsErr == nil {
		if vmi != nil || s.createdVMI || rs != virtkit.RunStrategyRerunOnFailure {
			st.RunStrategy = rs
		}
	}
	if vmi != nil && vmi.IsRunning() || rsErr == nil && !shouldBackoff(rs) {
		st.StartFailure = nil
	}
	s.trimRequests()
	if len(st.StateChangeRequests) == 0 {
		st.StateChangeRequests = nil
	}

	st.Created = vmi != nil
	st.Ready = vmi != nil && vmi.IsReady() && !vmi.IsFinal() && vmi.DeletionTimestamp == nil
	st.DesiredGeneration = vm.Generation
	st.ObservedGeneration = vm.Generation
	if vmi != nil {
		if g, err := strconv.ParseInt(vmi.Annotations[virtkit.VMGenerationAnnotation], 10, 64); err == nil {
			st.ObservedGeneration = g
		}
	}

	// Conditions: VM-owned ones, then copies of the VMI's.
	var conds []virtkit.Condition
	for _, c := range st.Conditions {
		if vmOnlyConditions[c.Type] || (vmi != nil && virtkit.GetCondition(vmi.Status.Conditions, c.Type) != nil) {
			conds = append(conds, c)
		}
	}
	if vmi == nil {
		virtkit.SetCondition(&conds, virtkit.Condition{
			Type: virtkit.VirtualMachineReady, Status: virtkit.ConditionFalse,
			Reason: virtkit.VMINotExistsReason, Message: "VMI does not exist",
		}, s.now)
	} else {
		for _, c := range vmi.Status.Conditions {
			virtkit.SetCondition(&conds, virtkit.Condition{
				Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message,
				LastTransitionTime: c.LastTransitionTime,
			}, s.now)
		}
		if virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceReady) == nil {
			virtkit.SetCondition(&conds, virtkit.Condition{
				Type: virtkit.VirtualMachineReady, Status: virtkit.ConditionFalse,
				Reason: virtkit.PodNotExistsReason, Message: "VMI has not reported readiness yet",
			}, s.now)
		}
	}
	restart := s.restartRequired
	if !s.restartChecked && vmi != nil && !vmi.IsFinal() && r.templateChanged(vm, vmi, r.liveUpdateRollout()) {
		restart = msgNotLiveUpdatable
	}
	if vmi != nil && !vmi.IsFinal() && restart != "" {
		cond := virtkit.Condition{
			Type: virtkit.VirtualMachineRestartRequired, Status: virtkit.ConditionTrue,
			Reason: ReasonNotLiveUpdatable, Message: restart,
		}
		if s.restartReason != "" && restart == s.restartRequired {
			cond.Reason = s.restartReason
		}
		if restart == msgNotLiveUpdatable {
			if vc, ok := volumeUpdateCondition(vm, vmi); ok {
				cond = vc
			}
		}
		virtkit.SetCondition(&conds, cond, s.now)
	} else {
		virtkit.RemoveCondition(&conds, virtkit.VirtualMachineRestartRequired)
	}
	if s.syncErr != nil {
		virtkit.SetCondition(&conds, virtkit.Condition{
			Type: virtkit.VirtualMachineFailure, Status: virtkit.ConditionTrue,
			Reason: s.failReason, Message: s.syncErr.Error(),
		}, s.now)
	} else {
		virtkit.RemoveCondition(&conds, virtkit.VirtualMachineFailure)
	}
	if s.orig != nil {
		keepTransitionTimes(s.orig.Conditions, conds)
	}
	st.Conditions = conds

	dvErr, dvProvisioning, dvBinding := templateDataVolumeFacts(ctx, r.o.Store, vm)
	st.PrintableStatus = virtkit.PrintableStatus(virtkit.PrintableStatusInput{
		VM: vm, VMI: vmi, Now: s.now,
		DataVolumeError: dvErr, DataVolumeProvisioning: dvProvisioning, VolumeBindingPending: dvBinding,
		VMICreationExpected: s.createdVMI || (vmi == nil && s.deletedVMI && rsErr == nil && rs == virtkit.RunStrategyAlways),
		VMIDeletionExpected: s.deletedVMI,
	})

	key := store.Key{Namespace: vm.Namespace, Name: vm.Name}
	if s.metaDirty {
		if err := store.UpdateWithStatus(ctx, r.o.Store, vm); err != nil {
			return err
		}
		s.metaDirty = false
	} else {
		if equality.Semantic.DeepEqual(s.orig, st) {
			r.clearDeferred(key)
			return nil
		}
		if r.holdBack(key, s, vmi) {
			return nil
		}
		if err := r.o.Store.UpdateStatus(ctx, vm); err != nil {
			return err
		}
	}
	r.clearDeferred(key)
	s.orig = vm.Status.DeepCopy()
	return nil
}

// holdBack reports whether this status write waits: one VM status write
// per phase change. While the VMI is Scheduled (handed to its node agent,
// which writes Running next) a change of nothing but the conditions copied
// from it is held back, for at most handOffFlush (a requeue then writes
// it); the write for the next phase carries it.
func (r *VMReconciler) holdBack(key store.Key, s *vmSync, vmi *virtkit.VirtualMachineInstance) bool {
	if s.orig == nil || vmi == nil || vmi.Status.Phase != virtkit.Scheduled || vmi.DeletionTimestamp != nil {
		return false
	}
	st := &s.vm.Status
	for _, c := range st.Conditions {
		if vmOnlyConditions[c.Type] {
			if o := virtkit.GetCondition(s.orig.Conditions, c.Type); o == nil || o.Status != c.Status || o.Reason != c.Reason || o.Message != c.Message {
				return false
			}
		}
	}
	withOrigConds := *st
	withOrigConds.Conditions = s.orig.Conditions
	if !equality.Semantic.DeepEqual(s.orig, &withOrigConds) {
		return false // more than conditions changed: a phase change
	}
	now := s.now.Time
	r.mu.Lock()
	defer r.mu.Unlock()
	since, ok := r.deferred[key]
	if !ok {
		since = now
		r.deferred[key] = now
	}
	wait := since.Add(handOffFlush).Sub(now)
	if wait <= 0 {
		return false
	}
	if s.requeue <= 0 || wait < s.requeue {
		s.requeue = wait
	}
	return true
}

func (r *VMReconciler) clearDeferred(key store.Key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.deferred, key)
}

// keepTransitionTimes gives every condition in conds whose type and status
// are as they were in old the transition time it had, so a reconcile that
// re-derives a condition (the VM's Ready condition while its VMI has none
// yet, say) never rewrites the status with only a newer timestamp: such a
// write would trigger another reconcile, and that one another write.
func keepTransitionTimes(old, conds []virtkit.Condition) {
	for i := range conds {
		if o := virtkit.GetCondition(old, conds[i].Type); o != nil && o.Status == conds[i].Status {
			conds[i].LastTransitionTime = o.LastTransitionTime
		}
	}
}

// templateChanged reports whether the running VMI was rendered from an
// older template spec than the VM's current one, ignoring the fields the
// controllers set on the VMI themselves (firmware UUID, start strategy of a
// paused start, grace period of a forced stop), the hot-pluggable
// volumes (syncVolumeHotplug applies those to the running VMI) and, when
// live (KubeVirt's LiveUpdate rollout), the fields syncLiveUpdate brings to
// the running VMI (neutralizeLiveUpdatable). Any other difference needs a
// restart.
func (r *VMReconciler) templateChanged(vm *virtkit.VirtualMachine, vmi *virtkit.VirtualMachineInstance, live bool) bool {
	if vm.Spec.Template == nil {
		return false
	}
	if sameGeneration(vm, vmi) {
		return false // rendered from this very generation
	}
	if vm.Spec.Instancetype != nil || vm.Spec.Preference != nil {
		return true // expanded from revisions: any new generation may differ
	}
	rendered, err := r.render(vm)
	if err != nil {
		return false
	}
	want := &rendered.Spec
	got := vmi.Spec.DeepCopy()
	if live {
		neutralizeLiveUpdatable(&vm.Spec.Template.Spec.Domain, want, got)
	}
	neutralizeMigratedClaims(vm, want, got)
	for _, spec := range []*virtkit.VirtualMachineInstanceSpec{want, got} {
		withoutHotplugVolumes(spec)
		spec.StartStrategy = nil
		spec.TerminationGracePeriodSeconds = nil
		if fw := spec.Domain.Firmware; fw != nil {
			fw.UUID = ""
			if equality.Semantic.DeepEqual(*fw, virtkit.Firmware{}) {
				spec.Domain.Firmware = nil
			}
		}
	}
	return !equality.Semantic.DeepEqual(want, got)
}

// sameGeneration reports whether vmi was rendered from vm's current
// generation.
func sameGeneration(vm *virtkit.VirtualMachine, vmi *virtkit.VirtualMachineInstance) bool {
	g, err := strconv.ParseInt(vmi.Annotations[virtkit.VMGenerationAnnotation], 10, 64)
	return err == nil && g == vm.Generation
}
