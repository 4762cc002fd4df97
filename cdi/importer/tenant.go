package importer

import (
	"errors"
	"fmt"

	"github.com/virtkit/virtkit/cdi/oci"
	"github.com/virtkit/virtkit/cdi/storage"
)

// publicError is an error whose message for the tenant is built from what
// the tenant gave and what the source answered only; Error() keeps the full
// detail for the node's log.
type publicError struct {
	err error
	msg string
}

func (e *publicError) Error() string { return e.err.Error() }
func (e *publicError) Unwrap() error { return e.err }

// public marks err with a message the tenant may read.
func public(err error, format string, args ...any) error {
	return &publicError{err: err, msg: fmt.Sprintf(format, args...)}
}

// tenantReason is the message of an error that carries none of its own,
// the most specific kind first; "" when err is of no known kind.
func tenantReason(err error) string {
	switch {
	case errors.Is(err, ErrNoSandbox):
		return "the node cannot convert images safely"
	case errors.Is(err, ErrExternalReference):
		return "the image references a file outside itself (a qcow2 backing file or external data file)"
	case errors.Is(err, ErrChecksum):
		return "the download does not match the checksum"
	case errors.Is(err, ErrTooSmall):
		return "the requested size is smaller than the image"
	case errors.Is(err, ErrTooLarge):
		return "the source is larger than the requested size allows"
	case errors.Is(err, ErrNotADisk):
		return "the source is not a disk image"
	case errors.Is(err, ErrAddressNotAllowed):
		return "the source's address is not one the node connects to for tenants"
	case errors.Is(err, ErrNoSource):
		return "no import source"
	case errors.Is(err, storage.ErrUnknownClass):
		return "unknown storage class"
	case errors.Is(err, storage.ErrAccessMode):
		return "the storage class does not offer the access mode"
	case errors.Is(err, ErrUnreachable):
		return "the import source is unreachable"
	case errors.Is(err, ErrBadSource):
		return "the import source is invalid"
	}
	return ""
}

// TenantMessage is what a DataVolume's status and events say about an
// import that failed with err. The error itself goes to the node's log: it
// may name host paths (the scratch space, the target, qemu-img's view of
// them), the node's own addresses (a dial error's local end) or host
// users, none of which a tenant may read. The message keeps what the tenant
// gave and what the source answered (an HTTP status, sizes, a checksum)
// and is otherwise one fixed sentence per kind of failure.
func TenantMessage(err error) string {
	var p *publicError
	if errors.As(err, &p) {
		return p.msg
	}
	if m := tenantReason(err); m != "" {
		return m
	}
	if m := oci.TenantMessage(err); m != "" {
		return m
	}
	return "the import failed on the node (the node's log has the details)"
}
