package libvirt

import (
	"fmt"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hypervisor"
)

// consoleSocket returns the host unix socket of the domain's first serial
// port, as the domain XML declares it (virtkit's domain builder writes a
// unix socket QEMU listens on, as KubeVirt does).
func consoleSocket(domainXML string) (string, error) {
	var d libvirtxml.Domain
	if err := d.Unmarshal(domainXML); err != nil {
		return "", fmt.Errorf("%w: domain XML: %w", hypervisor.ErrInvalidArgument, err)
	}
	if d.Devices == nil || len(d.Devices.Serials) == 0 {
		return "", hypervisor.NotSupportedError("OpenConsole", "the domain has no serial port (autoattachSerialConsole is false)")
	}
	s := d.Devices.Serials[0]
	if s.Source == nil || s.Source.UNIX == nil || s.Source.UNIX.Path == "" {
		return "", hypervisor.NotSupportedError("OpenConsole", "the first serial port is not a unix socket")
	}
	if s.Source.UNIX.Mode != "" && s.Source.UNIX.Mode != "bind" {
		return "", hypervisor.NotSupportedError("OpenConsole", "the serial port's unix socket is not one QEMU listens on (mode "+s.Source.UNIX.Mode+")")
	}
	return s.Source.UNIX.Path, nil
}

// vncSocket returns the host unix socket of the domain's VNC display.
func vncSocket(domainXML string) (string, error) {
	var d libvirtxml.Domain
	if err := d.Unmarshal(domainXML); err != nil {
		return "", fmt.Errorf("%w: domain XML: %w", hypervisor.ErrInvalidArgument, err)
	}
	if d.Devices != nil {
		for _, g := range d.Devices.Graphics {
			if g.VNC == nil {
				continue
			}
			if g.VNC.Socket != "" {
				return g.VNC.Socket, nil
			}
			for _, l := range g.VNC.Listeners {
				if l.Socket != nil && l.Socket.Socket != "" {
					return l.Socket.Socket, nil
				}
			}
			return "", hypervisor.NotSupportedError("OpenVNC", "the domain's VNC display does not listen on a unix socket")
		}
	}
	return "", hypervisor.NotSupportedError("OpenVNC", "the domain has no VNC display (autoattachGraphicsDevice is false)")
}
