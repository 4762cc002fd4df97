package virtkit

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +kubebuilder:object:root=true

// VirtualMachineInstanceMigration (VMIM) asks for one live migration of a
// VMI: kubevirt.io/v1, namespaced.
type VirtualMachineInstanceMigration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              VirtualMachineInstanceMigrationSpec   `json:"spec"`
	Status            VirtualMachineInstanceMigrationStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// VirtualMachineInstanceMigrationList is a list of migrations.
type VirtualMachineInstanceMigrationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VirtualMachineInstanceMigration `json:"items"`
}

// MigrationPriority orders queued migrations.
type MigrationPriority string

// Migration priorities.
const (
	PrioritySystemCritical    MigrationPriority = "system-critical"
	PriorityUserTriggered     MigrationPriority = "user-triggered"
	PrioritySystemMaintenance MigrationPriority = "system-maintenance"
)

// VirtualMachineInstanceMigrationSpec names the VMI to migrate.
type VirtualMachineInstanceMigrationSpec struct {
	VMIName string `json:"vmiName,omitempty"`
	// AddedNodeSelector can only restrict the target; on a key collision the
	// VMI's own nodeSelector wins.
	AddedNodeSelector map[string]string  `json:"addedNodeSelector,omitempty"`
	Priority          *MigrationPriority `json:"priority,omitempty"`
}

// VirtualMachineInstanceMigrationPhase is the migration phase.
type VirtualMachineInstanceMigrationPhase string

// Migration phases.
const (
	MigrationPhaseUnset      VirtualMachineInstanceMigrationPhase = ""
	MigrationPending         VirtualMachineInstanceMigrationPhase = "Pending"
	MigrationScheduling      VirtualMachineInstanceMigrationPhase = "Scheduling"
	MigrationScheduled       VirtualMachineInstanceMigrationPhase = "Scheduled"
	MigrationPreparingTarget VirtualMachineInstanceMigrationPhase = "PreparingTarget"
	MigrationTargetReady     VirtualMachineInstanceMigrationPhase = "TargetReady"
	MigrationRunning         VirtualMachineInstanceMigrationPhase = "Running"
	MigrationSucceeded       VirtualMachineInstanceMigrationPhase = "Succeeded"
	MigrationFailed          VirtualMachineInstanceMigrationPhase = "Failed"
	MigrationWaitingForSync  VirtualMachineInstanceMigrationPhase = "WaitingForSync"
	MigrationSynchronizing   VirtualMachineInstanceMigrationPhase = "Synchronizing"
)

// VirtualMachineInstanceMigrationStatus is the observed state of a migration.
type VirtualMachineInstanceMigrationStatus struct {
	Phase VirtualMachineInstanceMigrationPhase `json:"phase,omitempty"`
	// +listType=atomic
	PhaseTransitionTimestamps []VirtualMachineInstanceMigrationPhaseTransitionTimestamp `json:"phaseTransitionTimestamps,omitempty"`
	Conditions                []Condition                                               `json:"conditions,omitempty"`
	// MigrationState is a copy of the VMI's migration state once final.
	MigrationState *VirtualMachineInstanceMigrationState `json:"migrationState,omitempty"`
}

// VirtualMachineInstanceMigrationPhaseTransitionTimestamp records when a
// migration phase began.
type VirtualMachineInstanceMigrationPhaseTransitionTimestamp struct {
	Phase                    VirtualMachineInstanceMigrationPhase `json:"phase,omitempty"`
	PhaseTransitionTimestamp metav1.Time                          `json:"phaseTransitionTimestamp,omitempty"`
}

// MigrationAbortStatus is the state of an abort request.
type MigrationAbortStatus string

// Abort states.
const (
	MigrationAbortSucceeded  MigrationAbortStatus = "Succeeded"
	MigrationAbortFailed     MigrationAbortStatus = "Failed"
	MigrationAbortInProgress MigrationAbortStatus = "Aborting"
)

