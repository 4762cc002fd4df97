//go:build !cgo || !(libvirt || libvirt_dlopen)

package libvirt

import (
	"context"

	"github.com/virtkit/virtkit/hypervisor"
)

// SetVCPUs needs the libvirt adapter (see [Hypervisor]).
func (h *Hypervisor) SetVCPUs(context.Context, string, int) error { return errNoCgo("SetVCPUs") }

// PluggableMemory needs the libvirt adapter (see [Hypervisor]).
func (h *Hypervisor) PluggableMemory(context.Context, string) (hypervisor.PluggableMemory, error) {
	return hypervisor.PluggableMemory{}, errNoCgo("PluggableMemory")
}

// RequestPluggableMemory needs the libvirt adapter (see [Hypervisor]).
func (h *Hypervisor) RequestPluggableMemory(context.Context, string, uint64) error {
	return errNoCgo("RequestPluggableMemory")
}
