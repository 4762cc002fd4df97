//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"errors"
	"strings"

	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

// libvirtError is a libvirt error translated to a hypervisor sentinel. It
// matches both the sentinel and the original libvirt.Error (and so its
// ErrorNumber) with errors.Is and errors.As, and prints libvirt's message.
type libvirtError struct {
	sentinel error // nil when no sentinel applies
	cause    lv.Error
}

func (e *libvirtError) Error() string {
	switch {
	case e.cause.Message != "":
		return e.cause.Message
	case e.sentinel != nil:
		return e.sentinel.Error()
	}
	return e.cause.Error()
}

func (e *libvirtError) Unwrap() []error {
	if e.sentinel == nil {
		return []error{e.cause}
	}
	return []error{e.sentinel, e.cause}
}

// translate maps a libvirt error onto the hypervisor sentinels. Errors that
// are not libvirt's pass through unchanged.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var le lv.Error
	if !errors.As(err, &le) {
		return err
	}
	var already *libvirtError
	if errors.As(err, &already) {
		return err
	}
	return &libvirtError{sentinel: sentinelFor(le), cause: le}
}

// mayBeTLS reports whether a failed TLS migration may have failed for TLS:
// libvirt refuses a migration it cannot even start (a configuration the
// destination does not accept, a domain that is not there, an argument it
// rejects) before QEMU opens the stream, and such a failure says so itself.
func mayBeTLS(err error) bool {
	var le lv.Error
	if !errors.As(err, &le) {
		return true
	}
	switch le.Code {
	case lv.ERR_CONFIG_UNSUPPORTED, lv.ERR_XML_ERROR, lv.ERR_INVALID_ARG, lv.ERR_NO_DOMAIN,
		lv.ERR_OPERATION_INVALID, lv.ERR_OPERATION_UNSUPPORTED, lv.ERR_NO_SUPPORT:
		return false
	}
	return true
}

func sentinelFor(le lv.Error) error {
	msg := strings.ToLower(le.Message)
	switch le.Code {
	case lv.ERR_NO_DOMAIN:
		return hypervisor.ErrNotFound
	case lv.ERR_DOM_EXIST:
		return hypervisor.ErrExists
	case lv.ERR_OPERATION_INVALID:
		// "no job is active on the domain", "post-copy can only be
		// started while outgoing migration is in progress".
		if strings.Contains(msg, "no job") || strings.Contains(msg, "migration is in progress") {
			return hypervisor.ErrNoJob
		}
		return hypervisor.ErrInvalidState
	case lv.ERR_NO_SUPPORT, lv.ERR_ARGUMENT_UNSUPPORTED, lv.ERR_OPERATION_UNSUPPORTED:
		if strings.Contains(msg, "agent is not configured") {
			// The domain has no guest-agent channel.
			return hypervisor.ErrAgentUnavailable
		}
		return hypervisor.ErrNotSupported
	case lv.ERR_AGENT_UNRESPONSIVE, lv.ERR_AGENT_UNSYNCED, lv.ERR_AGENT_COMMAND_TIMEOUT:
		return hypervisor.ErrAgentUnavailable
	case lv.ERR_OPERATION_ABORTED:
		return hypervisor.ErrMigrationAborted
	case lv.ERR_XML_ERROR, lv.ERR_XML_DETAIL, lv.ERR_XML_INVALID_SCHEMA, lv.ERR_NO_NAME,
		lv.ERR_NO_OS, lv.ERR_OS_TYPE, lv.ERR_CONFIG_UNSUPPORTED, lv.ERR_NO_KERNEL,
		lv.ERR_NO_ROOT, lv.ERR_NO_SOURCE, lv.ERR_NO_TARGET, lv.ERR_NO_DEVICE:
		return hypervisor.ErrInvalidArgument
	case lv.ERR_INVALID_ARG:
		// virCheckFlags: the driver lacks a flag this call needs.
		if strings.Contains(msg, "unsupported flags") {
			return hypervisor.ErrNotSupported
		}
		return hypervisor.ErrInvalidArgument
	case lv.ERR_OPERATION_FAILED:
		if strings.Contains(msg, "already exists") {
			return hypervisor.ErrExists
		}
	case lv.ERR_NO_CONNECT, lv.ERR_INVALID_CONN, lv.ERR_RPC, lv.ERR_AUTH_FAILED,
		lv.ERR_AUTH_CANCELLED, lv.ERR_AUTH_UNAVAILABLE:
		return hypervisor.ErrConnection
	case lv.ERR_SYSTEM_ERROR:
		if strings.Contains(msg, "connect") || strings.Contains(msg, "socket") {
			return hypervisor.ErrConnection
		}
	case lv.ERR_INTERNAL_ERROR:
		if strings.Contains(msg, "client socket is closed") || strings.Contains(msg, "connection closed") {
			return hypervisor.ErrConnection
		}
		// The test driver reports state conflicts as internal errors
		// ("domain 'x' not running", "... not paused", "... is already
		// running") where the QEMU driver says ERR_OPERATION_INVALID.
		for _, s := range []string{"not running", "not paused", "already running", "is not active"} {
			if strings.Contains(msg, s) {
				return hypervisor.ErrInvalidState
			}
		}
	}
	return nil
}

// wrap translates err and names the domain and operation.
func wrap(op, name string, err error) error {
	if err == nil {
		return nil
	}
	var de *hypervisor.DomainError
	if errors.As(err, &de) {
		return err
	}
	return hypervisor.WrapDomain(op, name, translate(err))
}