// MigrationMode is PreCopy, PostCopy or Paused.
type MigrationMode string

// Migration modes.
const (
	MigrationPreCopy  MigrationMode = "PreCopy"
	MigrationPostCopy MigrationMode = "PostCopy"
	MigrationPaused   MigrationMode = "Paused"
)

// VirtualMachineInstanceMigrationState is the VMI's view of its current (or
// last) migration. Note KubeVirt's JSON key `migrationUid`.
type VirtualMachineInstanceMigrationState struct {
	StartTimestamp                 *metav1.Time            `json:"startTimestamp,omitempty"`
	EndTimestamp                   *metav1.Time            `json:"endTimestamp,omitempty"`
	TargetNodeDomainReadyTimestamp *metav1.Time            `json:"targetNodeDomainReadyTimestamp,omitempty"`
	TargetNodeDomainDetected       bool                    `json:"targetNodeDomainDetected,omitempty"`
	TargetNodeAddress              string                  `json:"targetNodeAddress,omitempty"`
	TargetDirectMigrationNodePorts map[string]int          `json:"targetDirectMigrationNodePorts,omitempty"`
	TargetNode                     string                  `json:"targetNode,omitempty"`
	TargetPod                      string                  `json:"targetPod,omitempty"`
	SourceNode                     string                  `json:"sourceNode,omitempty"`
	SourcePod                      string                  `json:"sourcePod,omitempty"`
	Completed                      bool                    `json:"completed,omitempty"`
	Failed                         bool                    `json:"failed,omitempty"`
	AbortRequested                 bool                    `json:"abortRequested,omitempty"`
	AbortStatus                    MigrationAbortStatus    `json:"abortStatus,omitempty"`
	FailureReason                  string                  `json:"failureReason,omitempty"`
	MigrationUID                   types.UID               `json:"migrationUid,omitempty"`
	Mode                           MigrationMode           `json:"mode,omitempty"`
	MigrationPolicyName            *string                 `json:"migrationPolicyName,omitempty"`
	MigrationConfiguration         *MigrationConfiguration `json:"migrationConfiguration,omitempty"`
	// Engine is virtkit's extension: what the dirty-rate-aware engine
	// measured, predicted and decided. KubeVirt has no such field; a
	// KubeVirt client ignores it.
	Engine *MigrationEngineStatus `json:"virtkitEngine,omitempty"`
}

// MigrationConfiguration is the effective migration configuration: the
// cluster defaults with a MigrationPolicy's fields on top.
type MigrationConfiguration struct {
	ParallelMigrationsPerCluster      *uint32            `json:"parallelMigrationsPerCluster,omitempty"`
	ParallelOutboundMigrationsPerNode *uint32            `json:"parallelOutboundMigrationsPerNode,omitempty"`
	BandwidthPerMigration             *resource.Quantity `json:"bandwidthPerMigration,omitempty"`
	CompletionTimeoutPerGiB           *int64             `json:"completionTimeoutPerGiB,omitempty"`
	ProgressTimeout                   *int64             `json:"progressTimeout,omitempty"`
	MaxDowntimeMs                     *uint64            `json:"maxDowntimeMs,omitempty"`
	UnsafeMigrationOverride           *bool              `json:"unsafeMigrationOverride,omitempty"`
	AllowAutoConverge                 *bool              `json:"allowAutoConverge,omitempty"`
	AllowPostCopy                     *bool              `json:"allowPostCopy,omitempty"`
	AllowWorkloadDisruption           *bool              `json:"allowWorkloadDisruption,omitempty"`
	DisableTLS                        *bool              `json:"disableTLS,omitempty"`
	Network                           *string            `json:"network,omitempty"`
}

