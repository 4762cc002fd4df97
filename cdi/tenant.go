package cdi

import "fmt"

// pullError is a failed containerDisk pull: Error() for the node's log,
// TenantMessage for the VMI's status and events (the node agent reads it
// through that method), without the node's cache paths, pull-secret files
// or addresses.
type pullError struct {
	err error
	msg string
}

func (e *pullError) Error() string { return e.err.Error() }
func (e *pullError) Unwrap() error { return e.err }

// TenantMessage is what the tenant may read about the failure.
func (e *pullError) TenantMessage() string { return e.msg }

func pullFailed(err error, format string, args ...any) error {
	return &pullError{err: err, msg: fmt.Sprintf(format, args...)}
}
