package hypervisor

// DomainState is libvirt's domain state (virDomainState).
type DomainState string

const (
	StateNoState     DomainState = "NoState"
	StateRunning     DomainState = "Running"
	StateBlocked     DomainState = "Blocked"
	StatePaused      DomainState = "Paused"
	StateShutdown    DomainState = "Shutdown" // being shut down
	StateShutoff     DomainState = "Shutoff"
	StateCrashed     DomainState = "Crashed"
	StatePMSuspended DomainState = "PMSuspended"
)

// StateReason is why a domain is in its state (libvirt's per-state reason
// enums, flattened; the names are libvirt's).
type StateReason string

const (
	ReasonUnknown StateReason = "Unknown"

	// Running.
	ReasonBooted          StateReason = "Booted"
	ReasonMigrated        StateReason = "Migrated" // running: arrived by migration; shutoff: left by migration
	ReasonRestored        StateReason = "Restored"
	ReasonFromSnapshot    StateReason = "FromSnapshot"
	ReasonUnpaused        StateReason = "Unpaused"
	ReasonMigrationCancel StateReason = "MigrationCanceled"
	ReasonSaveCanceled    StateReason = "SaveCanceled"
	ReasonWakeup          StateReason = "Wakeup"
	ReasonPostcopy        StateReason = "Postcopy" // running or paused in post-copy

	// Paused.
	ReasonUser           StateReason = "User"
	ReasonMigration      StateReason = "Migration"
	ReasonSave           StateReason = "Save"
	ReasonDump           StateReason = "Dump"
	ReasonIOError        StateReason = "IOError"
	ReasonWatchdog       StateReason = "Watchdog"
	ReasonShuttingDown   StateReason = "ShuttingDown"
	ReasonStartingUp     StateReason = "StartingUp"
	ReasonPostcopyFailed StateReason = "PostcopyFailed"

	// Shutoff.
	ReasonShutdown  StateReason = "Shutdown"
	ReasonDestroyed StateReason = "Destroyed"
	ReasonCrashed   StateReason = "Crashed"
	ReasonSaved     StateReason = "Saved"
	ReasonFailed    StateReason = "Failed"
	ReasonPanicked  StateReason = "Panicked"
)

// IsActive reports whether the domain has a running QEMU process (any state
// but shut off / no state).
func (s DomainState) IsActive() bool {
	switch s {
	case StateRunning, StateBlocked, StatePaused, StateShutdown, StatePMSuspended:
		return true
	}
	return false
}
