package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/store"
)

// Host devices as node resources. The cluster's KubeVirt configuration
// (spec.configuration.permittedHostDevices) says which devices VMIs may
// be given and the resource names they are advertised as; the agent
// finds the permitted devices its hypervisor reports
// ([hypervisor.HostDeviceLister]), advertises their number in the Node's
// status.capacity and status.allocatable, as KubeVirt's device plugins
// do, and gives a starting VMI free ones for its gpus and hostDevices.

// permittedHostDevices reads the cluster's permitted host devices; nil
// when there is no KubeVirt object or it permits none.
func (a *Agent) permittedHostDevices(ctx context.Context) (*virtkit.PermittedHostDevices, error) {
	kv := &virtkit.KubeVirt{}
	err := a.opts.Store.Get(ctx, store.Key{Namespace: virtkit.DefaultKubeVirtNamespace, Name: virtkit.DefaultKubeVirtName}, kv)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the KubeVirt configuration: %w", err)
	}
	return kv.Spec.Configuration.PermittedHostDevices, nil
}

// hostDeviceSlots are the permitted devices of this node's host, by
// resource name, in address (or UUID) order. A host whose hypervisor
// reports no devices has none.
func (a *Agent) hostDeviceSlots(ctx context.Context) (map[virtkit.ResourceName][]domain.AssignedDevice, error) {
	lister, ok := a.opts.Hypervisor.(hypervisor.HostDeviceLister)
	if !ok {
		return nil, nil
	}
	permitted, err := a.permittedHostDevices(ctx)
	if err != nil || permitted == nil {
		return nil, err
	}
	devs, err := lister.HostDevices(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing host devices: %w", err)
	}
	out := map[virtkit.ResourceName][]domain.AssignedDevice{}
	for _, p := range permitted.PciHostDevices {
		if p.ExternalResourceProvider {
			continue
		}
		for _, d := range devs.PCI {
			if strings.EqualFold(d.VendorID+":"+d.DeviceID, p.PCIVendorSelector) {
				r := virtkit.ResourceName(p.ResourceName)
				out[r] = append(out[r], domain.AssignedDevice{PCIAddress: strings.ToLower(d.Address)})
			}
		}
	}
	for _, m := range permitted.MediatedDevices {
		if m.ExternalResourceProvider {
			continue
		}
		for _, d := range devs.Mediated {
			if d.TypeName == m.MDEVNameSelector {
				r := virtkit.ResourceName(m.ResourceName)
				out[r] = append(out[r], domain.AssignedDevice{MdevUUID: strings.ToLower(d.UUID)})
			}
		}
	}
	for r, s := range out {
		slices.SortFunc(s, func(x, y domain.AssignedDevice) int { return strings.Compare(deviceKey(x), deviceKey(y)) })
		out[r] = slices.CompactFunc(s, func(x, y domain.AssignedDevice) bool { return deviceKey(x) == deviceKey(y) })
	}
	for _, p := range permitted.USB {
		if p.ExternalResourceProvider {
			continue
		}
		if slots := usbSlots(p.Selectors, devs.USB); len(slots) > 0 {
			r := virtkit.ResourceName(p.ResourceName)
			out[r] = append(out[r], slots...)
		}
	}
	return out, nil
}

// usbSlots groups the host's USB devices as KubeVirt's USB device plugin
// does: one slot of the resource takes one device of each selector, so
// the resource has as many slots as its scarcest selector has devices
// (none when a selector matches nothing).
func usbSlots(sels []virtkit.USBSelector, devs []hypervisor.USBDevice) []domain.AssignedDevice {
	if len(sels) == 0 {
		return nil
	}
	matches := make([][]domain.USBDevice, len(sels))
	n := -1
	for i, sel := range sels {
		for _, d := range devs {
			if strings.EqualFold(d.VendorID, sel.Vendor) && strings.EqualFold(d.ProductID, sel.Product) {
				matches[i] = append(matches[i], domain.USBDevice{Bus: d.Bus, Device: d.Device, Vendor: d.VendorID, Product: d.ProductID})
			}
		}
		slices.SortFunc(matches[i], func(x, y domain.USBDevice) int { return strings.Compare(usbKey(x), usbKey(y)) })
		if n < 0 || len(matches[i]) < n {
			n = len(matches[i])
		}
	}
	out := make([]domain.AssignedDevice, n)
	for k := range out {
		for i := range sels {
			out[k].USB = append(out[k].USB, matches[i][k])
		}
	}
	return out
}

func usbKey(u domain.USBDevice) string { return fmt.Sprintf("usb:%d:%d", u.Bus, u.Device) }

// deviceKeys are the host devices of one slot, as devicesInUse names them.
func deviceKeys(d domain.AssignedDevice) []string {
	if len(d.USB) > 0 {
		keys := make([]string, len(d.USB))
		for i, u := range d.USB {
			keys[i] = usbKey(u)
		}
		return keys
	}
	return []string{deviceKey(d)}
}

