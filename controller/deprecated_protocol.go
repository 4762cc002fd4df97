package controller

import (
	"time"

	"github.com/virtkit/virtkit"
)

// Names that moved to the root package virtkit, kept here so code written
// against earlier releases keeps compiling.

// Moved to package virtkit (protocol.go).
const (
	// Deprecated: use virtkit.NodeAgentFinalizer.
	NodeAgentFinalizer = virtkit.NodeAgentFinalizer
	// Deprecated: use virtkit.PauseRequestAnnotation.
	PauseRequestAnnotation = virtkit.PauseRequestAnnotation
	// Deprecated: use virtkit.SoftRebootRequestAnnotation.
	SoftRebootRequestAnnotation = virtkit.SoftRebootRequestAnnotation
	// Deprecated: use virtkit.DrainTaintKey.
	DrainTaintKey = virtkit.DrainTaintKey
	// Deprecated: use virtkit.FenceTimeoutAnnotation.
	FenceTimeoutAnnotation = virtkit.FenceTimeoutAnnotation
	// Deprecated: use virtkit.TraceParentAnnotation.
	TraceParentAnnotation = virtkit.TraceParentAnnotation
	// Deprecated: use virtkit.MigrationTraceParentAnnotation.
	MigrationTraceParentAnnotation = virtkit.MigrationTraceParentAnnotation
	// Deprecated: use virtkit.MigrationUnsupportedAnnotation.
	MigrationUnsupportedAnnotation = virtkit.MigrationUnsupportedAnnotation
	// Deprecated: use virtkit.MigrationReasonNodeUnsupported.
	MigrationReasonNodeUnsupported = virtkit.MigrationReasonNodeUnsupported
	// Deprecated: use virtkit.NamespaceFinalizer.
	NamespaceFinalizer = virtkit.NamespaceFinalizer
)

// Moved to package virtkit (reasons.go).
const (
	// Deprecated: use virtkit.EventReasonSuccessfulCreate.
	EventReasonSuccessfulCreate = virtkit.EventReasonSuccessfulCreate
	// Deprecated: use virtkit.EventReasonFailedCreate.
	EventReasonFailedCreate = virtkit.EventReasonFailedCreate
	// Deprecated: use virtkit.EventReasonSuccessfulDelete.
	EventReasonSuccessfulDelete = virtkit.EventReasonSuccessfulDelete
	// Deprecated: use virtkit.EventReasonFailedDelete.
	EventReasonFailedDelete = virtkit.EventReasonFailedDelete
	// Deprecated: use virtkit.EventReasonScheduled.
	EventReasonScheduled = virtkit.EventReasonScheduled
	// Deprecated: use virtkit.EventReasonFailedScheduling.
	EventReasonFailedScheduling = virtkit.EventReasonFailedScheduling
	// Deprecated: use virtkit.EventReasonSuccessfulMigration.
	EventReasonSuccessfulMigration = virtkit.EventReasonSuccessfulMigration
	// Deprecated: use virtkit.EventReasonFailedMigration.
	EventReasonFailedMigration = virtkit.EventReasonFailedMigration
	// Deprecated: use virtkit.EventReasonSuccessfulHandOver.
	EventReasonSuccessfulHandOver = virtkit.EventReasonSuccessfulHandOver
	// Deprecated: use virtkit.EventReasonSuccessfulAbortMigration.
	EventReasonSuccessfulAbortMigration = virtkit.EventReasonSuccessfulAbortMigration
	// Deprecated: use virtkit.EventReasonNodeUnresponsive.
	EventReasonNodeUnresponsive = virtkit.EventReasonNodeUnresponsive
	// Deprecated: use virtkit.EventReasonCreated.
	EventReasonCreated = virtkit.EventReasonCreated
	// Deprecated: use virtkit.EventReasonStarted.
	EventReasonStarted = virtkit.EventReasonStarted
	// Deprecated: use virtkit.EventReasonShuttingDown.
	EventReasonShuttingDown = virtkit.EventReasonShuttingDown
	// Deprecated: use virtkit.EventReasonStopped.
	EventReasonStopped = virtkit.EventReasonStopped
	// Deprecated: use virtkit.EventReasonDeleted.
	EventReasonDeleted = virtkit.EventReasonDeleted
	// Deprecated: use virtkit.EventReasonSyncFailed.
	EventReasonSyncFailed = virtkit.EventReasonSyncFailed
	// Deprecated: use virtkit.EventReasonMigrating.
	EventReasonMigrating = virtkit.EventReasonMigrating
	// Deprecated: use virtkit.EventReasonPreparingTarget.
	EventReasonPreparingTarget = virtkit.EventReasonPreparingTarget
	// Deprecated: use virtkit.EventReasonMigrated.
	EventReasonMigrated = virtkit.EventReasonMigrated
	// Deprecated: use virtkit.EventReasonPaused.
	EventReasonPaused = virtkit.EventReasonPaused
	// Deprecated: use virtkit.EventReasonUnpaused.
	EventReasonUnpaused = virtkit.EventReasonUnpaused
	// Deprecated: use virtkit.EventReasonSoftRebooted.
	EventReasonSoftRebooted = virtkit.EventReasonSoftRebooted
	// Deprecated: use virtkit.ReportingController.
	ReportingController = virtkit.ReportingController
	// Deprecated: use virtkit.ReportingNodeAgent.
	ReportingNodeAgent = virtkit.ReportingNodeAgent
	// Deprecated: use virtkit.EventReasonEvicted.
	EventReasonEvicted = virtkit.EventReasonEvicted
	// Deprecated: use virtkit.EventReasonFailedEviction.
	EventReasonFailedEviction = virtkit.EventReasonFailedEviction
	// Deprecated: use virtkit.EvictionBlockedReason.
	EvictionBlockedReason = virtkit.EvictionBlockedReason
	// Deprecated: use virtkit.MigrationReasonVMIMissing.
	MigrationReasonVMIMissing = virtkit.MigrationReasonVMIMissing
	// Deprecated: use virtkit.MigrationReasonVMIFinal.
	MigrationReasonVMIFinal = virtkit.MigrationReasonVMIFinal
	// Deprecated: use virtkit.MigrationReasonNotRunning.
	MigrationReasonNotRunning = virtkit.MigrationReasonNotRunning
	// Deprecated: use virtkit.MigrationReasonInFlight.
	MigrationReasonInFlight = virtkit.MigrationReasonInFlight
	// Deprecated: use virtkit.MigrationReasonDeletedEarly.
	MigrationReasonDeletedEarly = virtkit.MigrationReasonDeletedEarly
	// Deprecated: use virtkit.MigrationReasonTargetDown.
	MigrationReasonTargetDown = virtkit.MigrationReasonTargetDown
	// Deprecated: use virtkit.MigrationReasonStateTakenOver.
	MigrationReasonStateTakenOver = virtkit.MigrationReasonStateTakenOver
	// Deprecated: use virtkit.MigrationReasonNotTakenOver.
	MigrationReasonNotTakenOver = virtkit.MigrationReasonNotTakenOver
	// Deprecated: use virtkit.MigrationReasonUnschedulable.
	MigrationReasonUnschedulable = virtkit.MigrationReasonUnschedulable
	// Deprecated: use virtkit.MigrationReasonAborted.
	MigrationReasonAborted = virtkit.MigrationReasonAborted
	// Deprecated: use virtkit.MigrationReasonSourceMoved.
	MigrationReasonSourceMoved = virtkit.MigrationReasonSourceMoved
)

