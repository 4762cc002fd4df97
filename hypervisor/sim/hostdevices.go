package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hypervisor"
)

// HostDevices reports the host devices of Options.HostDevices: the
// simulator's modelled device inventory (a real host's comes from its
// PCI bus and mediated device types).
func (h *Host) HostDevices(ctx context.Context) (hypervisor.HostDevices, error) {
	if err := ctx.Err(); err != nil {
		return hypervisor.HostDevices{}, err
	}
	d := h.opts.HostDevices
	return hypervisor.HostDevices{PCI: slices.Clone(d.PCI), Mediated: slices.Clone(d.Mediated), USB: slices.Clone(d.USB)}, nil
}

var _ hypervisor.HostDeviceLister = (*Host)(nil)

// LaunchSecurity reports Options.LaunchSecurity, the simulated platform's
// confidential computing; without one the error matches
// hypervisor.ErrNotSupported.
func (h *Host) LaunchSecurity(ctx context.Context) (hypervisor.LaunchSecurity, error) {
	if err := ctx.Err(); err != nil {
		return hypervisor.LaunchSecurity{}, err
	}
	if h.opts.LaunchSecurity == nil {
		return hypervisor.LaunchSecurity{}, fmt.Errorf("launch security: the simulated host models none: %w", hypervisor.ErrNotSupported)
	}
	return *h.opts.LaunchSecurity, nil
}

var _ hypervisor.LaunchSecurityReporter = (*Host)(nil)

// hostDeviceKeys are the host devices a domain definition passes
// through: "pci:0000:65:00.0", "mdev:<uuid>" and "usb:<bus>:<device>".
func hostDeviceKeys(def *libvirtxml.Domain) []string {
	if def == nil || def.Devices == nil {
		return nil
	}
	var out []string
	for _, hd := range def.Devices.Hostdevs {
		ss := hd.SubsysPCI
		switch {
		case ss != nil && ss.Source != nil && ss.Source.Address != nil:
			a := ss.Source.Address
			out = append(out, "pci:"+pciAddress(a))
		case hd.SubsysMDev != nil && hd.SubsysMDev.Source != nil && hd.SubsysMDev.Source.Address != nil:
			out = append(out, "mdev:"+strings.ToLower(hd.SubsysMDev.Source.Address.UUID))
		case hd.SubsysUSB != nil && hd.SubsysUSB.Source != nil && hd.SubsysUSB.Source.Address != nil:
			a := hd.SubsysUSB.Source.Address
			if a.Bus == nil || a.Device == nil {
				out = append(out, "unsupported")
				continue
			}
			out = append(out, fmt.Sprintf("usb:%d:%d", *a.Bus, *a.Device))
		default:
			out = append(out, "unsupported")
		}
	}
	return out
}

func pciAddress(a *libvirtxml.DomainAddressPCI) string {
	v := func(p *uint) uint {
		if p == nil {
			return 0
		}
		return *p
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", v(a.Domain), v(a.Bus), v(a.Slot), v(a.Function))
}

// attachHostDevices checks, as QEMU does when it starts a guest, that
// every host device the domain passes through exists on the host and is
// not held by another running domain. Called with the host locked.
func (h *Host) attachHostDevices(d *domain, sp *spec) error {
	keys := hostDeviceKeys(sp.def)
	if len(keys) == 0 {
		return nil
	}
	have := map[string]bool{}
	for _, p := range h.opts.HostDevices.PCI {
		have["pci:"+strings.ToLower(p.Address)] = true
	}
	for _, m := range h.opts.HostDevices.Mediated {
		have["mdev:"+strings.ToLower(m.UUID)] = true
	}
	for _, u := range h.opts.HostDevices.USB {
		have[fmt.Sprintf("usb:%d:%d", u.Bus, u.Device)] = true
	}
	for _, k := range keys {
		if !have[k] {
			return hypervisor.WrapDomain("start", sp.name, fmt.Errorf("host device %s: no such device on this host: %w", k, hypervisor.ErrInvalidArgument))
		}
		for _, o := range h.domains {
			if o == d || !o.state.IsActive() || o.live == nil {
				continue
			}
			if slices.Contains(hostDeviceKeys(o.live.def), k) {
				return hypervisor.WrapDomain("start", sp.name, fmt.Errorf("host device %s is in use by domain %q: %w", k, o.name(), hypervisor.ErrInvalidState))
			}
		}
	}
	return nil
}
