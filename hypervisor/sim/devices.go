package sim

import (
	"context"
	"fmt"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hypervisor"
)

var _ hypervisor.DeviceAttacher = (*Host)(nil)

// AttachDevice plugs a disk into a running domain and into its persistent
// definition, as libvirt's virDomainAttachDeviceFlags with the live and
// config flags does. The simulator models disk hotplug only: any other
// device element is refused as not supported (libvirt can hot-plug more).
// A disk whose target the domain already uses is refused, as libvirt
// refuses it.
func (h *Host) AttachDevice(ctx context.Context, name, deviceXML string) error {
	disk, err := parseDiskDevice(deviceXML)
	if err != nil {
		return hypervisor.WrapDomain("attach device", name, err)
	}
	return h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("attach device", name)
		if err != nil {
			return err
		}
		if !d.state.IsActive() {
			return invalidState("attach device", name, "domain is not running")
		}
		if d.job != nil || d.incoming != nil {
			return invalidState("attach device", name, "a migration is in progress")
		}
		live, err := withDisk(d.spec(), disk)
		if err != nil {
			return hypervisor.WrapDomain("attach device", name, err)
		}
		if d.persistent && d.config != nil && d.config != d.live {
			cfg, err := withDisk(d.config, disk)
			if err != nil {
				return hypervisor.WrapDomain("attach device", name, err)
			}
			d.config = cfg
		}
		if d.config == d.spec() {
			d.config = live
		}
		d.live = live
		return nil
	})
}

// DetachDevice unplugs a disk, matched by its target, from a running
// domain and its persistent definition (libvirt's
// virDomainDetachDeviceFlags with the live and config flags). The
// simulated guest releases it at once.
func (h *Host) DetachDevice(ctx context.Context, name, deviceXML string) error {
	disk, err := parseDiskDevice(deviceXML)
	if err != nil {
		return hypervisor.WrapDomain("detach device", name, err)
	}
	return h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("detach device", name)
		if err != nil {
			return err
		}
		if !d.state.IsActive() {
			return invalidState("detach device", name, "domain is not running")
		}
		if d.job != nil || d.incoming != nil {
			return invalidState("detach device", name, "a migration is in progress")
		}
		live, err := withoutDisk(d.spec(), disk.Target.Dev)
		if err != nil {
			return hypervisor.WrapDomain("detach device", name, err)
		}
		if d.persistent && d.config != nil && d.config != d.live {
			if cfg, err := withoutDisk(d.config, disk.Target.Dev); err == nil {
				d.config = cfg
			}
		}
		if d.config == d.spec() {
			d.config = live
		}
		d.live = live
		return nil
	})
}

// parseDiskDevice reads one <disk> element with a target.
func parseDiskDevice(deviceXML string) (*libvirtxml.DomainDisk, error) {
	disk := &libvirtxml.DomainDisk{}
	if err := disk.Unmarshal(deviceXML); err != nil {
		return nil, hypervisor.NotSupportedError("hot-plugging a device other than a disk",
			fmt.Sprintf("the simulator models disk hotplug only: %v", err))
	}
	if disk.Target == nil || disk.Target.Dev == "" {
		return nil, invalid("disk.target.dev", "required")
	}
	return disk, nil
}

// withDisk returns a copy of sp with disk added (specs are replaced,
// never changed in place).
func withDisk(sp *spec, disk *libvirtxml.DomainDisk) (*spec, error) {
	def, err := copyDef(sp.def)
	if err != nil {
		return nil, err
	}
	if def.Devices == nil {
		def.Devices = &libvirtxml.DomainDeviceList{}
	}
	for _, d := range def.Devices.Disks {
		if d.Target != nil && d.Target.Dev == disk.Target.Dev {
			return nil, invalid("disk.target.dev", fmt.Sprintf("target %s already exists", disk.Target.Dev))
		}
		if disk.Alias != nil && d.Alias != nil && d.Alias.Name == disk.Alias.Name {
			return nil, invalid("disk.alias.name", fmt.Sprintf("alias %s already exists", disk.Alias.Name))
		}
	}
	def.Devices.Disks = append(def.Devices.Disks, *disk)
	return respec(def)
}

// withoutDisk returns a copy of sp without the disk of target dev.
func withoutDisk(sp *spec, dev string) (*spec, error) {
	def, err := copyDef(sp.def)
	if err != nil {
		return nil, err
	}
	found := false
	if def.Devices != nil {
		kept := def.Devices.Disks[:0]
		for _, d := range def.Devices.Disks {
			if d.Target != nil && d.Target.Dev == dev {
				found = true
				continue
			}
			kept = append(kept, d)
		}
		def.Devices.Disks = kept
	}
	if !found {
		return nil, invalid("disk.target.dev", fmt.Sprintf("no disk with target %s", dev))
	}
	return respec(def)
}

func copyDef(def *libvirtxml.Domain) (*libvirtxml.Domain, error) {
	text, err := def.Marshal()
	if err != nil {
		return nil, err
	}
	out := &libvirtxml.Domain{}
	if err := out.Unmarshal(text); err != nil {
		return nil, err
	}
	return out, nil
}

// respec re-derives a spec from a changed definition.
func respec(def *libvirtxml.Domain) (*spec, error) {
	text, err := def.Marshal()
	if err != nil {
		return nil, err
	}
	return parseSpec(text)
}