// Moved to package virtkit (migration_defaults.go).
const (
	// Deprecated: use virtkit.DefaultParallelMigrationsPerCluster.
	DefaultParallelMigrationsPerCluster = virtkit.DefaultParallelMigrationsPerCluster
	// Deprecated: use virtkit.DefaultParallelOutboundMigrationsPerNode.
	DefaultParallelOutboundMigrationsPerNode = virtkit.DefaultParallelOutboundMigrationsPerNode
	// Deprecated: use virtkit.DefaultCompletionTimeoutPerGiB.
	DefaultCompletionTimeoutPerGiB = virtkit.DefaultCompletionTimeoutPerGiB
	// Deprecated: use virtkit.DefaultProgressTimeout.
	DefaultProgressTimeout = virtkit.DefaultProgressTimeout
	// Deprecated: use virtkit.DefaultMaxDowntimeMs.
	DefaultMaxDowntimeMs = virtkit.DefaultMaxDowntimeMs
)

// MinNodeGrace returns virtkit.MinNodeGrace(fence).
//
// Deprecated: use virtkit.MinNodeGrace.
func MinNodeGrace(fence time.Duration) time.Duration { return virtkit.MinNodeGrace(fence) }

// ParseFenceTimeout returns virtkit.ParseFenceTimeout(v).
//
// Deprecated: use virtkit.ParseFenceTimeout.
func ParseFenceTimeout(v string) (time.Duration, error) { return virtkit.ParseFenceTimeout(v) }

// DefaultMigrationConfiguration returns virtkit.DefaultMigrationConfiguration().
//
// Deprecated: use virtkit.DefaultMigrationConfiguration.
func DefaultMigrationConfiguration() *virtkit.MigrationConfiguration {
	return virtkit.DefaultMigrationConfiguration()
}

// ClusterMigrationConfiguration returns virtkit.ClusterMigrationConfiguration(override).
//
// Deprecated: use virtkit.ClusterMigrationConfiguration.
func ClusterMigrationConfiguration(override *virtkit.MigrationConfiguration) *virtkit.MigrationConfiguration {
	return virtkit.ClusterMigrationConfiguration(override)
}
