package domain

import (
	"fmt"

	"libvirt.org/go/libvirtxml"
)

// AssignedDevice is the host device a node gave one of a VMI's GPUs or
// host devices: a PCI device by address, or a mediated device by UUID.
type AssignedDevice struct {
	// PCIAddress is a PCI device's address, dddd:bb:ss.f.
	PCIAddress string
	// MdevUUID is a mediated device's UUID.
	MdevUUID string
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
		if hd, ok := b.assigned(path, h.Name, h.ClaimName, "hostdevice-"); ok {
			dom.Devices.Hostdevs = append(dom.Devices.Hostdevs, hd)
		}
	}
}

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
