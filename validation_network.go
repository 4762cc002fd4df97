package virtkit

import (
	"net"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var validInterfaceModels = []string{InterfaceModelE1000, InterfaceModelE1000E, InterfaceModelIGB, InterfaceModelNe2kPCI,
	InterfaceModelPCNet, InterfaceModelRTL8139, InterfaceModelVirtio}

// Rules 26-31.
func (v *vmiValidator) networks() {
	spec, sp := v.spec, v.sp
	np := sp.Child("networks")
	ip := sp.Child("domain", "devices", "interfaces")
	if len(spec.Networks) > maxVolumes {
		v.add(field.TooMany(np, len(spec.Networks), maxVolumes))
	}
	networks := map[string]*Network{}
	podNetworks, multusDefaults := 0, 0
	for i := range spec.Networks {
		n := &spec.Networks[i]
		p := np.Index(i)
		if n.Name == "" {
			v.add(field.Required(p.Child("name"), ""))
		} else if _, dup := networks[n.Name]; dup {
			v.add(field.Duplicate(p.Child("name"), n.Name))
		} else {
			networks[n.Name] = n
		}
		switch countSet(n.Pod != nil, n.Multus != nil) { // rule 29
		case 0:
			v.add(field.Required(p, "should have a network type"))
		case 2:
			v.add(field.Invalid(p, "pod, multus", "should have only one network type"))
		}
		if n.Pod != nil {
			podNetworks++
			if podNetworks > 1 {
				v.add(field.Invalid(p, n.Name, "more than one interface is connected to a pod network"))
			}
			if c := n.Pod.VMNetworkCIDR; c != "" {
				if ip, _, err := net.ParseCIDR(c); err != nil || ip.To4() == nil {
					v.add(field.Invalid(p.Child("pod", "vmNetworkCIDR"), c, "must be an IPv4 CIDR"))
				}
			}
			if c := n.Pod.VMIPv6NetworkCIDR; c != "" {
				if ip, _, err := net.ParseCIDR(c); err != nil || ip.To4() != nil {
					v.add(field.Invalid(p.Child("pod", "vmIPv6NetworkCIDR"), c, "must be an IPv6 CIDR"))
				}
			}
		}
		if m := n.Multus; m != nil {
			if m.NetworkName == "" {
				v.add(field.Required(p.Child("multus", "networkName"), ""))
			}
			if m.Default {
				multusDefaults++
				if multusDefaults > 1 {
					v.add(field.Invalid(p.Child("multus", "default"), true, "only one multus network can be the default"))
				}
			}
		}
	}
	if podNetworks > 0 && multusDefaults > 0 {
		v.add(field.Invalid(np, "pod, multus default", "a pod network and a default multus network are mutually exclusive"))
	}
	used := map[string]bool{}
	ifaceNames := map[string]bool{}
	for i := range spec.Domain.Devices.Interfaces {
		iface := &spec.Domain.Devices.Interfaces[i]
		p := ip.Index(i)
		nw := networks[iface.Name]
		switch {
		case iface.Name == "":
			v.add(field.Required(p.Child("name"), ""))
		case ifaceNames[iface.Name]:
			e := field.Duplicate(p.Child("name"), iface.Name)
			e.Detail = "Only one interface can be connected to one specific network"
			v.add(e)
		case nw == nil: // rule 26
			v.add(field.NotFound(p.Child("name"), iface.Name))
		}
		ifaceNames[iface.Name] = true
		if nw != nil {
			used[iface.Name] = true
		}
		b := iface.InterfaceBindingMethod
		for _, old := range []struct {
			set  bool
			name string
		}{{b.Slirp != nil, "slirp"}, {b.Macvtap != nil, "macvtap"}, {b.Passt != nil, "passt"}} {
			if old.set { // rule 27
				v.add(field.Forbidden(p, old.name+" binding is discontinued since KubeVirt v1.3"))
			}
		}
		if n := countSet(b.Bridge != nil, b.Masquerade != nil, b.SRIOV != nil, b.Slirp != nil, b.Macvtap != nil, b.Passt != nil,
			b.PasstBinding != nil, iface.Binding != nil); n == 0 {
			v.add(field.Required(p, "logical "+iface.Name+" interface must have exactly one binding method or binding plugin"))
		} else if n > 1 {
			v.add(field.Invalid(p, n, "logical "+iface.Name+" interface must have exactly one binding method or binding plugin"))
		}
		v.bindingPlugin(iface, nw, p)
		if nw != nil { // rule 28
			if b.Masquerade != nil && nw.Pod == nil {
				v.add(field.Invalid(p.Child("name"), iface.Name, "Masquerade interface only implemented with pod network"))
			}
			if b.SRIOV != nil && nw.Pod != nil {
				v.add(field.Invalid(p.Child("sriov"), iface.Name, "SRIOV interface only implemented with multus network"))
			}
		}
		if iface.Model != "" && !slices.Contains(validInterfaceModels, iface.Model) { // rule 30
			v.add(field.NotSupported(p.Child("model"), iface.Model, validInterfaceModels))
		}
		if iface.MacAddress != "" {
			if mac, err := net.ParseMAC(iface.MacAddress); err != nil || len(mac) != 6 {
				v.add(field.Invalid(p.Child("macAddress"), iface.MacAddress, "must be a valid MAC address such as de:ad:00:00:be:af"))
			} else if mac[0]&1 == 1 {
				v.add(field.Invalid(p.Child("macAddress"), iface.MacAddress, "must be a unicast MAC address"))
			}
		}
		if iface.PciAddress != "" && !pciAddressRE.MatchString(iface.PciAddress) {
			v.add(field.Invalid(p.Child("pciAddress"), iface.PciAddress, "must be a PCI address like 0000:01:00.0"))
		}
		if st := iface.State; st != "" && st != InterfaceStateLinkUp && st != InterfaceStateLinkDown && st != InterfaceStateAbsent {
			v.add(field.NotSupported(p.Child("state"), st, []InterfaceState{InterfaceStateLinkUp, InterfaceStateLinkDown, InterfaceStateAbsent}))
		}
		if iface.ACPIIndex < 0 {
			v.add(field.Invalid(p.Child("acpiIndex"), iface.ACPIIndex, "must not be negative"))
		}
		v.bootOrder(iface.BootOrder, p.Child("bootOrder"))
		v.ports(iface, p)
	}
	for i, n := range spec.Networks { // rule 26: every network has an interface
		if n.Name != "" && !used[n.Name] && networks[n.Name] == &spec.Networks[i] {
			v.add(field.NotFound(np.Index(i).Child("name"), n.Name))
		}
	}
}

// Rule 31.
func (v *vmiValidator) ports(iface *Interface, p *field.Path) {
	names := map[string]bool{}
	for j, port := range iface.Ports {
		pp := p.Child("ports").Index(j)
		if port.Name != "" {
			for _, msg := range validation.IsValidPortName(port.Name) {
				v.add(field.Invalid(pp.Child("name"), port.Name, msg))
			}
			if names[port.Name] {
				v.add(field.Duplicate(pp.Child("name"), port.Name))
			}
			names[port.Name] = true
		}
		if proto := strings.ToUpper(port.Protocol); port.Protocol != "" && proto != "TCP" && proto != "UDP" {
			v.add(field.NotSupported(pp.Child("protocol"), port.Protocol, []string{"TCP", "UDP"}))
		}
		if port.Port <= 0 || port.Port >= 65536 {
			v.add(field.Invalid(pp.Child("port"), port.Port, "Port field must be in range 0 < x < 65536."))
		}
	}
}
