//go:build !cgo || !(libvirt || libvirt_dlopen)

package libvirt

import (
	"context"

	"github.com/virtkit/virtkit/hypervisor"
)

var _ hypervisor.DeviceAttacher = (*Hypervisor)(nil)

// AttachDevice fails: see [New].
func (h *Hypervisor) AttachDevice(context.Context, string, string) error {
	return errNoCgo("AttachDevice")
}

// DetachDevice fails: see [New].
func (h *Hypervisor) DetachDevice(context.Context, string, string) error {
	return errNoCgo("DetachDevice")
}
