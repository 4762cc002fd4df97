//go:build cgo

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
	if e.cause.Message == "" {
		return e.sentinel.Error()
	}
	return e.cause.Message
}

func (e *libvirtError) Unwrap() []error {
	if e.sentinel == nil {
		return []error{e.cause}
	}
	return []error{e.sentinel, e.cause}
}

// jobOps are the operations whose ERR_OPERATION_INVALID means "no job".
var jobOps = map[string]bool{
	"abort job": true, "set max downtime": true, "set max speed": true,
	"start post-copy": true, "job stats": true,
}

// translate maps a libvirt error onto the hypervisor sentinels. Errors that
// are not libvirt's pass through unchanged.
func translate(err error) error { return translateOp("", err) }

func translateOp(op string, err error) error {
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
	return &libvirtError{sentinel: sentinelFor(op, le), cause: le}
}

func sentinelFor(op string, le lv.Error) error {
	msg := strings.ToLower(le.Message)
	switch le.Code {
	case lv.ERR_NO_DOMAIN:
		return hypervisor.ErrNotFound
	case lv.ERR_DOM_EXIST:
		return hypervisor.ErrExists
	case lv.ERR_OPERATION_INVALID:
		if jobOps[op] || strings.Contains(msg, "no job") {
			return hypervisor.ErrNoJob
		}
		return hypervisor.ErrInvalidState
	case lv.ERR_NO_SUPPORT, lv.ERR_ARGUMENT_UNSUPPORTED, lv.ERR_OPERATION_UNSUPPORTED:
		if op == "agent command" && strings.Contains(msg, "agent") {
			// "QEMU guest agent is not configured": no channel.
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
		if jobOps[op] && strings.Contains(msg, "not active") {
			return hypervisor.ErrNoJob
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
	return hypervisor.WrapDomain(op, name, translateOp(op, err))
}
