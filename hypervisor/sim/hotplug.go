package sim

import (
	"context"
	"fmt"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hypervisor"
)

var _ hypervisor.ResourceHotplugger = (*Host)(nil)

// virtioMem is the model attribute of a virtio-mem memory device.
const virtioMem = "virtio-mem"

// SetVCPUs plugs or unplugs vCPUs of a running domain, up to the maximum
// of its <vcpu> element, as libvirt's virDomainSetVcpusFlags with the live
// and config flags does: the running instance and the persistent
// definition both change. The simulated guest counts them at once (a real
// guest may have to bring a plugged vCPU online).
func (h *Host) SetVCPUs(ctx context.Context, name string, count int) error {
	const op = "setvcpus"
	return h.do(ctx, func(now time.Time) error {
		d, err := h.lookup(op, name)
		if err != nil {
			return err
		}
		if !d.state.IsActive() {
			return invalidState(op, name, "domain is not running")
		}
		if d.job != nil || d.incoming != nil {
			return invalidState(op, name, "domain has a migration job")
		}
		max := 1
		if v := d.live.def.VCPU; v != nil && v.Value > 0 {
			max = int(v.Value)
		}
		if count < 1 || count > max {
			return hypervisor.WrapDomain(op, name, fmt.Errorf("requested vcpus %d is not within 1..%d, the domain's maximum: %w",
				count, max, hypervisor.ErrInvalidArgument))
		}
		d.advance(h, now) // CPU time so far is at the old count
		set := func(sp *spec) (*spec, error) {
			return editSpec(sp, func(def *libvirtxml.Domain) {
				if def.VCPU == nil {
					def.VCPU = &libvirtxml.DomainVCPU{Value: uint(max)}
				}
				def.VCPU.Current = uint(count)
				if count == int(def.VCPU.Value) {
					def.VCPU.Current = 0
				}
			})
		}
		live, err := set(d.live)
		if err != nil {
			return hypervisor.WrapDomain(op, name, err)
		}
		if d.persistent && d.config != d.live {
			cfg, err := set(d.config)
			if err != nil {
				return hypervisor.WrapDomain(op, name, err)
			}
			d.config = cfg
		} else if d.persistent {
			d.config = live
		}
		d.live = live
		return nil
	})
}

// PluggableMemory reads the running domain's virtio-mem device.
func (h *Host) PluggableMemory(ctx context.Context, name string) (hypervisor.PluggableMemory, error) {
	const op = "pluggable memory"
	var pm hypervisor.PluggableMemory
	err := h.do(ctx, func(now time.Time) error {
		d, err := h.lookup(op, name)
		if err != nil {
			return err
		}
		dev := virtioMemDevice(d.spec().def)
		if dev == nil {
			return hypervisor.WrapDomain(op, name, fmt.Errorf("the domain has no virtio-mem device: %w", hypervisor.ErrNotSupported))
		}
		pm, err = pluggableOf(dev)
		return hypervisor.WrapDomain(op, name, err)
	})
	return pm, err
}

// RequestPluggableMemory sets the requested size of the running domain's
// virtio-mem device, as libvirt's virDomainUpdateDeviceFlags with the live
// flag does. The simulated guest has a virtio-mem driver and plugs or
// unplugs the memory at once; its current memory follows.
func (h *Host) RequestPluggableMemory(ctx context.Context, name string, bytes uint64) error {
	const op = "update memory device"
	return h.do(ctx, func(now time.Time) error {
		d, err := h.lookup(op, name)
		if err != nil {
			return err
		}
		if !d.state.IsActive() {
			return invalidState(op, name, "domain is not running")
		}
		if d.job != nil || d.incoming != nil {
			return invalidState(op, name, "domain has a migration job")
		}
		dev := virtioMemDevice(d.live.def)
		if dev == nil {
			return hypervisor.WrapDomain(op, name, fmt.Errorf("the domain has no virtio-mem device: %w", hypervisor.ErrNotSupported))
		}
		pm, err := pluggableOf(dev)
		if err != nil {
			return hypervisor.WrapDomain(op, name, err)
		}
		if bytes > pm.SizeBytes || pm.BlockBytes > 0 && bytes%pm.BlockBytes != 0 {
			return hypervisor.WrapDomain(op, name, fmt.Errorf("requested size %d is not a multiple of the block size %d up to the device size %d: %w",
				bytes, pm.BlockBytes, pm.SizeBytes, hypervisor.ErrInvalidArgument))
		}
		d.advance(h, now)
		live, err := editSpec(d.live, func(def *libvirtxml.Domain) {
			virtioMemDevice(def).Target.Requested = &libvirtxml.DomainMemorydevTargetRequested{Value: uint(bytes >> 10), Unit: "KiB"}
		})
		if err != nil {
			return hypervisor.WrapDomain(op, name, err)
		}
		d.live = live
		return nil
	})
}

