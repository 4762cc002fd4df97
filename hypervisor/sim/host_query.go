package sim

import (
	"context"
	"fmt"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hypervisor"
)

// List returns every domain, sorted by name.
func (h *Host) List(ctx context.Context) ([]hypervisor.DomainInfo, error) {
	var list []hypervisor.DomainInfo
	err := h.do(ctx, func(now time.Time) error {
		for _, name := range h.order {
			list = append(list, h.info(h.current(h.domains[name])))
		}
		return nil
	})
	return list, err
}

// Info returns one domain's state and sizes.
func (h *Host) Info(ctx context.Context, name string) (hypervisor.DomainInfo, error) {
	var info hypervisor.DomainInfo
	err := h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("info", name)
		if err != nil {
			return err
		}
		info = h.info(d)
		return nil
	})
	return info, err
}

func (h *Host) info(d *domain) hypervisor.DomainInfo {
	sp := d.spec()
	info := hypervisor.DomainInfo{
		DomainID:       hypervisor.DomainID{Name: d.name(), UUID: d.uuid()},
		State:          d.state,
		Reason:         d.reason,
		Persistent:     d.persistent,
		VCPUs:          sp.vcpus,
		MemoryBytes:    sp.curMemory,
		MaxMemoryBytes: sp.maxMemory,
		Agent:          d.agentState(),
	}
	if d.state.IsActive() {
		info.CPUTime = hypervisor.Some(time.Duration(d.cpu))
	}
	return info
}

func (d *domain) agentState() hypervisor.ChannelState {
	switch {
	case !d.spec().agent:
		return hypervisor.ChannelUnknown
	case d.agentUp:
		return hypervisor.ChannelConnected
	}
	return hypervisor.ChannelDisconnected
}

// XML returns the live domain XML: the definition plus what the host
// filled in while it runs (id, interface names, aliases, agent state).
func (h *Host) XML(ctx context.Context, name string) (string, error) {
	var view xmlView
	err := h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("xml", name)
		if err != nil {
			return err
		}
		view = xmlView{sp: d.spec(), active: d.state.IsActive(), id: d.id, agent: d.agentState()}
		return nil
	})
	if err != nil {
		return "", err
	}
	// Rendering is the expensive part; it reads only the snapshot, so it
	// runs outside the host lock.
	out, err := liveXML(view)
	if err != nil {
		return "", hypervisor.WrapDomain("xml", name, err)
	}
	return out, nil
}

// xmlView is what the live XML of a domain depends on, taken under the
// host lock. Specs are replaced on redefinition, never changed in place.
type xmlView struct {
	sp     *spec
	active bool
	id     int
	agent  hypervisor.ChannelState
}

func liveXML(d xmlView) (string, error) {
	text, err := d.sp.def.Marshal()
	if err != nil {
		return "", err
	}
	def := &libvirtxml.Domain{}
	if err := def.Unmarshal(text); err != nil { // a deep copy
		return "", err
	}
	if !d.active {
		return def.Marshal()
	}
	id := d.id
	def.ID = &id
	if dev := def.Devices; dev != nil {
		for i := range dev.Interfaces {
			iface := &dev.Interfaces[i]
			if iface.Target == nil {
				iface.Target = &libvirtxml.DomainInterfaceTarget{Dev: fmt.Sprintf("vnet%d", i)}
			}
			if iface.Alias == nil {
				iface.Alias = &libvirtxml.DomainAlias{Name: fmt.Sprintf("net%d", i)}
			}
		}
		for i := range dev.Disks {
			if dev.Disks[i].Alias == nil {
				dev.Disks[i].Alias = &libvirtxml.DomainAlias{Name: fmt.Sprintf("virtio-disk%d", i)}
			}
		}
		for i := range dev.Channels {
			c := &dev.Channels[i]
			if c.Target != nil && c.Target.VirtIO != nil && c.Target.VirtIO.Name == agentChannelName {
				c.Target.VirtIO.State = string(d.agent)
			}
		}
	}
	return def.Marshal()
}
