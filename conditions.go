package virtkit

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionType names a condition. One Condition struct serves every kind;
// KubeVirt's per-kind condition structs have the same fields and JSON.
type ConditionType string

// Condition is one observed aspect of an object.
type Condition struct {
	// Type is the kind of condition.
	Type ConditionType `json:"type"`
	// Status is True, False or Unknown.
	Status ConditionStatus `json:"status"`
	// LastProbeTime is when the condition was last checked.
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`
	// LastTransitionTime is when the status last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is a one-word, CamelCase cause of the last transition.
	Reason string `json:"reason,omitempty"`
	// Message is a human readable account of the last transition.
	Message string `json:"message,omitempty"`
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
	// VolumesChange=False reasons: the VM's template went back to the
	// volumes the VMI runs with while a volume migration was in flight, or
	// the volume migration failed.
	VolumesChangeCancellationReason = "VolumesChangeCancellation"
	VolumeMigrationFailedReason     = "VolumeMigrationFailed"
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

// GetCondition returns the condition of type t, or nil. The pointer aliases
// the slice element.
func GetCondition(conds []Condition, t ConditionType) *Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// HasCondition reports whether a condition of type t has the given status
// and, when reason is not empty, the given reason.
func HasCondition(conds []Condition, t ConditionType, status ConditionStatus, reason string) bool {
	c := GetCondition(conds, t)
	return c != nil && c.Status == status && (reason == "" || c.Reason == reason)
}

// IsConditionTrue reports whether the condition of type t is True.
func IsConditionTrue(conds []Condition, t ConditionType) bool {
	return HasCondition(conds, t, ConditionTrue, "")
}

// SetCondition adds c or updates the condition of the same type and reports
// whether anything changed. LastTransitionTime becomes now (unless c carries
// one) when the condition is added or its status changes, and is kept
// otherwise. LastProbeTime is copied from c only when c sets it, so callers
// that do not probe never cause a write.
func SetCondition(conds *[]Condition, c Condition, now metav1.Time) (changed bool) {
	if conds == nil {
		return false
	}
	existing := GetCondition(*conds, c.Type)
	if existing == nil {
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = now
		}
		*conds = append(*conds, c)
		return true
	}
	if existing.Status != c.Status {
		existing.Status = c.Status
		existing.LastTransitionTime = c.LastTransitionTime
		if existing.LastTransitionTime.IsZero() {
			existing.LastTransitionTime = now
		}
		changed = true
	}
	if existing.Reason != c.Reason {
		existing.Reason = c.Reason
		changed = true
	}
	if existing.Message != c.Message {
		existing.Message = c.Message
		changed = true
	}
	if !c.LastProbeTime.IsZero() && !existing.LastProbeTime.Equal(&c.LastProbeTime) {
		existing.LastProbeTime = c.LastProbeTime
		changed = true
	}
	return changed
}

// RemoveCondition deletes the condition of type t and reports whether one
// was there.
func RemoveCondition(conds *[]Condition, t ConditionType) (removed bool) {
	if conds == nil {
		return false
	}
	out := (*conds)[:0]
	for _, c := range *conds {
		if c.Type == t {
			removed = true
			continue
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		out = nil
	}
	*conds = out
	return removed
}
