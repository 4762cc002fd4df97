package domain

import (
	"fmt"
	"regexp"

	"libvirt.org/go/libvirtxml"
)

// AssignedDevice is the host device a node gave one of a VMI's GPUs or
// host devices: a PCI device by address, a mediated device by UUID, or
// USB devices (one per selector of the permitted USB resource).
type AssignedDevice struct {
	// PCIAddress is a PCI device's address, dddd:bb:ss.f.
	PCIAddress string
	// MdevUUID is a mediated device's UUID.
	MdevUUID string
	// USB are host USB devices.
	USB []USBDevice
}

// USBDevice is a host USB device: where it is on the host's USB buses
// and its IDs.
type USBDevice struct {
	// Bus and Device are its bus and device numbers on the host.
	Bus, Device uint
	// Vendor and Product are its vendor and product IDs in hex, "46f4".
	Vendor, Product string
}

// hostDevices writes a <hostdev> for every GPU and host device of the
// VMI from Options.HostDevices: a PCI device as a managed VFIO subsystem
// device (libvirt detaches it from its host driver), a mediated device as
// a vfio-pci mdev. A device with no assignment, or one given by a
// resource claim, is refused with its field path.
func (b *builder) hostDevices(dom *libvirtxml.Domain) {
	dev := &b.vmi.Spec.Domain.Devices
	for i, g := range dev.GPUs {
		path := fmt.Sprintf("spec.domain.devices.gpus[%d]", i)
		hd, ok := b.assigned(path, g.Name, g.ClaimName, "gpu-")
		if !ok {
			continue
		}
		if hd.SubsysMDev != nil {
			if o := g.VirtualGPUOptions; o != nil && o.Display != nil && (o.Display.Enabled == nil || *o.Display.Enabled) {
				hd.SubsysMDev.Display = "on"
				if rf := o.Display.RamFB; rf == nil || rf.Enabled == nil || *rf.Enabled {
					hd.SubsysMDev.RamFB = "on"
				}
			}
		}
		dom.Devices.Hostdevs = append(dom.Devices.Hostdevs, hd)
	}
	for i, h := range dev.HostDevices {
		path := fmt.Sprintf("spec.domain.devices.hostDevices[%d]", i)
		if a, ok := b.opts.HostDevices[h.Name]; ok && len(a.USB) > 0 && h.ClaimName == nil {
			b.usbHostDevices(dom, path, h.Name, a)
			continue
		}
		if hd, ok := b.assigned(path, h.Name, h.ClaimName, "hostdevice-"); ok {
			dom.Devices.Hostdevs = append(dom.Devices.Hostdevs, hd)
		}
	}
}

// usbHostDevices writes a USB subsystem <hostdev> for every USB device of
// an assignment, by its place on the host's buses as KubeVirt does (the
// node matched the vendor and product IDs when it assigned the device;
// the IDs alone are ambiguous when a host has two alike, and libvirtxml
// writes them in an order libvirt's schema refuses beside an address),
// aliased usb-host-<name> (with -<i> after the first), and puts a USB
// controller in the domain.
func (b *builder) usbHostDevices(dom *libvirtxml.Domain, path, name string, a AssignedDevice) {
	if a.PCIAddress != "" || a.MdevUUID != "" {
		b.fail(path, "the node's assignment must give USB devices or one PCI or mediated device, not %+v", a)
		return
	}
	for i, u := range a.USB {
		if !usbIDRE.MatchString(u.Vendor) || !usbIDRE.MatchString(u.Product) {
			b.fail(path, "the node's assignment: USB IDs %q:%q are not 4 hex digits each", u.Vendor, u.Product)
			return
		}
		alias := userAliasPrefix + "usb-host-" + name
		if i > 0 {
			alias += fmt.Sprintf("-%d", i)
		}
		dom.Devices.Hostdevs = append(dom.Devices.Hostdevs, libvirtxml.DomainHostdev{
			Alias: &libvirtxml.DomainAlias{Name: alias},
			SubsysUSB: &libvirtxml.DomainHostdevSubsysUSB{Source: &libvirtxml.DomainHostdevSubsysUSBSource{
				Address: &libvirtxml.DomainAddressUSB{Bus: uintp(u.Bus), Device: uintp(u.Device)},
			}},
		})
	}
	b.usbUsed = true
}

var usbIDRE = regexp.MustCompile(`^[0-9a-fA-F]{4}$`)

// assigned is the <hostdev> of one device from its assignment.
func (b *builder) assigned(path, name string, claim *string, aliasKind string) (libvirtxml.DomainHostdev, bool) {
	if claim != nil {
		b.unsupported(path+".claimName", "devices from dynamic resource claims are not allocated by this node")
		return libvirtxml.DomainHostdev{}, false
	}
	a, ok := b.opts.HostDevices[name]
	switch {
	case !ok:
		b.unsupported(path, "this node assigned no host device to "+name)
		return libvirtxml.DomainHostdev{}, false
	case (a.PCIAddress == "") == (a.MdevUUID == ""):
		b.fail(path, "the node's assignment must give a PCI address or a mediated device UUID, not %+v", a)
		return libvirtxml.DomainHostdev{}, false
	}
	hd := libvirtxml.DomainHostdev{Alias: &libvirtxml.DomainAlias{Name: userAliasPrefix + aliasKind + name}}
	if a.MdevUUID != "" {
		hd.SubsysMDev = &libvirtxml.DomainHostdevSubsysMDev{
			Model:  "vfio-pci",
			Source: &libvirtxml.DomainHostdevSubsysMDevSource{Address: &libvirtxml.DomainAddressMDev{UUID: a.MdevUUID}},
		}
		return hd, true
	}
	addr, err := pciAddress(a.PCIAddress)
	if err != nil {
		b.fail(path, "the node's assignment: %v", err)
		return libvirtxml.DomainHostdev{}, false
	}
	hd.Managed = "yes"
	hd.SubsysPCI = &libvirtxml.DomainHostdevSubsysPCI{Source: &libvirtxml.DomainHostdevSubsysPCISource{Address: addr.PCI}}
	return hd, true
}
