package hypervisor

import "time"

// MigrationParams are the knobs of one live migration (libvirt's
// VIR_MIGRATE_PARAM_* and flags).
type MigrationParams struct {
	// DestinationURI addresses the target host: a libvirt URI
	// ("qemu+tcp://127.0.0.1:16510/system") or, on sim, the target host's name.
	DestinationURI string
	// MigrateURI is the data connection ("tcp://127.0.0.1:49152"); empty lets
	// the backend choose.
	MigrateURI string
	// DestinationXML replaces the domain XML on the target, if set.
	DestinationXML string
	// Bandwidth caps the transfer in bytes per second; 0 = unlimited.
	Bandwidth uint64
	// DowntimeLimit bounds the final pause; 0 = the backend default (QEMU 300 ms).
	DowntimeLimit time.Duration
	// AutoConverge lets the hypervisor throttle vCPUs when pre-copy does not
	// converge, starting at AutoConvergeInitial percent and adding
	// AutoConvergeIncrement each time (0 = QEMU's 20 and 10).
	AutoConverge          bool
	AutoConvergeInitial   int
	AutoConvergeIncrement int
	// PostCopy enables post-copy, so StartPostCopy can switch to it.
	PostCopy bool
	// ParallelConnections > 1 enables multifd with that many connections.
	// Backends may ignore it for a job with PostCopy (QEMU 7.2 cannot switch
	// a multifd migration to post-copy).
	ParallelConnections int
	// TLS encrypts the migration stream (libvirt's VIR_MIGRATE_TLS, with the
	// hosts' migration certificates). A backend that cannot set it up fails
	// the start; it never falls back to clear text.
	TLS bool
	// Persist defines the domain on the target; UndefineSource removes the
	// source's definition once the migration succeeded.
	Persist        bool
	UndefineSource bool
	// Unsafe migrates although the hypervisor deems the guest's disks
	// unsafe to migrate (libvirt's VIR_MIGRATE_UNSAFE: a writable disk on a
	// filesystem libvirt does not know to be shared, or cached): KubeVirt's
	// migrations.unsafeMigrationOverride, for storage every host shares
	// that the hypervisor cannot recognise as such.
	Unsafe bool
	// CopyDisks are the target devices ("vda") of the disks whose contents
	// the migration copies to the target while memory moves (libvirt's
	// VIR_MIGRATE_NON_SHARED_DISK with the migrate_disks list): a volume
	// migration, where DestinationXML points those disks at new storage
	// the target can write. Every other disk is shared storage both hosts
	// see. Empty copies no disk.
	CopyDisks []string
}

// MigrationMode is how the job moves memory.
type MigrationMode string

const (
	ModePreCopy  MigrationMode = "PreCopy"
	ModePostCopy MigrationMode = "PostCopy"
)

// JobType is libvirt's job type.
type JobType string

const (
	JobNone      JobType = "None"
	JobUnbounded JobType = "Unbounded" // running
	JobCompleted JobType = "Completed"
	JobFailed    JobType = "Failed"
	JobCancelled JobType = "Cancelled"
)

// JobStats are a migration job's counters (virDomainGetJobStats). Sizes in
// bytes, rates in bytes per second.
type JobStats struct {
	Type    JobType
	Mode    MigrationMode
	Elapsed Measured[time.Duration]

	DataTotal     Measured[uint64]
	DataProcessed Measured[uint64]
	DataRemaining Measured[uint64]

	MemoryTotal     Measured[uint64]
	MemoryProcessed Measured[uint64]
	MemoryRemaining Measured[uint64]
	// MemoryDirtyRate is bytes dirtied per second as QEMU measures it during
	// the job (pages/s x page size).
	MemoryDirtyRate Measured[uint64]
	// MemoryBps is the current transfer rate.
	MemoryBps       Measured[uint64]
	MemoryIteration Measured[uint64]
	// MemoryConstant is the memory found filled with one byte value (zero
	// pages, for the most part), in bytes: pre-copy sends such a page as a
	// header, not its contents, so it is in MemoryRemaining until a pass
	// reaches it but costs no bandwidth (libvirt's memory_constant pages).
	MemoryConstant Measured[uint64]
	// Downtime is the expected downtime while running, the actual one once
	// completed.
	Downtime Measured[time.Duration]
	// SetupTime is the time spent before the first byte moved.
	SetupTime Measured[time.Duration]
	// AutoConvergeThrottle is the current vCPU throttle in percent.
	AutoConvergeThrottle Measured[int64]
	// PostcopyRequests counts page faults served from the source.
	PostcopyRequests Measured[uint64]
	// DiskTotal, DiskProcessed and DiskRemaining count the disk data a
	// migration with CopyDisks copies (also in the Data counters); unset
	// when no disk is copied.
	DiskTotal     Measured[uint64]
	DiskProcessed Measured[uint64]
	DiskRemaining Measured[uint64]
}

// MigrationResult is how a migration job ended.
type MigrationResult struct {
	Succeeded bool
	Aborted   bool
	Mode      MigrationMode
	// Started and Ended are the backend's clock.
	Started time.Time
	Ended   time.Time
	// Final counters (Downtime is the actual downtime).
	Stats JobStats
	// Reason explains a failure or abort.
	Reason string
}
