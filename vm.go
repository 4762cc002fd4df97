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
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels, annotations and
	// the other fields every object has.
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the desired state: the VMI template and when it runs.
	Spec VirtualMachineSpec `json:"spec"`
	// Status is the observed state, written by the VM controller.
	Status VirtualMachineStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// VirtualMachineList is a list of VMs.
type VirtualMachineList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the virtual machines.
	Items []VirtualMachine `json:"items"`
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
	Running *bool `json:"running,omitempty"`
	// RunStrategy says when a VMI should exist for this VM: Always,
	// RerunOnFailure, Manual, Halted, Once or WaitAsReceiver. It may not be
	// set together with running.
	RunStrategy *VirtualMachineRunStrategy `json:"runStrategy,omitempty"`
	// Template is the VMI the VM creates when it starts.
	Template *VirtualMachineInstanceTemplateSpec `json:"template"`
	// DataVolumeTemplates are CDI DataVolumes created with the VM.
	DataVolumeTemplates []DataVolumeTemplateSpec `json:"dataVolumeTemplates,omitempty"`
	// Instancetype names a VirtualMachineInstancetype or
	// VirtualMachineClusterInstancetype whose CPU and memory the VMI gets.
	Instancetype *InstancetypeMatcher `json:"instancetype,omitempty"`
	// Preference names a VirtualMachinePreference or
	// VirtualMachineClusterPreference whose values fill the template's unset
	// fields.
	Preference *PreferenceMatcher `json:"preference,omitempty"`
	// UpdateVolumesStrategy is how a change of the template's volumes
	// reaches a running VMI: Replacement (the default, at the next
	// restart) or Migration (the volumes are copied during a live
	// migration).
	UpdateVolumesStrategy *UpdateVolumesStrategy `json:"updateVolumesStrategy,omitempty"`
}

// VirtualMachineInstanceTemplateSpec is the VMI a VM or ReplicaSet creates.
type VirtualMachineInstanceTemplateSpec struct {
	// Metadata holds the labels and annotations the VMIs made from the
	// template get.
	ObjectMeta metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the specification of the VMIs made from this template.
	Spec VirtualMachineInstanceSpec `json:"spec,omitempty"`
}

// DataVolumeTemplateSpec is a CDI DataVolume (cdi.kubevirt.io) owned by a VM.
type DataVolumeTemplateSpec struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the name, labels and annotations of the DataVolume
	// created for the VM.
	ObjectMeta metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the specification of the DataVolume created for the VM.
	Spec DataVolumeSpec `json:"spec"`
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
	// Action is the requested change: Start or Stop.
	Action StateChangeRequestAction `json:"action"`
	// Data holds extra arguments of the request.
	Data map[string]string `json:"data,omitempty"`
	// UID is the UID of the VMI a Stop applies to.
	UID *types.UID `json:"uid,omitempty"`
}

// VirtualMachineStartFailure is the start-failure backoff state.
type VirtualMachineStartFailure struct {
	// ConsecutiveFailCount counts the VMI starts that failed in a row.
	ConsecutiveFailCount int `json:"consecutiveFailCount,omitempty"`
	// LastFailedVMIUID is the UID of the VMI whose start failed last.
	LastFailedVMIUID types.UID `json:"lastFailedVMIUID,omitempty"`
	// RetryAfterTimestamp is when the controller may try to start the VM
	// again.
	RetryAfterTimestamp *metav1.Time `json:"retryAfterTimestamp,omitempty"`
}

// VirtualMachineStatus is the observed state of a VM.
type VirtualMachineStatus struct {
	// Created is true while a VMI of this VM exists.
	Created bool `json:"created,omitempty"`
	// Ready is true while the VM's VMI is running and ready.
	Ready bool `json:"ready,omitempty"`
	// PrintableStatus is a one-word, human readable summary of the VM's state
	// (Running, Stopped, Starting, Migrating, ...).
	PrintableStatus VirtualMachinePrintableStatus `json:"printableStatus,omitempty"`
	// Conditions are the VM's current conditions.
	Conditions []Condition `json:"conditions,omitempty"`
	// StateChangeRequests are the start and stop requests the controller has
	// yet to act on.
	StateChangeRequests []VirtualMachineStateChangeRequest `json:"stateChangeRequests,omitempty"`
	// VolumeRequests are the addvolume and removevolume requests the
	// controller has not applied to the VM's template yet.
	// +listType=atomic
	VolumeRequests []VirtualMachineVolumeRequest `json:"volumeRequests,omitempty"`
	// StartFailure tracks failed starts and the back-off before the next try.
	StartFailure *VirtualMachineStartFailure `json:"startFailure,omitempty"`
	// ObservedGeneration is the VM generation the running VMI was created
	// from.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// DesiredGeneration is the latest generation of the VM's spec.
	DesiredGeneration int64 `json:"desiredGeneration,omitempty"`
	// RunStrategy is the last strategy the controller acted on.
	RunStrategy VirtualMachineRunStrategy `json:"runStrategy,omitempty"`
	// InstancetypeRef records the instance type the VM's VMI was made with,
	// and the revision holding it.
	InstancetypeRef *InstancetypeStatusRef `json:"instancetypeRef,omitempty"`
	// PreferenceRef records the preference the VM's VMI was made with.
	PreferenceRef *InstancetypeStatusRef `json:"preferenceRef,omitempty"`
	// VolumeUpdateState tracks a change of the running VMI's volumes, such
	// as a volume migration.
	VolumeUpdateState *VolumeUpdateState `json:"volumeUpdateState,omitempty"`
}

// VolumeUpdateState is the state of a change of a running VM's volumes.
type VolumeUpdateState struct {
	// VolumeMigrationState is the volume migration in progress, if any.
	VolumeMigrationState *VolumeMigrationState `json:"volumeMigrationState,omitempty"`
}

// VolumeMigrationState is a volume migration's state.
type VolumeMigrationState struct {
	// MigratedVolumes are the volumes being copied to new claims.
	// +listType=atomic
	MigratedVolumes []StorageMigratedVolumeInfo `json:"migratedVolumes,omitempty"`
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
