package hypervisor

import (
	"context"
	"time"
)

// Hypervisor is one host's domain manager. Domains are addressed by their
// libvirt name (virtkit uses "<namespace>_<name>").
//
// Every method honours ctx: a backend whose underlying call takes no context
// (libvirt's C API) runs it under the ctx deadline and returns ctx.Err() when
// the deadline passes. Implementations are safe for concurrent use.
type Hypervisor interface {
	// Host describes the machine: identity and capacity.
	Host(ctx context.Context) (HostInfo, error)

	// Define makes a persistent domain from libvirt domain XML, replacing the
	// definition of an existing domain with the same name and UUID. It returns
	// the domain's name and UUID as the backend recorded them.
	Define(ctx context.Context, domainXML string) (DomainID, error)
	// Undefine removes a domain's persistent definition. A running domain
	// keeps running as a transient one until it stops.
	Undefine(ctx context.Context, name string) error

	// Start boots a defined domain; with Paused it stays paused after start
	// (the VMI's startStrategy: Paused).
	Start(ctx context.Context, name string, opts StartOptions) error
	// Shutdown asks the guest to power off (ACPI) and waits until the domain
	// is shut off or ctx ends; on ctx end it returns ctx.Err() and the guest
	// may still be running (callers then Destroy).
	Shutdown(ctx context.Context, name string) error
	// Reboot asks the guest to reboot (ACPI).
	Reboot(ctx context.Context, name string) error
	// Destroy stops the domain at once (power cut). Destroying a domain that
	// is not running returns an error matching ErrInvalidState.
	Destroy(ctx context.Context, name string) error
	// Pause suspends the vCPUs; Resume continues them.
	Pause(ctx context.Context, name string) error
	Resume(ctx context.Context, name string) error

	// List returns every domain on the host, defined or running.
	List(ctx context.Context) ([]DomainInfo, error)
	// Info returns one domain's state, reason and sizes.
	Info(ctx context.Context, name string) (DomainInfo, error)
	// XML returns the live domain XML (with the addresses, aliases and
	// socket paths the backend filled in).
	XML(ctx context.Context, name string) (string, error)
	// Stats returns the domain's counters. Values the backend did not
	// measure stay invalid (see [Measured]).
	Stats(ctx context.Context, name string) (DomainStats, error)

	// Events delivers lifecycle, agent and migration events for every domain
	// on the host until ctx ends, then closes the channel. A slow reader may
	// miss events (the channel is buffered; overflow drops the oldest), so
	// consumers treat events as hints and re-read state.
	Events(ctx context.Context) (<-chan Event, error)
}

// DirtyRateMeasurer measures how fast a running guest dirties its memory
// (libvirt's page sampling; the memory model on sim).
type DirtyRateMeasurer interface {
	// MeasureDirtyRate samples for period (rounded by the backend, libvirt
	// takes whole seconds) and blocks until the result is in or ctx ends.
	MeasureDirtyRate(ctx context.Context, name string, period time.Duration) (DirtyRate, error)
}

// Migrator starts live migrations of a domain to another host.
type Migrator interface {
	// StartMigration begins moving the domain and returns once the job runs.
	// The job continues after StartMigration returns; ctx bounds only the
	// start. Use the returned job to watch and steer it.
	StartMigration(ctx context.Context, name string, params MigrationParams) (MigrationJob, error)
}

// MigrationJob is a running migration of one domain, seen from the source.
type MigrationJob interface {
	// Stats returns the job's counters now.
	Stats(ctx context.Context) (JobStats, error)
	// Abort cancels the job; the guest keeps running on the source. Abort
	// after post-copy has started returns an error matching ErrInvalidState.
	Abort(ctx context.Context) error
	// SetMaxDowntime changes the downtime limit used for the switchover.
	SetMaxDowntime(ctx context.Context, d time.Duration) error
	// SetMaxSpeed caps the bandwidth in bytes per second (0 = unlimited).
	SetMaxSpeed(ctx context.Context, bytesPerSecond uint64) error
	// StartPostCopy switches a job started with PostCopy enabled to
	// post-copy mode.
	StartPostCopy(ctx context.Context) error
	// Done is closed when the job has ended; Result then tells how.
	Done() <-chan struct{}
	// Result blocks until the job has ended or ctx ends and returns the
	// outcome. A failed or aborted job returns its MigrationResult together
	// with an error matching ErrMigrationFailed or ErrMigrationAborted.
	Result(ctx context.Context) (MigrationResult, error)
}

// Throttler sets the guest's vCPU throttle during a migration (QEMU's
// auto-converge knob) directly, rather than by QEMU's fixed 20 %+10 % steps.
type Throttler interface {
	SetThrottle(ctx context.Context, percent int) error
}

// AgentCommander passes a raw guest-agent command to the guest and returns
// the raw reply (libvirt's virDomainQemuAgentCommand). The reply is
// guest-controlled: callers bound and validate it. The signature matches
// guestagent's passthrough transport, so neither package imports the other.
type AgentCommander interface {
	AgentCommand(ctx context.Context, domain string, command string) (string, error)
}

// StartOptions modifies Start.
type StartOptions struct {
	Paused bool
}

// DomainID is a domain's identity on a host.
type DomainID struct {
	Name string
	UUID string
}

// HostInfo describes the machine a hypervisor runs on.
type HostInfo struct {
	Hostname    string
	UUID        string
	Arch        string // "x86_64"
	CPUs        int
	MemoryBytes uint64
	// Model is the backend: "sim", "qemu", "test".
	Model string
}

// DomainInfo is a domain's identity, state and sizes.
type DomainInfo struct {
	DomainID
	State  DomainState
	Reason StateReason
	// Persistent is false for transient domains.
	Persistent bool
	VCPUs      int
	// MemoryBytes is the current balloon size; MaxMemoryBytes the maximum.
	MemoryBytes    uint64
	MaxMemoryBytes uint64
	CPUTime        Measured[time.Duration]
	// Agent is the state of the guest-agent channel.
	Agent ChannelState
}

// ChannelState is the state of a virtio-serial channel such as the
// guest-agent channel org.qemu.guest_agent.0.
type ChannelState string

const (
	ChannelUnknown      ChannelState = ""
	ChannelConnected    ChannelState = "connected"
	ChannelDisconnected ChannelState = "disconnected"
)

// DirtyRate is a dirty-rate measurement.
type DirtyRate struct {
	BytesPerSecond uint64
	Period         time.Duration
	MeasuredAt     time.Time
	// Method is how it was measured: "page-sampling", "model".
	Method string
}

// Event is something that happened to a domain.
type Event struct {
	Domain string
	UUID   string
	Time   time.Time
	Kind   EventKind
	// State and Reason for lifecycle events.
	State  DomainState
	Reason StateReason
	// Agent is the channel state for agent events.
	Agent ChannelState
	// Iteration for migration-iteration events.
	Iteration int
}

// EventKind classifies events.
type EventKind string

const (
	EventLifecycle          EventKind = "Lifecycle"
	EventAgentLifecycle     EventKind = "AgentLifecycle"
	EventMigrationIteration EventKind = "MigrationIteration"
	EventJobCompleted       EventKind = "JobCompleted"
)
