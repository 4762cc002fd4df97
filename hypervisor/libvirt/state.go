//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

// reasonOf looks a libvirt reason or event detail up in a table; codes the
// table does not name are ReasonUnknown.
func reasonOf[K comparable](table map[K]hypervisor.StateReason, code K) hypervisor.StateReason {
	if r, ok := table[code]; ok {
		return r
	}
	return hypervisor.ReasonUnknown
}

// domainState maps libvirt's state and per-state reason code.
func domainState(s lv.DomainState, reason int) (hypervisor.DomainState, hypervisor.StateReason) {
	switch s {
	case lv.DOMAIN_RUNNING:
		return hypervisor.StateRunning, reasonOf(runningReasons, lv.DomainRunningReason(reason))
	case lv.DOMAIN_BLOCKED:
		return hypervisor.StateBlocked, hypervisor.ReasonUnknown
	case lv.DOMAIN_PAUSED:
		return hypervisor.StatePaused, reasonOf(pausedReasons, lv.DomainPausedReason(reason))
	case lv.DOMAIN_SHUTDOWN:
		if lv.DomainShutdownReason(reason) == lv.DOMAIN_SHUTDOWN_USER {
			return hypervisor.StateShutdown, hypervisor.ReasonUser
		}
		return hypervisor.StateShutdown, hypervisor.ReasonUnknown
	case lv.DOMAIN_SHUTOFF:
		return hypervisor.StateShutoff, reasonOf(shutoffReasons, lv.DomainShutoffReason(reason))
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

var runningReasons = map[lv.DomainRunningReason]hypervisor.StateReason{
	lv.DOMAIN_RUNNING_BOOTED:             hypervisor.ReasonBooted,
	lv.DOMAIN_RUNNING_MIGRATED:           hypervisor.ReasonMigrated,
	lv.DOMAIN_RUNNING_RESTORED:           hypervisor.ReasonRestored,
	lv.DOMAIN_RUNNING_FROM_SNAPSHOT:      hypervisor.ReasonFromSnapshot,
	lv.DOMAIN_RUNNING_UNPAUSED:           hypervisor.ReasonUnpaused,
	lv.DOMAIN_RUNNING_MIGRATION_CANCELED: hypervisor.ReasonMigrationCancel,
	lv.DOMAIN_RUNNING_SAVE_CANCELED:      hypervisor.ReasonSaveCanceled,
	lv.DOMAIN_RUNNING_WAKEUP:             hypervisor.ReasonWakeup,
	lv.DOMAIN_RUNNING_CRASHED:            hypervisor.ReasonCrashed,
	lv.DOMAIN_RUNNING_POSTCOPY:           hypervisor.ReasonPostcopy,
	lv.DOMAIN_RUNNING_POSTCOPY_FAILED:    hypervisor.ReasonPostcopyFailed,
}

var pausedReasons = map[lv.DomainPausedReason]hypervisor.StateReason{
	lv.DOMAIN_PAUSED_USER:            hypervisor.ReasonUser,
	lv.DOMAIN_PAUSED_MIGRATION:       hypervisor.ReasonMigration,
	lv.DOMAIN_PAUSED_SAVE:            hypervisor.ReasonSave,
	lv.DOMAIN_PAUSED_DUMP:            hypervisor.ReasonDump,
	lv.DOMAIN_PAUSED_IOERROR:         hypervisor.ReasonIOError,
	lv.DOMAIN_PAUSED_WATCHDOG:        hypervisor.ReasonWatchdog,
	lv.DOMAIN_PAUSED_FROM_SNAPSHOT:   hypervisor.ReasonFromSnapshot,
	lv.DOMAIN_PAUSED_SNAPSHOT:        hypervisor.ReasonFromSnapshot,
	lv.DOMAIN_PAUSED_SHUTTING_DOWN:   hypervisor.ReasonShuttingDown,
	lv.DOMAIN_PAUSED_CRASHED:         hypervisor.ReasonCrashed,
	lv.DOMAIN_PAUSED_STARTING_UP:     hypervisor.ReasonStartingUp,
	lv.DOMAIN_PAUSED_POSTCOPY:        hypervisor.ReasonPostcopy,
	lv.DOMAIN_PAUSED_POSTCOPY_FAILED: hypervisor.ReasonPostcopyFailed,
}

var shutoffReasons = map[lv.DomainShutoffReason]hypervisor.StateReason{
	lv.DOMAIN_SHUTOFF_SHUTDOWN:      hypervisor.ReasonShutdown,
	lv.DOMAIN_SHUTOFF_DESTROYED:     hypervisor.ReasonDestroyed,
	lv.DOMAIN_SHUTOFF_CRASHED:       hypervisor.ReasonCrashed,
	lv.DOMAIN_SHUTOFF_MIGRATED:      hypervisor.ReasonMigrated,
	lv.DOMAIN_SHUTOFF_SAVED:         hypervisor.ReasonSaved,
	lv.DOMAIN_SHUTOFF_FAILED:        hypervisor.ReasonFailed,
	lv.DOMAIN_SHUTOFF_FROM_SNAPSHOT: hypervisor.ReasonFromSnapshot,
}

// The reason each lifecycle event's details record, per event.
var (
	startedReasons = map[lv.DomainEventStartedDetailType]hypervisor.StateReason{
		lv.DOMAIN_EVENT_STARTED_BOOTED:        hypervisor.ReasonBooted,
		lv.DOMAIN_EVENT_STARTED_MIGRATED:      hypervisor.ReasonMigrated,
		lv.DOMAIN_EVENT_STARTED_RESTORED:      hypervisor.ReasonRestored,
		lv.DOMAIN_EVENT_STARTED_FROM_SNAPSHOT: hypervisor.ReasonFromSnapshot,
		lv.DOMAIN_EVENT_STARTED_WAKEUP:        hypervisor.ReasonWakeup,
	}
	suspendedReasons = map[lv.DomainEventSuspendedDetailType]hypervisor.StateReason{
		lv.DOMAIN_EVENT_SUSPENDED_PAUSED:          hypervisor.ReasonUser,
		lv.DOMAIN_EVENT_SUSPENDED_MIGRATED:        hypervisor.ReasonMigration,
		lv.DOMAIN_EVENT_SUSPENDED_IOERROR:         hypervisor.ReasonIOError,
		lv.DOMAIN_EVENT_SUSPENDED_WATCHDOG:        hypervisor.ReasonWatchdog,
		lv.DOMAIN_EVENT_SUSPENDED_FROM_SNAPSHOT:   hypervisor.ReasonFromSnapshot,
		lv.DOMAIN_EVENT_SUSPENDED_POSTCOPY:        hypervisor.ReasonPostcopy,
		lv.DOMAIN_EVENT_SUSPENDED_POSTCOPY_FAILED: hypervisor.ReasonPostcopyFailed,
		lv.DOMAIN_EVENT_SUSPENDED_GUEST_SHUTDOWN:  hypervisor.ReasonShuttingDown,
	}
	resumedReasons = map[lv.DomainEventResumedDetailType]hypervisor.StateReason{
		lv.DOMAIN_EVENT_RESUMED_UNPAUSED:        hypervisor.ReasonUnpaused,
		lv.DOMAIN_EVENT_RESUMED_MIGRATED:        hypervisor.ReasonMigrated,
		lv.DOMAIN_EVENT_RESUMED_FROM_SNAPSHOT:   hypervisor.ReasonFromSnapshot,
		lv.DOMAIN_EVENT_RESUMED_POSTCOPY:        hypervisor.ReasonPostcopy,
		lv.DOMAIN_EVENT_RESUMED_POSTCOPY_FAILED: hypervisor.ReasonPostcopyFailed,
	}
	stoppedReasons = map[lv.DomainEventStoppedDetailType]hypervisor.StateReason{
		lv.DOMAIN_EVENT_STOPPED_SHUTDOWN:      hypervisor.ReasonShutdown,
		lv.DOMAIN_EVENT_STOPPED_DESTROYED:     hypervisor.ReasonDestroyed,
		lv.DOMAIN_EVENT_STOPPED_CRASHED:       hypervisor.ReasonCrashed,
		lv.DOMAIN_EVENT_STOPPED_MIGRATED:      hypervisor.ReasonMigrated,
		lv.DOMAIN_EVENT_STOPPED_SAVED:         hypervisor.ReasonSaved,
		lv.DOMAIN_EVENT_STOPPED_FAILED:        hypervisor.ReasonFailed,
		lv.DOMAIN_EVENT_STOPPED_FROM_SNAPSHOT: hypervisor.ReasonFromSnapshot,
	}
)

// lifecycleState maps a lifecycle event to the state the domain is in after
// it, with the reason libvirt records for that state. Defined and undefined
// events change no run state: they map to NoState.
func lifecycleState(ev lv.DomainEventType, detail int) (hypervisor.DomainState, hypervisor.StateReason) {
	switch ev {
	case lv.DOMAIN_EVENT_STARTED:
		return hypervisor.StateRunning, reasonOf(startedReasons, lv.DomainEventStartedDetailType(detail))
	case lv.DOMAIN_EVENT_SUSPENDED:
		return hypervisor.StatePaused, reasonOf(suspendedReasons, lv.DomainEventSuspendedDetailType(detail))
	case lv.DOMAIN_EVENT_RESUMED:
		return hypervisor.StateRunning, reasonOf(resumedReasons, lv.DomainEventResumedDetailType(detail))
	case lv.DOMAIN_EVENT_STOPPED:
		return hypervisor.StateShutoff, reasonOf(stoppedReasons, lv.DomainEventStoppedDetailType(detail))
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
