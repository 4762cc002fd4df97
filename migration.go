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
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels, annotations and
	// the other fields every object has.
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec names the VMI to migrate.
	Spec VirtualMachineInstanceMigrationSpec `json:"spec"`
	// Status is the migration's progress, written by the migration controller.
	Status VirtualMachineInstanceMigrationStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// VirtualMachineInstanceMigrationList is a list of migrations.
type VirtualMachineInstanceMigrationList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the migrations.
	Items []VirtualMachineInstanceMigration `json:"items"`
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
	// VMIName is the name of the VMI to migrate, in the migration's namespace.
	VMIName string `json:"vmiName,omitempty"`
	// AddedNodeSelector can only restrict the target; on a key collision the
	// VMI's own nodeSelector wins.
	AddedNodeSelector map[string]string `json:"addedNodeSelector,omitempty"`
	// Priority orders pending migrations: user-triggered, system-critical or
	// system-maintenance.
	Priority *MigrationPriority `json:"priority,omitempty"`
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
	// Phase is where the migration stands, from Pending through Scheduling,
	// Scheduled, PreparingTarget, TargetReady and Running to Succeeded or
	// Failed.
	Phase VirtualMachineInstanceMigrationPhase `json:"phase,omitempty"`
	// PhaseTransitionTimestamps record when the migration entered each phase.
	// +listType=atomic
	PhaseTransitionTimestamps []VirtualMachineInstanceMigrationPhaseTransitionTimestamp `json:"phaseTransitionTimestamps,omitempty"`
	// Conditions are the migration's current conditions.
	Conditions []Condition `json:"conditions,omitempty"`
	// MigrationState is a copy of the VMI's migration state once final.
	MigrationState *VirtualMachineInstanceMigrationState `json:"migrationState,omitempty"`
}

// VirtualMachineInstanceMigrationPhaseTransitionTimestamp records when a
// migration phase began.
type VirtualMachineInstanceMigrationPhaseTransitionTimestamp struct {
	// Phase is the phase entered.
	Phase VirtualMachineInstanceMigrationPhase `json:"phase,omitempty"`
	// PhaseTransitionTimestamp is when the phase was entered.
	PhaseTransitionTimestamp metav1.Time `json:"phaseTransitionTimestamp,omitempty"`
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
	// StartTimestamp is when the migration started.
	StartTimestamp *metav1.Time `json:"startTimestamp,omitempty"`
	// EndTimestamp is when the migration ended.
	EndTimestamp *metav1.Time `json:"endTimestamp,omitempty"`
	// TargetNodeDomainReadyTimestamp is when the guest began running on the
	// target node.
	TargetNodeDomainReadyTimestamp *metav1.Time `json:"targetNodeDomainReadyTimestamp,omitempty"`
	// TargetNodeDomainDetected is true once the target node's agent has seen
	// the incoming guest.
	TargetNodeDomainDetected bool `json:"targetNodeDomainDetected,omitempty"`
	// TargetNodeAddress is the address the source sends the migration stream
	// to.
	TargetNodeAddress string `json:"targetNodeAddress,omitempty"`
	// TargetDirectMigrationNodePorts maps the target's listening ports to
	// their purpose.
	TargetDirectMigrationNodePorts map[string]int `json:"targetDirectMigrationNodePorts,omitempty"`
	// TargetNode is the node the VMI moves to.
	TargetNode string `json:"targetNode,omitempty"`
	// TargetPod is the target's domain (in Kubernetes, its virt-launcher pod).
	TargetPod string `json:"targetPod,omitempty"`
	// SourceNode is the node the VMI moves from.
	SourceNode string `json:"sourceNode,omitempty"`
	// SourcePod is the source's domain (in Kubernetes, its virt-launcher pod).
	SourcePod string `json:"sourcePod,omitempty"`
	// Completed is true once the migration finished, whether or not it
	// succeeded.
	Completed bool `json:"completed,omitempty"`
	// Failed is true if the migration failed.
	Failed bool `json:"failed,omitempty"`
	// AbortRequested is true once the migration's cancellation was asked for.
	AbortRequested bool `json:"abortRequested,omitempty"`
	// AbortStatus is the outcome of a cancellation: Succeeded, Failed or
	// Aborting.
	AbortStatus MigrationAbortStatus `json:"abortStatus,omitempty"`
	// FailureReason says why the migration failed.
	FailureReason string `json:"failureReason,omitempty"`
	// MigrationUID is the UID of the migration object this state belongs to.
	MigrationUID types.UID `json:"migrationUid,omitempty"`
	// Mode is how the memory is being copied: PreCopy, PostCopy, or Paused
	// when the guest was paused to finish.
	Mode MigrationMode `json:"mode,omitempty"`
	// MigrationPolicyName names the MigrationPolicy that applied, if any.
	MigrationPolicyName *string `json:"migrationPolicyName,omitempty"`
	// MigrationConfiguration is the configuration the migration ran with.
	MigrationConfiguration *MigrationConfiguration `json:"migrationConfiguration,omitempty"`
	// Engine is virtkit's extension: what the dirty-rate-aware engine
	// measured, predicted and decided. KubeVirt has no such field; a
	// KubeVirt client ignores it.
	Engine *MigrationEngineStatus `json:"virtkitEngine,omitempty"`
}