// editSpec returns a new spec from sp's definition changed by edit; sp is
// not changed (the persistent definition may share it).
func editSpec(sp *spec, edit func(*libvirtxml.Domain)) (*spec, error) {
	text, err := sp.def.Marshal()
	if err != nil {
		return nil, err
	}
	def := &libvirtxml.Domain{}
	if err := def.Unmarshal(text); err != nil {
		return nil, err
	}
	edit(def)
	text, err = def.Marshal()
	if err != nil {
		return nil, err
	}
	return parseSpec(text)
}

func virtioMemDevice(def *libvirtxml.Domain) *libvirtxml.DomainMemorydev {
	if def == nil || def.Devices == nil {
		return nil
	}
	for i := range def.Devices.Memorydevs {
		if m := &def.Devices.Memorydevs[i]; m.Model == virtioMem && m.Target != nil {
			return m
		}
	}
	return nil
}

// pluggableOf reads a virtio-mem device. The simulated guest has plugged
// all that was requested (libvirt reports it as the device's <current>).
func pluggableOf(dev *libvirtxml.DomainMemorydev) (hypervisor.PluggableMemory, error) {
	var pm hypervisor.PluggableMemory
	var err error
	t := dev.Target
	if t.Size == nil {
		return pm, fmt.Errorf("virtio-mem device without a size: %w", hypervisor.ErrInvalidArgument)
	}
	if pm.SizeBytes, err = scaled(uint64(t.Size.Value), t.Size.Unit); err != nil {
		return pm, err
	}
	if t.Block != nil {
		if pm.BlockBytes, err = scaled(uint64(t.Block.Value), t.Block.Unit); err != nil {
			return pm, err
		}
	}
	if t.Requested != nil {
		if pm.RequestedBytes, err = scaled(uint64(t.Requested.Value), t.Requested.Unit); err != nil {
			return pm, err
		}
	}
	pm.CurrentBytes = pm.RequestedBytes
	return pm, nil
}

// virtioMemSizes gives a domain with a virtio-mem device the sizes libvirt
// reports for it: its memory is its NUMA cells' (the boot memory) plus the
// device's size, its current memory the boot memory plus what the guest
// plugged. Other domains keep max and cur.
func virtioMemSizes(def *libvirtxml.Domain, max, cur uint64) (uint64, uint64, error) {
	dev := virtioMemDevice(def)
	if dev == nil || def.CPU == nil || def.CPU.Numa == nil || len(def.CPU.Numa.Cell) == 0 {
		return max, cur, nil
	}
	var boot uint64
	for i, c := range def.CPU.Numa.Cell {
		b, err := scaled(uint64(c.Memory), c.Unit)
		if err != nil {
			return 0, 0, invalid(fmt.Sprintf("domain.cpu.numa.cell[%d].unit", i), err.Error())
		}
		boot += b
	}
	pm, err := pluggableOf(dev)
	if err != nil {
		return 0, 0, invalid("domain.devices.memory", err.Error())
	}
	if pm.RequestedBytes > pm.SizeBytes {
		return 0, 0, invalid("domain.devices.memory.target.requested", "larger than the size")
	}
	return boot + pm.SizeBytes, boot + pm.CurrentBytes, nil
}
