package domain

import (
	"crypto/sha256"
	"fmt"
	"net/netip"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
)

func (b *builder) interfaces(dom *libvirtxml.Domain) {
	spec := &b.vmi.Spec
	networks := map[string]int{}
	for i := range spec.Networks {
		networks[spec.Networks[i].Name] = i
	}
	multiqueue := boolDefault(spec.Domain.Devices.NetworkInterfaceMultiQueue, false)
	for i, iface := range spec.Domain.Devices.Interfaces {
		path := fmt.Sprintf("spec.domain.devices.interfaces[%d]", i)
		if iface.State == virtkit.InterfaceStateAbsent {
			continue
		}
		ni, ok := networks[iface.Name]
		if !ok {
			b.fail(path+".name", "no network named %q", iface.Name)
			continue
		}
		net := &spec.Networks[ni]
		netPath := fmt.Sprintf("spec.networks[%d]", ni)
		binding := ""
		n := 0
		m := &iface.InterfaceBindingMethod
		for _, c := range []struct {
			set  bool
			name string
		}{{m.Bridge != nil, "bridge"}, {m.Masquerade != nil, "masquerade"}, {m.SRIOV != nil, "sriov"},
			{m.Slirp != nil, "slirp"}, {m.Macvtap != nil, "macvtap"}, {m.Passt != nil, "passt"},
			{m.PasstBinding != nil, bindingPasst}, {iface.Binding != nil, bindingPlugin}} {
			if c.set {
				binding = c.name
				n++
			}
		}
		switch {
		case n == 0:
			b.fail(path, "one binding (bridge, masquerade, sriov) is required")
			continue
		case n > 1:
			b.fail(path, "bindings are mutually exclusive")
			continue
		case binding == "slirp" || binding == "macvtap" || binding == "passt":
			b.unsupported(path+"."+binding, "binding discontinued since KubeVirt v1.3")
			continue
		case binding == bindingPlugin:
			if !b.bindingPlugin(path, iface.Binding.Name) {
				continue
			}
			// A managedTap plugin attaches the guest as the bridge binding
			// does: a tap on a bridge with the network's host side.
			binding = "bridge"
		case binding == bindingPasst && (net.Pod == nil || net.Multus != nil):
			b.fail(path+".passtBinding", "passt connects to the pod network only")
			continue
		}
		req := NetworkRequest{
			Namespace: namespaceOf(b.vmi), VMIName: b.vmi.Name, UID: string(b.vmi.UID),
			Interface: iface.Name, Index: i, Field: path, Binding: binding, Network: net.Name,
			Ports: iface.Ports,
		}
		if binding != "sriov" {
			req.MAC = b.mac(path, iface)
		}
		switch {
		case net.Pod != nil && net.Multus == nil:
			req.Kind = NetworkPod
		case net.Multus != nil && net.Pod == nil:
			req.Kind = NetworkMultus
			req.MultusNetworkName = net.Multus.NetworkName
		default:
			b.fail(netPath, "exactly one of pod and multus is required")
			continue
		}
		att, err := HostNetwork{Type: AttachUser}, error(nil)
		if binding != bindingPasst { // passt needs no host side: libvirt starts it
			att, err = b.opts.NetworkResolver.ResolveNetwork(b.ctx, req)
		}
		if err != nil {
			b.errs = append(b.errs, fmt.Errorf("%s: %w", path, err))
			continue
		}
		if att.Type == AttachHostdev {
			b.hostdev(dom, path, iface, att)
			continue
		}
		if binding == "sriov" {
			b.fail(path+".sriov", "resolver returned a %q attachment, SR-IOV needs %q: %w", att.Type, AttachHostdev, ErrNotResolved)
			continue
		}
		out := libvirtxml.DomainInterface{
			Alias: &libvirtxml.DomainAlias{Name: userAliasPrefix + iface.Name},
			MAC:   &libvirtxml.DomainInterfaceMAC{Address: req.MAC},
		}
		switch att.Type {
		case AttachUser:
			out.Source = &libvirtxml.DomainInterfaceSource{User: &libvirtxml.DomainInterfaceSourceUser{}}
			if binding == bindingPasst {
				passtInterface(&out, iface.Ports)
			} else if net.Pod != nil {
				out.IP = b.userNetIPs(netPath+".pod", net.Pod)
			}
		case AttachNetwork:
			out.Source = &libvirtxml.DomainInterfaceSource{Network: &libvirtxml.DomainInterfaceSourceNetwork{Network: att.Source}}
		case AttachBridge:
			out.Source = &libvirtxml.DomainInterfaceSource{Bridge: &libvirtxml.DomainInterfaceSourceBridge{Bridge: att.Source}}
		case AttachEthernet:
			out.Source = &libvirtxml.DomainInterfaceSource{Ethernet: &libvirtxml.DomainInterfaceSourceEthernet{}}
			out.Target = &libvirtxml.DomainInterfaceTarget{Dev: att.Source, Managed: "no"}
		default:
			b.fail(path, "resolver returned attachment type %q", att.Type)
			continue
		}
		if att.Type != AttachUser && att.Source == "" {
			b.fail(path, "resolver returned a %s attachment without a source: %w", att.Type, ErrNotResolved)
			continue
		}
		model := iface.Model
		switch model {
		case "", virtkit.InterfaceModelVirtio:
			model = b.virtioModel()
		case virtkit.InterfaceModelE1000, virtkit.InterfaceModelE1000E, virtkit.InterfaceModelIGB,
			virtkit.InterfaceModelNe2kPCI, virtkit.InterfaceModelPCNet, virtkit.InterfaceModelRTL8139:
		default:
			b.fail(path+".model", "unknown model %q", model)
		}
		out.Model = &libvirtxml.DomainInterfaceModel{Type: model}
		if multiqueue && (iface.Model == "" || iface.Model == virtkit.InterfaceModelVirtio) && b.vcpus > 1 {
			if att.Type == AttachUser {
				b.unsupported("spec.domain.devices.networkInterfaceMultiqueue",
					fmt.Sprintf("interface %q is on user-mode networking, which has one queue", iface.Name))
			} else {
				out.Driver = &libvirtxml.DomainInterfaceDriver{Name: "vhost", Queues: min(b.vcpus, 256)}
			}
		}
		if iface.BootOrder != nil {
			out.Boot = b.bootOrder(path+".bootOrder", *iface.BootOrder)
		} else {
			// No PXE ROM unless the interface boots (KubeVirt).
			out.ROM = &libvirtxml.DomainROM{Enabled: "no"}
		}
		if iface.PciAddress != "" {
			addr, err := pciAddress(iface.PciAddress)
			if err != nil {
				b.fail(path+".pciAddress", "%v", err)
			}
			out.Address = addr
		}
		if iface.ACPIIndex > 0 {
			out.ACPI = &libvirtxml.DomainDeviceACPI{Index: uint(iface.ACPIIndex)}
		} else if iface.ACPIIndex < 0 {
			b.fail(path+".acpiIndex", "must not be negative")
		}
		switch iface.State {
		case "", virtkit.InterfaceStateLinkUp:
		case virtkit.InterfaceStateLinkDown:
			out.Link = &libvirtxml.DomainInterfaceLink{State: "down"}
		default:
			b.fail(path+".state", "unknown state %q", iface.State)
		}
		if att.MTU > 0 {
			out.MTU = &libvirtxml.DomainInterfaceMTU{Size: att.MTU}
		}
		dom.Devices.Interfaces = append(dom.Devices.Interfaces, out)
	}
}

