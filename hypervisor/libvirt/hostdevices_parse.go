package libvirt

import (
	"fmt"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hypervisor"
)

// hostDevicesFromXML reads the PCI, USB and mediated devices of libvirt's node
// device descriptions (virNodeDeviceGetXMLDesc). A mediated device's type
// name comes from its parent's mdev_types capability; without one it is
// the type's ID.
func hostDevicesFromXML(docs []string) (hypervisor.HostDevices, error) {
	var out hypervisor.HostDevices
	typeNames := map[string]string{} // mdev type ID -> name
	var mdevs []*libvirtxml.NodeDevice
	for _, doc := range docs {
		var d libvirtxml.NodeDevice
		if err := d.Unmarshal(doc); err != nil {
			return hypervisor.HostDevices{}, fmt.Errorf("node device: %w", err)
		}
		switch c := d.Capability; {
		case c.PCI != nil:
			p := c.PCI
			out.PCI = append(out.PCI, hypervisor.PCIDevice{
				Address:  fmt.Sprintf("%04x:%02x:%02x.%x", deref(p.Domain), deref(p.Bus), deref(p.Slot), deref(p.Function)),
				VendorID: hexID(p.Vendor.ID),
				DeviceID: hexID(p.Product.ID),
			})
			for _, sc := range p.Capabilities {
				if sc.MDevTypes == nil {
					continue
				}
				for _, t := range sc.MDevTypes.Types {
					if t.Name != "" {
						typeNames[t.ID] = t.Name
					}
				}
			}
		case c.MDev != nil:
			mdevs = append(mdevs, &d)
		case c.USBDevice != nil:
			u := c.USBDevice
			if u.Bus < 0 || u.Device < 0 {
				continue
			}
			out.USB = append(out.USB, hypervisor.USBDevice{
				Bus: uint(u.Bus), Device: uint(u.Device), VendorID: hexID(u.Vendor.ID), ProductID: hexID(u.Product.ID),
			})
		}
	}
	for _, d := range mdevs {
		m := d.Capability.MDev
		id := ""
		if m.Type != nil {
			id = m.Type.ID
		}
		name := typeNames[id]
		if name == "" {
			name = id
		}
		out.Mediated = append(out.Mediated, hypervisor.MediatedDevice{UUID: m.UUID, TypeID: id, TypeName: name, Parent: m.ParentAddr})
	}
	return out, nil
}

func deref(p *uint) uint {
	if p == nil {
		return 0
	}
	return *p
}

// hexID is a vendor or product ID as "10de" (libvirt writes "0x10de").
func hexID(s string) string {
	return strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"))
}
