package domain

import (
	"fmt"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
)

// Binding names the builder gives the bindings beside bridge, masquerade
// and sriov.
const (
	bindingPasst  = "passtBinding"
	bindingPlugin = "binding"
)

// passtInterface makes a user-mode interface a passt one: libvirt starts
// passt for the domain, which gives the guest the node's address and
// forwards the interface's ports (all TCP and UDP ports when none are
// listed), as KubeVirt forwards them. KubeVirt attaches passt over
// vhost-user to a device of its launcher pod; a virtkit node has no pod,
// so libvirt's own passt backend (libvirt 9.0 or newer) is used.
func passtInterface(out *libvirtxml.DomainInterface, ports []virtkit.Port) {
	out.Backend = &libvirtxml.DomainInterfaceBackend{Type: "passt"}
	var tcp, udp []libvirtxml.DomainInterfaceSourcePortForwardRange
	for _, p := range ports {
		if p.Port <= 0 {
			continue // refused by validation
		}
		r := libvirtxml.DomainInterfaceSourcePortForwardRange{Start: uint(p.Port)}
		switch {
		case p.Protocol == "" || strings.EqualFold(p.Protocol, "tcp"):
			tcp = append(tcp, r)
		case strings.EqualFold(p.Protocol, "udp"):
			udp = append(udp, r)
		}
	}
	if len(tcp) == 0 && len(udp) == 0 {
		out.PortForward = []libvirtxml.DomainInterfaceSourcePortForward{{Proto: "tcp"}, {Proto: "udp"}}
		return
	}
	if len(tcp) > 0 {
		out.PortForward = append(out.PortForward, libvirtxml.DomainInterfaceSourcePortForward{Proto: "tcp", Ranges: tcp})
	}
	if len(udp) > 0 {
		out.PortForward = append(out.PortForward, libvirtxml.DomainInterfaceSourcePortForward{Proto: "udp", Ranges: udp})
	}
}

// bindingPlugin checks that an interface's network binding plugin can run
// on this node: registered in Options.BindingPlugins, without a sidecar
// and attached by managedTap. A refusal is recorded naming the field.
func (b *builder) bindingPlugin(path, name string) bool {
	p, ok := b.opts.BindingPlugins[name]
	switch {
	case !ok:
		b.unsupported(path+".binding", "couldn't find configuration for network binding: "+name+
			" (the KubeVirt configuration's network.binding registers the plugins a VMI may name)")
	case p.SidecarImage != "":
		b.unsupported(path+".binding", fmt.Sprintf("network binding plugin %q needs its sidecar %s; a virtkit node runs no sidecars (KubeVirt runs them in its launcher pod)", name, p.SidecarImage))
	case p.DomainAttachmentType != virtkit.DomainAttachmentManagedTap:
		b.unsupported(path+".binding", fmt.Sprintf("network binding plugin %q: a virtkit node attaches plugins by managedTap only, not %q", name, p.DomainAttachmentType))
	default:
		return true
	}
	return false
}
