package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Request names the object to reconcile. It carries only the key, never the
// event that caused it: reconcilers are level-triggered and read the current
// state from the store.
type Request struct {
	Namespace string
	Name      string
}

// String returns "namespace/name" (or "name" for cluster-scoped objects).
func (r Request) String() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// Result tells the runner when to look at the object again.
type Result struct {
	// RequeueAfter, if positive, asks for another reconcile of the same
	// request after this delay even though nothing changed (polling a
	// backoff deadline, for example). Zero means "wait for the next event".
	RequeueAfter time.Duration
}

// Reconciler drives one object towards its desired state.
//
// Reconcile must be idempotent: it may run any number of times for the same
// state. The runner calls it for at most one Request key at a time; calls
// for different keys may run concurrently.
//
// The returned error is part of the contract:
//   - nil: done; the object is looked at again on the next event, resync, or
//     after Result.RequeueAfter.
//   - an error: the request is retried with per-key exponential backoff
//     (Result.RequeueAfter is then ignored).
//   - an error wrapped by [TerminalError]: retrying cannot help (bad spec,
//     impossible request). The runner reports it through
//     Options.OnTerminalError, which records it on the object, and does not
//     retry until the next event.
type Reconciler interface {
	Reconcile(ctx context.Context, req Request) (Result, error)
}

// ReconcilerFunc adapts a function to a Reconciler.
type ReconcilerFunc func(ctx context.Context, req Request) (Result, error)

// Reconcile calls f(ctx, req).
func (f ReconcilerFunc) Reconcile(ctx context.Context, req Request) (Result, error) {
	return f(ctx, req)
}

var _ Reconciler = ReconcilerFunc(nil)

// terminalError marks an error that must not be retried.
type terminalError struct{ err error }

// TerminalError wraps err so that the runner records it and does not retry.
// errors.Is(x, TerminalError(nil)) reports whether x is (or wraps) a
// terminal error; errors.Unwrap gives back err.
func TerminalError(err error) error {
	return &terminalError{err: err}
}

func (e *terminalError) Error() string {
	if e.err == nil {
		return "terminal error"
	}
	return "terminal error: " + e.err.Error()
}

func (e *terminalError) Unwrap() error { return e.err }

// Is makes every terminal error match every other, so that
// errors.Is(err, TerminalError(nil)) detects one anywhere in a chain.
func (e *terminalError) Is(target error) bool {
	_, ok := target.(*terminalError)
	return ok
}

// IsTerminal reports whether err is or wraps a [TerminalError].
func IsTerminal(err error) bool {
	return errors.Is(err, TerminalError(nil))
}

// panicError is what a recovered reconciler panic becomes: an ordinary
// (retried) error, so one bad object cannot take the control plane down.
type panicError struct {
	value any
}

func (e *panicError) Error() string { return fmt.Sprintf("reconciler panicked: %v", e.value) }
