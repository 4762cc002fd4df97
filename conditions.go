package virtkit

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionType names a condition. One Condition struct serves every kind;
// KubeVirt's per-kind condition structs have the same fields and JSON.
type ConditionType string

// Condition is one observed aspect of an object (§1.7).
type Condition struct {
	Type               ConditionType   `json:"type"`
	Status             ConditionStatus `json:"status"`
	LastProbeTime      metav1.Time     `json:"lastProbeTime,omitempty"`
	LastTransitionTime metav1.Time     `json:"lastTransitionTime,omitempty"`
	Reason             string          `json:"reason,omitempty"`
	Message            string          `json:"message,omitempty"`
}

// VMI condition types.
const (
	VirtualMachineInstanceReady                         ConditionType = "Ready"
	VirtualMachineInstancePodScheduled                  ConditionType = "PodScheduled"
	VirtualMachineInstanceIsMigratable                  ConditionType = "LiveMigratable"
	VirtualMachineInstanceIsStorageLiveMigratable       ConditionType = "StorageLiveMigratable"
	VirtualMachineInstanceAgentConnected                ConditionType = "AgentConnected"
	VirtualMachineInstanceUnsupportedAgent              ConditionType = "AgentVersionNotSupported"
	VirtualMachineInstanceAccessCredentialsSynchronized ConditionType = "AccessCredentialsSynchronized"
	VirtualMachineInstancePaused                        ConditionType = "Paused"
	VirtualMachineInstanceSynchronized                  ConditionType = "Synchronized"
	VirtualMachineInstanceProvisioning                  ConditionType = "Provisioning"
	VirtualMachineInstanceDataVolumesReady              ConditionType = "DataVolumesReady"
	VirtualMachineInstanceVCPUChange                    ConditionType = "HotVCPUChange"
	VirtualMachineInstanceMemoryChange                  ConditionType = "HotMemoryChange"
	VirtualMachineInstanceVolumesChange                 ConditionType = "VolumesChange"
	VirtualMachineInstanceMigrationRequired             ConditionType = "MigrationRequired"
	VirtualMachineInstanceEvictionRequested             ConditionType = "EvictionRequested"
)

// VMI condition reasons.
const (
	// Ready=False reasons.
	PodNotExistsReason        = "PodNotExists"
	PodTerminatingReason      = "PodTerminating"
	GuestNotRunningReason     = "GuestNotRunning"
	PodConditionMissingReason = "PodConditionMissing"

	// PodScheduled=False reason.
	PodReasonUnschedulable = "Unschedulable"

	// LiveMigratable=False reasons, in KubeVirt's evaluation order.
	InterfaceNotLiveMigratableReason             = "InterfaceNotLiveMigratable"
	CPUModeNotLiveMigratableReason               = "CPUModeLiveMigratable" // sic, KubeVirt's value
	HostDeviceNotLiveMigratableReason            = "HostDeviceNotLiveMigratable"
	SEVNotLiveMigratableReason                   = "SEVNotLiveMigratable"
	TDXNotLiveMigratableReason                   = "TDXNotLiveMigratable"
	SecureExecutionNotLiveMigratableReason       = "SecureExecutionNotLiveMigratable"
	NoTSCFrequencyNotLiveMigratableReason        = "NoTSCFrequencyNotLiveMigratable"
	HypervPassthroughNotLiveMigratableReason     = "HypervPassthroughNotLiveMigratable"
	DisksNotLiveMigratableReason                 = "DisksNotLiveMigratable"
	HotplugNotLiveMigratableReason               = "HotplugNotLiveMigratable"
	VirtIOFSNotLiveMigratableReason              = "VirtIOFSNotLiveMigratable"
	PersistentReservationNotLiveMigratableReason = "PersistentReservationNotLiveMigratable"
	DecentralizedNotLiveMigratableReason         = "DecentralizedNotLiveMigratable"
	NotMigratableReason                          = "NotMigratable"

	// Paused reasons.
	PausedByUserReason             = "PausedByUser"
	PausedByMigrationMonitorReason = "PausedByMigrationMonitor"
	PausedIOErrorReason            = "PausedIOError"

	// Synchronized=False reasons read by the VM printable status.
	FailedPvcNotFoundReason = "FailedPvcNotFound"
	ErrImagePullReason      = "ErrImagePull"
	ImagePullBackOffReason  = "ImagePullBackOff"

	// DataVolumesReady reasons.
	AllDVsReadyReason    = "AllDVsReady"
	NotAllDVsReadyReason = "NotAllDVsReady"

	// EvictionRequested=True reason.
	EvictionRequestedReason = "EvictionRequested"

	// Status.reason of a VMI failed because its node stopped answering.
	NodeUnresponsiveReason = "NodeUnresponsive"
)

// VM condition types and reasons.
const (
	VirtualMachineFailure                ConditionType = "Failure"
	VirtualMachineReady                  ConditionType = "Ready"
	VirtualMachinePaused                 ConditionType = "Paused"
	VirtualMachineRestartRequired        ConditionType = "RestartRequired"
	VirtualMachineManualRecoveryRequired ConditionType = "ManualRecoveryRequired"

	VMINotExistsReason = "VMINotExists"
)

// VMIM condition types and reasons.
const (
	VirtualMachineInstanceMigrationAbortRequested          ConditionType = "migrationAbortRequested"
	VirtualMachineInstanceMigrationRejectedByResourceQuota ConditionType = "migrationRejectedByResourceQuota"
	VirtualMachineInstanceMigrationBlockedByUtilityVolumes ConditionType = "migrationBlockedByUtilityVolumes"

	UtilityVolumesPresentReason = "UtilityVolumesPresent"
)

// VMIRS condition types and reasons.
const (
	VirtualMachineInstanceReplicaSetReplicaFailure ConditionType = "ReplicaFailure"
	VirtualMachineInstanceReplicaSetReplicaPaused  ConditionType = "ReplicaPaused"

	FailedCreateVirtualMachineReason = "FailedCreate"
	FailedDeleteVirtualMachineReason = "FailedDelete"
	PausedReplicaSetReason           = "Paused"
)
