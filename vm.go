package virtkit

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +kubebuilder:object:root=true

// VirtualMachine (VM) is a stateful guest whose VMI is started and stopped
// according to its run strategy: kubevirt.io/v1, namespaced.
type VirtualMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              VirtualMachineSpec   `json:"spec"`
	Status            VirtualMachineStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// VirtualMachineList is a list of VMs.
type VirtualMachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VirtualMachine `json:"items"`
}

// VirtualMachineRunStrategy says when the VM's VMI should exist.
type VirtualMachineRunStrategy string

// Run strategies.
const (
	RunStrategyUnknown        VirtualMachineRunStrategy = ""
	RunStrategyAlways         VirtualMachineRunStrategy = "Always"
	RunStrategyHalted         VirtualMachineRunStrategy = "Halted"
	RunStrategyManual         VirtualMachineRunStrategy = "Manual"
	RunStrategyRerunOnFailure VirtualMachineRunStrategy = "RerunOnFailure"
	RunStrategyOnce           VirtualMachineRunStrategy = "Once"
	RunStrategyWaitAsReceiver VirtualMachineRunStrategy = "WaitAsReceiver"
)

// VirtualMachineSpec is the desired VM.
type VirtualMachineSpec struct {
	// Running is deprecated in favour of RunStrategy; the two are exclusive.
	Running     *bool                               `json:"running,omitempty"`
	RunStrategy *VirtualMachineRunStrategy          `json:"runStrategy,omitempty"`
	Template    *VirtualMachineInstanceTemplateSpec `json:"template"`
	// DataVolumeTemplates are CDI DataVolumes created with the VM.
	DataVolumeTemplates []DataVolumeTemplateSpec `json:"dataVolumeTemplates,omitempty"`
	// Instancetype names the instance type whose CPU and memory the VMI
	// gets; Preference the preference whose defaults it gets.
	Instancetype *InstancetypeMatcher `json:"instancetype,omitempty"`
	Preference   *PreferenceMatcher   `json:"preference,omitempty"`
}

// VirtualMachineInstanceTemplateSpec is the VMI a VM or ReplicaSet creates.
type VirtualMachineInstanceTemplateSpec struct {
	ObjectMeta metav1.ObjectMeta          `json:"metadata,omitempty"`
	Spec       VirtualMachineInstanceSpec `json:"spec,omitempty"`
}

// DataVolumeTemplateSpec is a CDI DataVolume (cdi.kubevirt.io) owned by a VM.
type DataVolumeTemplateSpec struct {
	metav1.TypeMeta `json:",inline"`
	ObjectMeta      metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec            DataVolumeSpec    `json:"spec"`
}

// VirtualMachinePrintableStatus is the one-word VM state.
type VirtualMachinePrintableStatus string

// Printable statuses.
const (
	VirtualMachineStatusStopped                 VirtualMachinePrintableStatus = "Stopped"
	VirtualMachineStatusProvisioning            VirtualMachinePrintableStatus = "Provisioning"
	VirtualMachineStatusStarting                VirtualMachinePrintableStatus = "Starting"
	VirtualMachineStatusRunning                 VirtualMachinePrintableStatus = "Running"
	VirtualMachineStatusPaused                  VirtualMachinePrintableStatus = "Paused"
	VirtualMachineStatusStopping                VirtualMachinePrintableStatus = "Stopping"
	VirtualMachineStatusTerminating             VirtualMachinePrintableStatus = "Terminating"
	VirtualMachineStatusCrashLoopBackOff        VirtualMachinePrintableStatus = "CrashLoopBackOff"
	VirtualMachineStatusMigrating               VirtualMachinePrintableStatus = "Migrating"
	VirtualMachineStatusUnknown                 VirtualMachinePrintableStatus = "Unknown"
	VirtualMachineStatusUnschedulable           VirtualMachinePrintableStatus = "ErrorUnschedulable"
	VirtualMachineStatusErrImagePull            VirtualMachinePrintableStatus = "ErrImagePull"
	VirtualMachineStatusImagePullBackOff        VirtualMachinePrintableStatus = "ImagePullBackOff"
	VirtualMachineStatusPvcNotFound             VirtualMachinePrintableStatus = "ErrorPvcNotFound"
	VirtualMachineStatusDataVolumeError         VirtualMachinePrintableStatus = "DataVolumeError"
	VirtualMachineStatusWaitingForVolumeBinding VirtualMachinePrintableStatus = "WaitingForVolumeBinding"
	VirtualMachineStatusWaitingForReceiver      VirtualMachinePrintableStatus = "WaitingForReceiver"
)