// MigrationConfiguration is the effective migration configuration: the
// cluster defaults with a MigrationPolicy's fields on top.
type MigrationConfiguration struct {
	// ParallelMigrationsPerCluster caps the migrations running at once in the
	// cluster.
	ParallelMigrationsPerCluster *uint32 `json:"parallelMigrationsPerCluster,omitempty"`
	// ParallelOutboundMigrationsPerNode caps the migrations leaving one node
	// at once.
	ParallelOutboundMigrationsPerNode *uint32 `json:"parallelOutboundMigrationsPerNode,omitempty"`
	// BandwidthPerMigration caps the network bandwidth one migration may use.
	BandwidthPerMigration *resource.Quantity `json:"bandwidthPerMigration,omitempty"`
	// CompletionTimeoutPerGiB is how many seconds a migration may run per GiB
	// of guest memory.
	CompletionTimeoutPerGiB *int64 `json:"completionTimeoutPerGiB,omitempty"`
	// VirtkitMaxCompletionTimeoutPerGiB is virtkit's extension (KubeVirt
	// has no such field; a kubevirt.io/v1 manifest without it keeps
	// KubeVirt's behaviour): the upper bound, in seconds per GiB of guest
	// memory (counted as CompletionTimeoutPerGiB counts it), to which a
	// migration that the engine's model says converges may run past
	// CompletionTimeoutPerGiB. Once the completion timeout has passed, such
	// a migration keeps going until its predicted end with a margin, never
	// beyond this bound; the engine records a CompletionExtended decision
	// in status.migrationState.virtkitEngine and the node agent a Normal
	// MigrationCompletionExtended event on the VMI. A migration the model
	// says cannot converge, or not within the bound, still ends at the
	// completion timeout or sooner. Unset or 0 (the default) turns the
	// extension off: the completion timeout is final, as in KubeVirt; a
	// value not above CompletionTimeoutPerGiB extends nothing. Only the
	// cluster configuration sets it: a MigrationPolicy that sets
	// completionTimeoutPerGiB makes that timeout final (the resolved
	// configuration then drops this field).
	VirtkitMaxCompletionTimeoutPerGiB *int64 `json:"virtkitMaxCompletionTimeoutPerGiB,omitempty"`
	// ProgressTimeout is how many seconds a migration may go without progress
	// before it is cancelled.
	ProgressTimeout *int64 `json:"progressTimeout,omitempty"`
	// MaxDowntimeMs is the longest pause of the guest, in milliseconds, the
	// final copy may take.
	MaxDowntimeMs *uint64 `json:"maxDowntimeMs,omitempty"`
	// UnsafeMigrationOverride allows migrations the hypervisor deems unsafe.
	UnsafeMigrationOverride *bool `json:"unsafeMigrationOverride,omitempty"`
	// AllowAutoConverge lets a migration throttle the guest's vCPUs when it
	// does not converge.
	AllowAutoConverge *bool `json:"allowAutoConverge,omitempty"`
	// AllowPostCopy lets a migration that does not converge switch to post-
	// copy.
	AllowPostCopy *bool `json:"allowPostCopy,omitempty"`
	// AllowWorkloadDisruption lets a migration pause the guest to finish when
	// it does not converge.
	AllowWorkloadDisruption *bool `json:"allowWorkloadDisruption,omitempty"`
	// DisableTLS sends the migration stream unencrypted.
	DisableTLS *bool `json:"disableTLS,omitempty"`
	// Network names the network migrations use instead of the default one.
	Network *string `json:"network,omitempty"`
}

// MigrationEngineStatus is what virtkit's migration engine knows about a
// running migration. Pointers stay nil until measured: "not measured" is
// not zero.
type MigrationEngineStatus struct {
	// Strategy is the engine's current plan, e.g. "PreCopy",
	// "PreCopyThrottled", "PostCopyAfterFirstPass", "Refused".
	Strategy string `json:"strategy,omitempty"`
	// PredictedTotalSeconds is the engine's estimate of the whole migration's
	// duration.
	PredictedTotalSeconds *float64 `json:"predictedTotalSeconds,omitempty"`
	// PredictedDowntimeMs is the engine's estimate of the guest's pause at
	// switch-over, in milliseconds.
	PredictedDowntimeMs *float64 `json:"predictedDowntimeMs,omitempty"`
	// MeasuredDirtyRateBytesPerSecond is the rate at which the guest dirtied
	// memory, as last measured.
	MeasuredDirtyRateBytesPerSecond *int64 `json:"measuredDirtyRateBytesPerSecond,omitempty"`
	// MeasuredBandwidthBytesPerSecond is the transfer rate of the migration
	// stream, as last measured.
	MeasuredBandwidthBytesPerSecond *int64 `json:"measuredBandwidthBytesPerSecond,omitempty"`
	// ThrottlePercent is the current guest CPU throttle (0 = none).
	ThrottlePercent int32 `json:"throttlePercent,omitempty"`
	// PostCopyPageFaults counts the guest's page faults served over the
	// network after the switch to post-copy: pages the guest touched on the
	// target before they arrived, each stalling one of its vCPUs for a round
	// trip to the source (QEMU's post-copy page requests). Unset before
	// post-copy and where the hypervisor does not count them.
	PostCopyPageFaults *int64 `json:"postCopyPageFaults,omitempty"`
	// Decisions is the engine's log, oldest first.
	Decisions []MigrationEngineDecision `json:"decisions,omitempty"`
}

// MigrationEngineDecision is one decision of the engine with the numbers it
// was based on (formatted, so status stays exact and diff-friendly).
type MigrationEngineDecision struct {
	// Time is when the engine decided.
	Time metav1.Time `json:"time"`
	// Action is what the engine decided to do.
	Action string `json:"action"`
	// Rule names the policy's rule that decided, machine-readable and
	// stable ("ThrottleStep", "Hopeless"); Reason is the sentence for
	// people.
	Rule string `json:"rule,omitempty"`
	// Reason explains the decision.
	Reason string `json:"reason,omitempty"`
	// Numbers are the measurements the decision was based on.
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
