package virtkit

// Event reasons the built-in controllers and node agents record: KubeVirt's
// strings (its virt-controller and virt-handler reasons, and the
// Kubernetes scheduler's for placement), so tooling that greps for them
// keeps working.
const (
	EventReasonSuccessfulCreate         = "SuccessfulCreate"
	EventReasonFailedCreate             = "FailedCreate"
	EventReasonSuccessfulDelete         = "SuccessfulDelete"
	EventReasonFailedDelete             = "FailedDelete"
	EventReasonScheduled                = "Scheduled"
	EventReasonFailedScheduling         = "FailedScheduling"
	EventReasonSuccessfulMigration      = "SuccessfulMigration"
	EventReasonFailedMigration          = "FailedMigration"
	EventReasonSuccessfulHandOver       = "SuccessfulHandOver"
	EventReasonSuccessfulAbortMigration = "SuccessfulAbortMigration"
	EventReasonNodeUnresponsive         = "NodeUnresponsive"
	// Node agent (virt-handler) reasons.
	EventReasonCreated         = "Created"
	EventReasonStarted         = "Started"
	EventReasonShuttingDown    = "ShuttingDown"
	EventReasonStopped         = "Stopped"
	EventReasonDeleted         = "Deleted"
	EventReasonSyncFailed      = "SyncFailed"
	EventReasonMigrating       = "Migrating"
	EventReasonPreparingTarget = "PreparingTarget"
	EventReasonMigrated        = "Migrated"
	EventReasonPaused          = "Paused"
	EventReasonUnpaused        = "Unpaused"
	EventReasonSoftRebooted    = "SoftRebooted"
)

// Reporting controller names of virtkit's components in events.
const (
	ReportingController = "virtkit.io/virt-controller"
	ReportingNodeAgent  = "virtkit.io/virt-handler"
)

// Event reasons and condition reasons of node drains.
const (
	// EventReasonEvicted: a drain shut the VMI down (evictionStrategy None,
	// or LiveMigrateIfPossible on a VMI that cannot migrate), as the
	// eviction of its virt-launcher pod does in KubeVirt.
	EventReasonEvicted = "Evicted"
	// EventReasonFailedEviction: a drain's eviction of the VMI was refused
	// (evictionStrategy LiveMigrate on a VMI that cannot migrate).
	EventReasonFailedEviction = "FailedEviction"
	// EvictionBlockedReason is the reason of EvictionRequested=False on a
	// VMI whose eviction a drain requested and was refused.
	EvictionBlockedReason = "EvictionBlocked"
)

// Migration failure reasons written to status.migrationState.failureReason
// of the migration (and of the VMI where the controller ends a migration).
const (
	MigrationReasonVMIMissing     = "the VMI does not exist"
	MigrationReasonVMIFinal       = "Cannot migrate VMI in finalized state."
	MigrationReasonNotRunning     = "Cannot migrate VMI that is not running"
	MigrationReasonInFlight       = "another migration job is in progress"
	MigrationReasonDeletedEarly   = "Migration was deleted before the target was handed off"
	MigrationReasonTargetDown     = "Target pod is down"
	MigrationReasonStateTakenOver = "VMI's migration state was taken over by another migration job"
	MigrationReasonNotTakenOver   = "the target node agent did not take the VMI over after the migration ended"
	MigrationReasonUnschedulable  = "target node could not be scheduled in time"
	MigrationReasonAborted        = "Live migration has been aborted"
	MigrationReasonSourceMoved    = "the VMI is no longer on the migration's source node"
)
