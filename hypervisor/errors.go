package hypervisor

import (
	"errors"
	"fmt"
)

// Sentinel errors. Backends wrap them (usually in a [*DomainError]); callers
// test with [errors.Is].
var (
	// ErrNotFound: no domain with that name on this host.
	ErrNotFound = errors.New("domain not found")
	// ErrExists: a domain with that name or UUID is already defined differently.
	ErrExists = errors.New("domain already exists")
	// ErrInvalidState: the operation is not valid in the domain's current state
	// (pausing a domain that is shut off, starting one that runs).
	ErrInvalidState = errors.New("operation invalid in the domain's current state")
	// ErrNotSupported: this backend or host cannot do it. The wrapping error
	// names the feature.
	ErrNotSupported = errors.New("not supported")
	// ErrAgentUnavailable: the guest agent is not connected or did not answer.
	ErrAgentUnavailable = errors.New("guest agent unavailable")
	// ErrNoJob: there is no job (migration, dirty-rate calculation) to act on.
	ErrNoJob = errors.New("no active job")
	// ErrMigrationFailed: a migration job ended without moving the guest.
	ErrMigrationFailed = errors.New("migration failed")
	// ErrMigrationAborted: a migration job was cancelled; the source keeps running.
	ErrMigrationAborted = errors.New("migration aborted")
	// ErrInvalidArgument: the caller passed something the backend rejects
	// (malformed XML, unknown parameter).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrConnection: the backend's connection to the host is broken.
	ErrConnection = errors.New("hypervisor connection failed")
)

// DomainError names the domain and the operation an error is about and wraps
// the cause, which matches one of the sentinels above where one applies.
type DomainError struct {
	Op     string // "start", "migrate", ...
	Domain string // libvirt domain name, e.g. "default_testvm"
	Err    error
}

func (e *DomainError) Error() string {
	if e.Domain == "" {
		return fmt.Sprintf("%s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("%s domain %q: %v", e.Op, e.Domain, e.Err)
}

func (e *DomainError) Unwrap() error { return e.Err }

// WrapDomain returns err wrapped in a [*DomainError], or nil when err is nil.
func WrapDomain(op, domain string, err error) error {
	if err == nil {
		return nil
	}
	return &DomainError{Op: op, Domain: domain, Err: err}
}

// NotSupportedError returns an error matching [ErrNotSupported] that names the
// feature and, if known, what would provide it.
func NotSupportedError(feature, detail string) error {
	if detail == "" {
		return fmt.Errorf("%s: %w", feature, ErrNotSupported)
	}
	return fmt.Errorf("%s: %w (%s)", feature, ErrNotSupported, detail)
}