// MigrationEngineStatus is what virtkit's migration engine knows about a
// running migration. Pointers stay nil until measured: "not measured" is
// not zero.
type MigrationEngineStatus struct {
	// Strategy is the engine's current plan, e.g. "PreCopy",
	// "PreCopyThrottled", "PostCopyAfterFirstPass", "Refused".
	Strategy                        string   `json:"strategy,omitempty"`
	PredictedTotalSeconds           *float64 `json:"predictedTotalSeconds,omitempty"`
	PredictedDowntimeMs             *float64 `json:"predictedDowntimeMs,omitempty"`
	MeasuredDirtyRateBytesPerSecond *int64   `json:"measuredDirtyRateBytesPerSecond,omitempty"`
	MeasuredBandwidthBytesPerSecond *int64   `json:"measuredBandwidthBytesPerSecond,omitempty"`
	// ThrottlePercent is the current guest CPU throttle (0 = none).
	ThrottlePercent int32 `json:"throttlePercent,omitempty"`
	// Decisions is the engine's log, oldest first.
	Decisions []MigrationEngineDecision `json:"decisions,omitempty"`
}

// MigrationEngineDecision is one decision of the engine with the numbers it
// was based on (formatted, so status stays exact and diff-friendly).
type MigrationEngineDecision struct {
	Time   metav1.Time `json:"time"`
	Action string      `json:"action"`
	// Rule names the policy's rule that decided, machine-readable and
	// stable ("ThrottleStep", "Hopeless"); Reason is the sentence for
	// people.
	Rule    string            `json:"rule,omitempty"`
	Reason  string            `json:"reason,omitempty"`
	Numbers map[string]string `json:"numbers,omitempty"`
}

// IsFinal reports whether the migration Succeeded or Failed.
func (m *VirtualMachineInstanceMigration) IsFinal() bool {
	return m.Status.Phase == MigrationSucceeded || m.Status.Phase == MigrationFailed
}

// IsRunning reports whether the migration holds a slot: any phase except
// unset, Pending, Succeeded, Failed, WaitingForSync and Synchronizing.
func (m *VirtualMachineInstanceMigration) IsRunning() bool {
	switch m.Status.Phase {
	case MigrationPhaseUnset, MigrationPending, MigrationSucceeded, MigrationFailed,
		MigrationWaitingForSync, MigrationSynchronizing:
		return false
	}
	return true
}

// TargetIsCreated reports whether a migration target has been created.
func (m *VirtualMachineInstanceMigration) TargetIsCreated() bool {
	switch m.Status.Phase {
	case MigrationPhaseUnset, MigrationPending, MigrationWaitingForSync, MigrationSynchronizing:
		return false
	}
	return true
}

// TargetIsHandedOff reports whether the VMI's migrationState has been handed
// to the node agents (after Scheduled).
func (m *VirtualMachineInstanceMigration) TargetIsHandedOff() bool {
	return m.TargetIsCreated() && m.Status.Phase != MigrationScheduling && m.Status.Phase != MigrationScheduled
}

// SetPhase moves the migration to phase and records the transition time; it
// reports whether the phase changed.
func (m *VirtualMachineInstanceMigration) SetPhase(phase VirtualMachineInstanceMigrationPhase, now metav1.Time) bool {
	if m.Status.Phase == phase {
		return false
	}
	m.Status.Phase = phase
	m.Status.PhaseTransitionTimestamps = append(m.Status.PhaseTransitionTimestamps,
		VirtualMachineInstanceMigrationPhaseTransitionTimestamp{Phase: phase, PhaseTransitionTimestamp: now})
	return true
}

// RecordDecision appends an engine decision and keeps at most limit
// decisions (the newest); limit <= 0 keeps all.
func (s *MigrationEngineStatus) RecordDecision(d MigrationEngineDecision, limit int) {
	s.Decisions = append(s.Decisions, d)
	if limit > 0 && len(s.Decisions) > limit {
		s.Decisions = append(s.Decisions[:0:0], s.Decisions[len(s.Decisions)-limit:]...)
	}
}
