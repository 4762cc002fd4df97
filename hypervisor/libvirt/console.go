//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/virtkit/virtkit/hypervisor"
)

// OpenConsole connects to the running domain's serial console: the unix
// socket QEMU listens on for the first serial port, read from the live
// domain XML. libvirt's own console stream (virDomainOpenConsole) serves
// only pty-backed consoles in its QEMU driver, and the domain builder
// writes a unix socket (as KubeVirt does), so the node agent connects to
// it directly; it must run on the host of its libvirtd. QEMU serves one
// console client at a time: a second one waits until the first leaves.
func (h *Hypervisor) OpenConsole(ctx context.Context, name string) (io.ReadWriteCloser, error) {
	if err := h.requireRunning(ctx, "open console", name); err != nil {
		return nil, err
	}
	return openSocket(ctx, "open console", name, h.XML, consoleSocket)
}

// OpenVNC connects to the running domain's VNC display: the unix socket
// the domain XML declares for its VNC graphics (RFB spoken by QEMU).
func (h *Hypervisor) OpenVNC(ctx context.Context, name string) (io.ReadWriteCloser, error) {
	if err := h.requireRunning(ctx, "open vnc", name); err != nil {
		return nil, err
	}
	return openSocket(ctx, "open vnc", name, h.XML, vncSocket)
}

func (h *Hypervisor) requireRunning(ctx context.Context, op, name string) error {
	st, _, err := h.state(ctx, name)
	if err != nil {
		return err
	}
	if !st.IsActive() {
		return hypervisor.WrapDomain(op, name, hypervisor.ErrInvalidState)
	}
	return nil
}

var (
	_ hypervisor.ConsoleOpener = (*Hypervisor)(nil)
	_ hypervisor.VNCOpener     = (*Hypervisor)(nil)
)

// dialSocket connects to a unix socket under ctx.
func dialSocket(ctx context.Context, op, name, path string) (io.ReadWriteCloser, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, hypervisor.WrapDomain(op, name, fmt.Errorf("%w: %w", hypervisor.ErrConnection, err))
	}
	return c, nil
}

// openSocket reads the live XML with xml, finds the socket with find and
// connects to it.
func openSocket(ctx context.Context, op, name string, xml func(context.Context, string) (string, error),
	find func(string) (string, error)) (io.ReadWriteCloser, error) {
	x, err := xml(ctx, name)
	if err != nil {
		return nil, err
	}
	path, err := find(x)
	if err != nil {
		return nil, hypervisor.WrapDomain(op, name, err)
	}
	return dialSocket(ctx, op, name, path)
}
