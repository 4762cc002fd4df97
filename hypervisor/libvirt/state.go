//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

// domainState maps libvirt's state and per-state reason code.
func domainState(s lv.DomainState, reason int) (hypervisor.DomainState, hypervisor.StateReason) {
	switch s {
	case lv.DOMAIN_RUNNING:
		return hypervisor.StateRunning, runningReason(lv.DomainRunningReason(reason))
	case lv.DOMAIN_BLOCKED:
		return hypervisor.StateBlocked, hypervisor.ReasonUnknown
	case lv.DOMAIN_PAUSED:
		return hypervisor.StatePaused, pausedReason(lv.DomainPausedReason(reason))
	case lv.DOMAIN_SHUTDOWN:
		if lv.DomainShutdownReason(reason) == lv.DOMAIN_SHUTDOWN_USER {
			return hypervisor.StateShutdown, hypervisor.ReasonUser
		}
		return hypervisor.StateShutdown, hypervisor.ReasonUnknown
	case lv.DOMAIN_SHUTOFF:
		return hypervisor.StateShutoff, shutoffReason(lv.DomainShutoffReason(reason))
	case lv.DOMAIN_CRASHED:
		if lv.DomainCrashedReason(reason) == lv.DOMAIN_CRASHED_PANICKED {
			return hypervisor.StateCrashed, hypervisor.ReasonPanicked
		}
		return hypervisor.StateCrashed, hypervisor.ReasonUnknown
	case lv.DOMAIN_PMSUSPENDED:
		return hypervisor.StatePMSuspended, hypervisor.ReasonUnknown
	}
	return hypervisor.StateNoState, hypervisor.ReasonUnknown
}

func runningReason(r lv.DomainRunningReason) hypervisor.StateReason {
	switch r {
	case lv.DOMAIN_RUNNING_BOOTED:
		return hypervisor.ReasonBooted
	case lv.DOMAIN_RUNNING_MIGRATED:
		return hypervisor.ReasonMigrated
	case lv.DOMAIN_RUNNING_RESTORED:
		return hypervisor.ReasonRestored
	case lv.DOMAIN_RUNNING_FROM_SNAPSHOT:
		return hypervisor.ReasonFromSnapshot
	case lv.DOMAIN_RUNNING_UNPAUSED:
		return hypervisor.ReasonUnpaused
	case lv.DOMAIN_RUNNING_MIGRATION_CANCELED:
		return hypervisor.ReasonMigrationCancel
	case lv.DOMAIN_RUNNING_SAVE_CANCELED:
		return hypervisor.ReasonSaveCanceled
	case lv.DOMAIN_RUNNING_WAKEUP:
		return hypervisor.ReasonWakeup
	case lv.DOMAIN_RUNNING_CRASHED:
		return hypervisor.ReasonCrashed
	case lv.DOMAIN_RUNNING_POSTCOPY:
		return hypervisor.ReasonPostcopy
	case lv.DOMAIN_RUNNING_POSTCOPY_FAILED:
		return hypervisor.ReasonPostcopyFailed
	}
	return hypervisor.ReasonUnknown
}

func pausedReason(r lv.DomainPausedReason) hypervisor.StateReason {
	switch r {
	case lv.DOMAIN_PAUSED_USER:
		return hypervisor.ReasonUser
	case lv.DOMAIN_PAUSED_MIGRATION:
		return hypervisor.ReasonMigration
	case lv.DOMAIN_PAUSED_SAVE:
		return hypervisor.ReasonSave
	case lv.DOMAIN_PAUSED_DUMP:
		return hypervisor.ReasonDump
	case lv.DOMAIN_PAUSED_IOERROR:
		return hypervisor.ReasonIOError
	case lv.DOMAIN_PAUSED_WATCHDOG:
		return hypervisor.ReasonWatchdog
	case lv.DOMAIN_PAUSED_FROM_SNAPSHOT, lv.DOMAIN_PAUSED_SNAPSHOT:
		return hypervisor.ReasonFromSnapshot
	case lv.DOMAIN_PAUSED_SHUTTING_DOWN:
		return hypervisor.ReasonShuttingDown
	case lv.DOMAIN_PAUSED_CRASHED:
		return hypervisor.ReasonCrashed
	case lv.DOMAIN_PAUSED_STARTING_UP:
		return hypervisor.ReasonStartingUp
	case lv.DOMAIN_PAUSED_POSTCOPY:
		return hypervisor.ReasonPostcopy
	case lv.DOMAIN_PAUSED_POSTCOPY_FAILED:
		return hypervisor.ReasonPostcopyFailed
	}
	return hypervisor.ReasonUnknown
}

func shutoffReason(r lv.DomainShutoffReason) hypervisor.StateReason {
	switch r {
	case lv.DOMAIN_SHUTOFF_SHUTDOWN:
		return hypervisor.ReasonShutdown
	case lv.DOMAIN_SHUTOFF_DESTROYED:
		return hypervisor.ReasonDestroyed
	case lv.DOMAIN_SHUTOFF_CRASHED:
		return hypervisor.ReasonCrashed
	case lv.DOMAIN_SHUTOFF_MIGRATED:
		return hypervisor.ReasonMigrated
	case lv.DOMAIN_SHUTOFF_SAVED:
		return hypervisor.ReasonSaved
	case lv.DOMAIN_SHUTOFF_FAILED:
		return hypervisor.ReasonFailed
	case lv.DOMAIN_SHUTOFF_FROM_SNAPSHOT:
		return hypervisor.ReasonFromSnapshot
	}
	return hypervisor.ReasonUnknown
}