// StateChangeRequestAction is Start or Stop.
type StateChangeRequestAction string

// State change actions.
const (
	StartRequest StateChangeRequestAction = "Start"
	StopRequest  StateChangeRequestAction = "Stop"
)

// StartRequestDataPausedKey in a Start request's data starts the VMI paused.
const StartRequestDataPausedKey = "paused"

// VirtualMachineStateChangeRequest is a queued start/stop.
type VirtualMachineStateChangeRequest struct {
	Action StateChangeRequestAction `json:"action"`
	Data   map[string]string        `json:"data,omitempty"`
	// UID is the VMI a Stop applies to.
	UID *types.UID `json:"uid,omitempty"`
}

// VirtualMachineStartFailure is the start-failure backoff state.
type VirtualMachineStartFailure struct {
	ConsecutiveFailCount int          `json:"consecutiveFailCount,omitempty"`
	LastFailedVMIUID     types.UID    `json:"lastFailedVMIUID,omitempty"`
	RetryAfterTimestamp  *metav1.Time `json:"retryAfterTimestamp,omitempty"`
}

// VirtualMachineStatus is the observed state of a VM.
type VirtualMachineStatus struct {
	Created             bool                               `json:"created,omitempty"`
	Ready               bool                               `json:"ready,omitempty"`
	PrintableStatus     VirtualMachinePrintableStatus      `json:"printableStatus,omitempty"`
	Conditions          []Condition                        `json:"conditions,omitempty"`
	StateChangeRequests []VirtualMachineStateChangeRequest `json:"stateChangeRequests,omitempty"`
	StartFailure        *VirtualMachineStartFailure        `json:"startFailure,omitempty"`
	ObservedGeneration  int64                              `json:"observedGeneration,omitempty"`
	DesiredGeneration   int64                              `json:"desiredGeneration,omitempty"`
	// RunStrategy is the last strategy the controller acted on.
	RunStrategy VirtualMachineRunStrategy `json:"runStrategy,omitempty"`
	// InstancetypeRef and PreferenceRef are the instance type and
	// preference the VM was started with, and the revisions holding them.
	InstancetypeRef *InstancetypeStatusRef `json:"instancetypeRef,omitempty"`
	PreferenceRef   *InstancetypeStatusRef `json:"preferenceRef,omitempty"`
}

// RunStrategy returns the effective run strategy: spec.runStrategy, or
// Always/Halted from the deprecated spec.running, or Halted when neither is
// set. Both set is an error wrapping ErrRunStrategy.
func (vm *VirtualMachine) RunStrategy() (VirtualMachineRunStrategy, error) {
	switch {
	case vm.Spec.Running != nil && vm.Spec.RunStrategy != nil:
		return RunStrategyUnknown, fmt.Errorf("virtual machine %s/%s: %w", vm.Namespace, vm.Name, ErrRunStrategy)
	case vm.Spec.RunStrategy != nil:
		return *vm.Spec.RunStrategy, nil
	case vm.Spec.Running != nil && *vm.Spec.Running:
		return RunStrategyAlways, nil
	default:
		return RunStrategyHalted, nil
	}
}

// ValidRunStrategies are the strategies a VM may request.
func ValidRunStrategies() []VirtualMachineRunStrategy {
	return []VirtualMachineRunStrategy{RunStrategyHalted, RunStrategyManual, RunStrategyAlways,
		RunStrategyRerunOnFailure, RunStrategyOnce, RunStrategyWaitAsReceiver}
}