// mac returns the interface's MAC, or a stable locally administered one
// derived from the VMI and interface names: a re-defined domain keeps its
// address, which libvirt would otherwise pick at random.
func (b *builder) mac(path string, iface virtkit.Interface) string {
	if iface.MacAddress != "" {
		hw, err := parseMAC(iface.MacAddress)
		if err != nil {
			b.fail(path+".macAddress", "%v", err)
			return iface.MacAddress
		}
		return hw
	}
	h := sha256.Sum256([]byte(namespaceOf(b.vmi) + "/" + b.vmi.Name + "/" + iface.Name))
	return fmt.Sprintf("52:54:00:%02x:%02x:%02x", h[0], h[1], h[2])
}

func parseMAC(s string) (string, error) {
	var o [6]byte
	if len(s) != 17 {
		return "", fmt.Errorf("%q is not a MAC address", s)
	}
	for i := range 6 {
		if i > 0 && s[3*i-1] != ':' && s[3*i-1] != '-' {
			return "", fmt.Errorf("%q is not a MAC address", s)
		}
		if _, err := fmt.Sscanf(s[3*i:3*i+2], "%02x", &o[i]); err != nil {
			return "", fmt.Errorf("%q is not a MAC address", s)
		}
	}
	if o[0]&1 == 1 {
		return "", fmt.Errorf("%q is a multicast address", s)
	}
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", o[0], o[1], o[2], o[3], o[4], o[5]), nil
}