func deviceKey(d domain.AssignedDevice) string {
	switch {
	case len(d.USB) > 0:
		return strings.Join(deviceKeys(d), ",")
	case d.MdevUUID != "":
		return "mdev:" + d.MdevUUID
	}
	return "pci:" + d.PCIAddress
}

// addDeviceCapacity adds the node's permitted devices to its capacity.
func (a *Agent) addDeviceCapacity(ctx context.Context, capacity virtkit.ResourceList) {
	slots, err := a.hostDeviceSlots(ctx)
	if err != nil {
		a.log.Warn("cannot advertise host devices", "err", err)
		return
	}
	for r, s := range slots {
		capacity[r] = *resource.NewQuantity(int64(len(s)), resource.DecimalSI)
	}
}

// assignHostDevices gives the VMI's gpus and hostDevices free permitted
// devices of this host, by the device's name in the VMI. A device held
// by another domain on the hypervisor is not free. A resource this node
// does not have, or has no free device of, is an error naming the field
// and wrapping domain.ErrUnsupported: the VMI fails with the reason.
func (a *Agent) assignHostDevices(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string) (map[string]domain.AssignedDevice, error) {
	type want struct{ path, name, resource string }
	var wants []want
	dev := &vmi.Spec.Domain.Devices
	for i, g := range dev.GPUs {
		if g.DeviceName != "" && g.ClaimName == nil {
			wants = append(wants, want{fmt.Sprintf("spec.domain.devices.gpus[%d].deviceName", i), g.Name, g.DeviceName})
		}
	}
	for i, h := range dev.HostDevices {
		if h.DeviceName != "" && h.ClaimName == nil {
			wants = append(wants, want{fmt.Sprintf("spec.domain.devices.hostDevices[%d].deviceName", i), h.Name, h.DeviceName})
		}
	}
	if len(wants) == 0 {
		return nil, nil
	}
	slots, err := a.hostDeviceSlots(ctx)
	if err != nil {
		return nil, err
	}
	used, err := a.devicesInUse(ctx, domName)
	if err != nil {
		return nil, err
	}
	out := map[string]domain.AssignedDevice{}
	for _, w := range wants {
		s := slots[virtkit.ResourceName(w.resource)]
		if len(s) == 0 {
			return nil, fmt.Errorf("%s: this node has no permitted host device %s: %w", w.path, w.resource, domain.ErrUnsupported)
		}
		i := slices.IndexFunc(s, func(d domain.AssignedDevice) bool {
			return !slices.ContainsFunc(deviceKeys(d), func(k string) bool { return used[k] })
		})
		if i < 0 {
			return nil, fmt.Errorf("%s: every %s of this node is in use: %w", w.path, w.resource, domain.ErrUnsupported)
		}
		out[w.name] = s[i]
		for _, k := range deviceKeys(s[i]) {
			used[k] = true
		}
	}
	return out, nil
}

// devicesInUse are the host devices the domains defined on the
// hypervisor pass through, but for domName's.
func (a *Agent) devicesInUse(ctx context.Context, domName string) (map[string]bool, error) {
	doms, err := a.opts.Hypervisor.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing domains: %w", err)
	}
	used := map[string]bool{}
	for _, d := range doms {
		if d.Name == domName {
			continue
		}
		x, err := a.opts.Hypervisor.XML(ctx, d.Name)
		if errors.Is(err, hypervisor.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading domain %s: %w", d.Name, err)
		}
		var def libvirtxml.Domain
		if err := def.Unmarshal(x); err != nil || def.Devices == nil {
			continue
		}
		for _, hd := range def.Devices.Hostdevs {
			switch {
			case hd.SubsysPCI != nil && hd.SubsysPCI.Source != nil && hd.SubsysPCI.Source.Address != nil:
				used["pci:"+pciString(hd.SubsysPCI.Source.Address)] = true
			case hd.SubsysMDev != nil && hd.SubsysMDev.Source != nil && hd.SubsysMDev.Source.Address != nil:
				used["mdev:"+strings.ToLower(hd.SubsysMDev.Source.Address.UUID)] = true
			case hd.SubsysUSB != nil && hd.SubsysUSB.Source != nil && hd.SubsysUSB.Source.Address != nil:
				if a := hd.SubsysUSB.Source.Address; a.Bus != nil && a.Device != nil {
					used[usbKey(domain.USBDevice{Bus: *a.Bus, Device: *a.Device})] = true
				}
			}
		}
	}
	return used, nil
}

func pciString(a *libvirtxml.DomainAddressPCI) string {
	v := func(p *uint) uint {
		if p == nil {
			return 0
		}
		return *p
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", v(a.Domain), v(a.Bus), v(a.Slot), v(a.Function))
}
