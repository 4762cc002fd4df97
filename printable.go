package virtkit

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PrintableStatusInput is everything the VM printable status depends on.
// Facts the objects cannot carry (controller expectations, DataVolume and
// PVC state) are plain booleans supplied by the caller.
//
// +kubebuilder:object:generate=false
// +k8s:openapi-gen=false
type PrintableStatusInput struct {
	VM *VirtualMachine
	// VMI is the VM's instance, nil if none exists.
	VMI *VirtualMachineInstance
	Now metav1.Time
	// VMICreationExpected: the controller created a VMI it has not observed
	// yet.
	VMICreationExpected bool
	// VMIDeletionExpected: the controller deleted the VMI and has not
	// observed the deletion yet.
	VMIDeletionExpected bool
	// DataVolumeError: a template DataVolume reports an error.
	DataVolumeError bool
	// DataVolumeProvisioning: a template DataVolume is still provisioning.
	DataVolumeProvisioning bool
	// VolumeBindingPending: some PVC the VM uses is unbound.
	VolumeBindingPending bool
}

// PrintableStatus computes status.printableStatus with KubeVirt's ordered
// rules: the first predicate that holds wins; none gives Unknown.
func PrintableStatus(in PrintableStatusInput) VirtualMachinePrintableStatus {
	for _, rule := range printableStatusRules() {
		if rule.holds(&in) {
			return rule.status
		}
	}
	return VirtualMachineStatusUnknown
}

// +kubebuilder:object:generate=false
// +k8s:openapi-gen=false
type printableStatusRule struct {
	status VirtualMachinePrintableStatus
	holds  func(*PrintableStatusInput) bool
}

func printableStatusRules() []printableStatusRule {
	return []printableStatusRule{
		{VirtualMachineStatusTerminating, func(in *PrintableStatusInput) bool {
			return in.VM.DeletionTimestamp != nil
		}},
		{VirtualMachineStatusStopping, func(in *PrintableStatusInput) bool {
			return in.VMI != nil && !in.VMI.IsFinal() && (in.VMI.DeletionTimestamp != nil || in.VMIDeletionExpected)
		}},
		{VirtualMachineStatusMigrating, func(in *PrintableStatusInput) bool {
			return in.VMI != nil && in.VMI.IsMigrating(in.Now)
		}},
		{VirtualMachineStatusPaused, func(in *PrintableStatusInput) bool {
			return in.VMI != nil && in.VMI.IsRunning() && in.VMI.IsPaused()
		}},
		{VirtualMachineStatusRunning, func(in *PrintableStatusInput) bool {
			return in.VMI != nil && in.VMI.IsRunning()
		}},
		{VirtualMachineStatusPvcNotFound, vmiSynchronizedFalse(FailedPvcNotFoundReason)},
		{VirtualMachineStatusDataVolumeError, func(in *PrintableStatusInput) bool { return in.DataVolumeError }},
		{VirtualMachineStatusUnschedulable, func(in *PrintableStatusInput) bool {
			return in.VMI != nil && HasCondition(in.VMI.Status.Conditions, VirtualMachineInstancePodScheduled, ConditionFalse, PodReasonUnschedulable)
		}},
		{VirtualMachineStatusProvisioning, func(in *PrintableStatusInput) bool { return in.DataVolumeProvisioning }},
		{VirtualMachineStatusWaitingForVolumeBinding, func(in *PrintableStatusInput) bool {
			return in.VolumeBindingPending && IsSetToStart(in.VM, in.VMI)
		}},
		{VirtualMachineStatusErrImagePull, vmiSynchronizedFalse(ErrImagePullReason)},
		{VirtualMachineStatusImagePullBackOff, vmiSynchronizedFalse(ImagePullBackOffReason)},
		{VirtualMachineStatusStarting, func(in *PrintableStatusInput) bool {
			if in.VMI == nil {
				return in.VMICreationExpected
			}
			return in.VMI.IsUnprocessed() || in.VMI.IsScheduling() || in.VMI.IsScheduled()
		}},
		{VirtualMachineStatusCrashLoopBackOff, func(in *PrintableStatusInput) bool {
			if (in.VMI != nil && !in.VMI.IsFinal()) || in.VMICreationExpected {
				return false
			}
			sf := in.VM.Status.StartFailure
			if sf == nil || sf.ConsecutiveFailCount <= 0 {
				return false
			}
			rs, err := in.VM.RunStrategy()
			return err == nil && (rs == RunStrategyAlways || rs == RunStrategyRerunOnFailure || rs == RunStrategyOnce)
		}},
		{VirtualMachineStatusStopped, func(in *PrintableStatusInput) bool {
			if in.VMI != nil {
				return in.VMI.IsFinal()
			}
			return !in.VMICreationExpected
		}},
		{VirtualMachineStatusWaitingForReceiver, func(in *PrintableStatusInput) bool {
			rs, err := in.VM.RunStrategy()
			return err == nil && rs == RunStrategyWaitAsReceiver && (in.VMI == nil || in.VMI.Status.Phase == WaitingForSync)
		}},
	}
}

func vmiSynchronizedFalse(reason string) func(*PrintableStatusInput) bool {
	return func(in *PrintableStatusInput) bool {
		return in.VMI != nil && HasCondition(in.VMI.Status.Conditions, VirtualMachineInstanceSynchronized, ConditionFalse, reason)
	}
}

// IsSetToStart reports whether the VM's run strategy wants a running VMI
// now (KubeVirt's isSetToStart). vmi may be nil.
func IsSetToStart(vm *VirtualMachine, vmi *VirtualMachineInstance) bool {
	rs, err := vm.RunStrategy()
	if err != nil {
		return false
	}
	switch rs {
	case RunStrategyAlways:
		return true
	case RunStrategyManual:
		if vmi != nil {
			return !hasStopRequestFor(vm, vmi)
		}
		return hasStartRequest(vm)
	case RunStrategyRerunOnFailure:
		if vmi != nil {
			return vmi.Status.Phase != Succeeded
		}
		return true
	case RunStrategyOnce:
		return vmi == nil
	}
	return false
}

func hasStartRequest(vm *VirtualMachine) bool {
	reqs := vm.Status.StateChangeRequests
	return len(reqs) > 0 && reqs[0].Action == StartRequest
}

func hasStopRequestFor(vm *VirtualMachine, vmi *VirtualMachineInstance) bool {
	reqs := vm.Status.StateChangeRequests
	return len(reqs) > 0 && reqs[0].Action == StopRequest && reqs[0].UID != nil && *reqs[0].UID == vmi.UID
}
