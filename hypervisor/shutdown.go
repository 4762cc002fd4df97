package hypervisor

import "context"

// ShutdownRequester presses the guest's power button and returns at once
// (libvirt's virDomainShutdown): RequestShutdown signals the guest to power
// off (ACPI) and does not wait. Whether and when the guest halts is up to
// the guest; when it does, the domain turns Shutoff with ReasonShutdown and
// a lifecycle event says so. A guest still booting, hung or without an ACPI
// handler misses the request and keeps running until it is asked again or
// destroyed, so callers repeat the request while they wait.
//
// RequestShutdown of a domain that is not running returns an error matching
// ErrInvalidState; of an unknown one, ErrNotFound.
type ShutdownRequester interface {
	RequestShutdown(ctx context.Context, name string) error
}