// userNetIPs puts the pod network's CIDRs on user-mode networking, so the
// guest sees KubeVirt's masquerade addressing (10.0.2.0/24 by default).
func (b *builder) userNetIPs(path string, pod *virtkit.PodNetwork) []libvirtxml.DomainInterfaceIP {
	var ips []libvirtxml.DomainInterfaceIP
	for _, c := range []struct{ field, cidr, family string }{
		{"vmNetworkCIDR", pod.VMNetworkCIDR, "ipv4"},
		{"vmIPv6NetworkCIDR", pod.VMIPv6NetworkCIDR, "ipv6"},
	} {
		if c.cidr == "" {
			continue
		}
		p, err := netip.ParsePrefix(c.cidr)
		if err != nil || (c.family == "ipv4") != p.Addr().Is4() {
			b.fail(path+"."+c.field, "%q is not an %s CIDR", c.cidr, c.family)
			continue
		}
		// QEMU's slirp limits (libvirt checks them at define time).
		if c.family == "ipv4" && (p.Bits() < 4 || p.Bits() > 27) || c.family == "ipv6" && p.Bits() != 64 {
			b.unsupported(path+"."+c.field, fmt.Sprintf("prefix /%d is outside what user-mode networking accepts (IPv4 /4 to /27, IPv6 /64)", p.Bits()))
			continue
		}
		p = p.Masked()
		ips = append(ips, libvirtxml.DomainInterfaceIP{Address: p.Addr().String(), Family: c.family, Prefix: uint(p.Bits())})
	}
	return ips
}

// hostdev passes an SR-IOV VF through (KubeVirt: no <interface>, a VFIO
// <hostdev> with alias sriov-<name>).
func (b *builder) hostdev(dom *libvirtxml.Domain, path string, iface virtkit.Interface, att HostNetwork) {
	if iface.SRIOV == nil {
		b.fail(path, "resolver returned a hostdev attachment for a non-SR-IOV interface")
		return
	}
	addr, err := pciAddress(att.PCIAddress)
	if err != nil {
		b.fail(path+".sriov", "resolver returned %v", err)
		return
	}
	hd := libvirtxml.DomainHostdev{
		Managed: "no",
		SubsysPCI: &libvirtxml.DomainHostdevSubsysPCI{
			Source: &libvirtxml.DomainHostdevSubsysPCISource{Address: addr.PCI},
		},
		Alias: &libvirtxml.DomainAlias{Name: userAliasPrefix + "sriov-" + iface.Name},
	}
	if iface.BootOrder != nil {
		hd.Boot = b.bootOrder(path+".bootOrder", *iface.BootOrder)
	}
	if iface.PciAddress != "" {
		a, err := pciAddress(iface.PciAddress)
		if err != nil {
			b.fail(path+".pciAddress", "%v", err)
		}
		hd.Address = a
	}
	dom.Devices.Hostdevs = append(dom.Devices.Hostdevs, hd)
}
