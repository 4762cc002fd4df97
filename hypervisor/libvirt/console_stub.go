//go:build !cgo || !(libvirt || libvirt_dlopen)

package libvirt

import (
	"context"
	"io"
)

// OpenConsole needs the cgo libvirt bindings.
func (h *Hypervisor) OpenConsole(context.Context, string) (io.ReadWriteCloser, error) {
	return nil, errNoCgo("OpenConsole")
}

// OpenVNC needs the cgo libvirt bindings.
func (h *Hypervisor) OpenVNC(context.Context, string) (io.ReadWriteCloser, error) {
	return nil, errNoCgo("OpenVNC")
}