// lifecycleState maps a lifecycle event to the state the domain is in after
// it, with the reason libvirt records for that state. Defined and undefined
// events change no run state: they map to NoState.
func lifecycleState(ev lv.DomainEventType, detail int) (hypervisor.DomainState, hypervisor.StateReason) {
	switch ev {
	case lv.DOMAIN_EVENT_STARTED:
		switch lv.DomainEventStartedDetailType(detail) {
		case lv.DOMAIN_EVENT_STARTED_BOOTED:
			return hypervisor.StateRunning, hypervisor.ReasonBooted
		case lv.DOMAIN_EVENT_STARTED_MIGRATED:
			return hypervisor.StateRunning, hypervisor.ReasonMigrated
		case lv.DOMAIN_EVENT_STARTED_RESTORED:
			return hypervisor.StateRunning, hypervisor.ReasonRestored
		case lv.DOMAIN_EVENT_STARTED_FROM_SNAPSHOT:
			return hypervisor.StateRunning, hypervisor.ReasonFromSnapshot
		case lv.DOMAIN_EVENT_STARTED_WAKEUP:
			return hypervisor.StateRunning, hypervisor.ReasonWakeup
		}
		return hypervisor.StateRunning, hypervisor.ReasonUnknown
	case lv.DOMAIN_EVENT_SUSPENDED:
		switch lv.DomainEventSuspendedDetailType(detail) {
		case lv.DOMAIN_EVENT_SUSPENDED_PAUSED:
			return hypervisor.StatePaused, hypervisor.ReasonUser
		case lv.DOMAIN_EVENT_SUSPENDED_MIGRATED:
			return hypervisor.StatePaused, hypervisor.ReasonMigration
		case lv.DOMAIN_EVENT_SUSPENDED_IOERROR:
			return hypervisor.StatePaused, hypervisor.ReasonIOError
		case lv.DOMAIN_EVENT_SUSPENDED_WATCHDOG:
			return hypervisor.StatePaused, hypervisor.ReasonWatchdog
		case lv.DOMAIN_EVENT_SUSPENDED_FROM_SNAPSHOT:
			return hypervisor.StatePaused, hypervisor.ReasonFromSnapshot
		case lv.DOMAIN_EVENT_SUSPENDED_POSTCOPY:
			return hypervisor.StatePaused, hypervisor.ReasonPostcopy
		case lv.DOMAIN_EVENT_SUSPENDED_POSTCOPY_FAILED:
			return hypervisor.StatePaused, hypervisor.ReasonPostcopyFailed
		case lv.DOMAIN_EVENT_SUSPENDED_GUEST_SHUTDOWN:
			return hypervisor.StatePaused, hypervisor.ReasonShuttingDown
		}
		return hypervisor.StatePaused, hypervisor.ReasonUnknown
	case lv.DOMAIN_EVENT_RESUMED:
		switch lv.DomainEventResumedDetailType(detail) {
		case lv.DOMAIN_EVENT_RESUMED_UNPAUSED:
			return hypervisor.StateRunning, hypervisor.ReasonUnpaused
		case lv.DOMAIN_EVENT_RESUMED_MIGRATED:
			return hypervisor.StateRunning, hypervisor.ReasonMigrated
		case lv.DOMAIN_EVENT_RESUMED_FROM_SNAPSHOT:
			return hypervisor.StateRunning, hypervisor.ReasonFromSnapshot
		case lv.DOMAIN_EVENT_RESUMED_POSTCOPY:
			return hypervisor.StateRunning, hypervisor.ReasonPostcopy
		case lv.DOMAIN_EVENT_RESUMED_POSTCOPY_FAILED:
			return hypervisor.StateRunning, hypervisor.ReasonPostcopyFailed
		}
		return hypervisor.StateRunning, hypervisor.ReasonUnknown
	case lv.DOMAIN_EVENT_STOPPED:
		switch lv.DomainEventStoppedDetailType(detail) {
		case lv.DOMAIN_EVENT_STOPPED_SHUTDOWN:
			return hypervisor.StateShutoff, hypervisor.ReasonShutdown
		case lv.DOMAIN_EVENT_STOPPED_DESTROYED:
			return hypervisor.StateShutoff, hypervisor.ReasonDestroyed
		case lv.DOMAIN_EVENT_STOPPED_CRASHED:
			return hypervisor.StateShutoff, hypervisor.ReasonCrashed
		case lv.DOMAIN_EVENT_STOPPED_MIGRATED:
			return hypervisor.StateShutoff, hypervisor.ReasonMigrated
		case lv.DOMAIN_EVENT_STOPPED_SAVED:
			return hypervisor.StateShutoff, hypervisor.ReasonSaved
		case lv.DOMAIN_EVENT_STOPPED_FAILED:
			return hypervisor.StateShutoff, hypervisor.ReasonFailed
		case lv.DOMAIN_EVENT_STOPPED_FROM_SNAPSHOT:
			return hypervisor.StateShutoff, hypervisor.ReasonFromSnapshot
		}
		return hypervisor.StateShutoff, hypervisor.ReasonUnknown
	case lv.DOMAIN_EVENT_SHUTDOWN:
		// The guest finished (or began) its shutdown; a Stopped event follows.
		return hypervisor.StateShutdown, hypervisor.ReasonUser
	case lv.DOMAIN_EVENT_PMSUSPENDED:
		return hypervisor.StatePMSuspended, hypervisor.ReasonUnknown
	case lv.DOMAIN_EVENT_CRASHED:
		if lv.DomainEventCrashedDetailType(detail) == lv.DOMAIN_EVENT_CRASHED_PANICKED {
			return hypervisor.StateCrashed, hypervisor.ReasonPanicked
		}
		return hypervisor.StateCrashed, hypervisor.ReasonCrashed
	}
	return hypervisor.StateNoState, hypervisor.ReasonUnknown
}
