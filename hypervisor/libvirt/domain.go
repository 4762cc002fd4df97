//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"
	"errors"
	"time"

	lv "libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hypervisor"
)

// agentChannel is the virtio-serial port name of the QEMU guest agent.
const agentChannel = "org.qemu.guest_agent.0"

const (
	// shutdownPoll is how often Shutdown looks whether the guest is off yet.
	shutdownPoll = 100 * time.Millisecond
	// shutdownRepeat is how often Shutdown asks again: a request that
	// arrives while the guest still boots (no ACPI handler, no agent yet)
	// is lost.
	shutdownRepeat = 5 * time.Second
)

// Define makes (or replaces) a persistent domain from libvirt XML.
func (h *Hypervisor) Define(ctx context.Context, domainXML string) (hypervisor.DomainID, error) {
	id, err := call(ctx, h, func(c *lv.Connect) (hypervisor.DomainID, error) {
		d, err := c.DomainDefineXML(domainXML)
		if err != nil {
			return hypervisor.DomainID{}, err
		}
		defer freeDomain(h.log, d)
		return domainID(d)
	})
	if err != nil {
		return id, wrap("define", xmlName(domainXML), err)
	}
	return id, nil
}

// xmlName is the domain name in domainXML, for error messages; "" when the
// XML does not parse (libvirt then says why).
func xmlName(domainXML string) string {
	var d libvirtxml.Domain
	if err := d.Unmarshal(domainXML); err != nil {
		return ""
	}
	return d.Name
}

func domainID(d *lv.Domain) (hypervisor.DomainID, error) {
	name, err := d.GetName()
	if err != nil {
		return hypervisor.DomainID{}, err
	}
	uuid, err := d.GetUUIDString()
	if err != nil {
		return hypervisor.DomainID{}, err
	}
	return hypervisor.DomainID{Name: name, UUID: uuid}, nil
}

// Undefine removes the persistent definition (and the NVRAM file, if any).
func (h *Hypervisor) Undefine(ctx context.Context, name string) error {
	return doDomain(ctx, h, "undefine", name, func(d *lv.Domain) error {
		err := d.UndefineFlags(lv.DOMAIN_UNDEFINE_NVRAM)
		if isUnsupportedFlags(err) {
			// Drivers without NVRAM (the test driver) accept no flags.
			err = d.Undefine()
		}
		return err
	})
}

func isUnsupportedFlags(err error) bool {
	var le lv.Error
	return errors.As(err, &le) && le.Code == lv.ERR_INVALID_ARG && errors.Is(translate(err), hypervisor.ErrNotSupported)
}

// Start boots a defined domain, paused when opts.Paused.
func (h *Hypervisor) Start(ctx context.Context, name string, opts hypervisor.StartOptions) error {
	return doDomain(ctx, h, "start", name, func(d *lv.Domain) error {
		if opts.Paused {
			return d.CreateWithFlags(lv.DOMAIN_START_PAUSED)
		}
		return d.Create()
	})
}

// RequestShutdown asks the guest to power off with libvirt's default
// method (virDomainShutdown: the guest agent when one is connected, else
// the ACPI power button) and returns without waiting; it implements
// [hypervisor.ShutdownRequester]. libvirt refuses to ask a paused guest:
// that is an error matching [hypervisor.ErrInvalidState].
func (h *Hypervisor) RequestShutdown(ctx context.Context, name string) error {
	return doDomain(ctx, h, "shutdown", name, func(d *lv.Domain) error { return d.Shutdown() })
}

// Shutdown asks the guest to power off as [Hypervisor.RequestShutdown]
// does, repeats the request every few seconds (a paused guest is asked
// once it runs again), and waits until the domain is shut off or gone, or
// ctx ends.
func (h *Hypervisor) Shutdown(ctx context.Context, name string) error {
	if err := h.RequestShutdown(ctx, name); err != nil {
		if !errors.Is(err, hypervisor.ErrInvalidState) {
			return err
		}
		// libvirt refuses to ask a paused guest; it is asked again once
		// it runs. A shut-off domain is the caller's mistake.
		if st, _, serr := h.state(ctx, name); serr != nil || !st.IsActive() {
			return err
		}
	}
	tick := time.NewTicker(shutdownPoll)
	defer tick.Stop()
	lastAsk := time.Now()
	for {
		if time.Since(lastAsk) >= shutdownRepeat {
			// Errors here mostly mean the guest got off meanwhile; the
			// state check below tells.
			_ = h.RequestShutdown(ctx, name)
			lastAsk = time.Now()
		}
		st, _, err := h.state(ctx, name)
		switch {
		case errors.Is(err, hypervisor.ErrNotFound):
			return nil // a transient domain is gone once it stopped
		case err != nil:
			return wrap("shutdown", name, err)
		case !st.IsActive():
			return nil
		}
		select {
		case <-ctx.Done():
			return wrap("shutdown", name, ctx.Err())
		case <-tick.C:
		}
	}
}

// Reboot asks the guest to reboot (libvirt's default method).
func (h *Hypervisor) Reboot(ctx context.Context, name string) error {
	return doDomain(ctx, h, "reboot", name, func(d *lv.Domain) error { return d.Reboot(0) })
}

// Destroy stops the domain at once.
func (h *Hypervisor) Destroy(ctx context.Context, name string) error {
	return doDomain(ctx, h, "destroy", name, func(d *lv.Domain) error { return d.Destroy() })
}

// Pause suspends the vCPUs.
func (h *Hypervisor) Pause(ctx context.Context, name string) error {
	return doDomain(ctx, h, "pause", name, func(d *lv.Domain) error { return d.Suspend() })
}

// Resume continues paused vCPUs.
func (h *Hypervisor) Resume(ctx context.Context, name string) error {
	return doDomain(ctx, h, "resume", name, func(d *lv.Domain) error { return d.Resume() })
}

func (h *Hypervisor) state(ctx context.Context, name string) (hypervisor.DomainState, hypervisor.StateReason, error) {
	type sr struct {
		s hypervisor.DomainState
		r hypervisor.StateReason
	}
	v, err := withDomain(ctx, h, "state", name, func(_ *lv.Connect, d *lv.Domain) (sr, error) {
		s, reason, err := d.GetState()
		if err != nil {
			return sr{}, err
		}
		st, r := domainState(s, reason)
		return sr{st, r}, nil
	})
	return v.s, v.r, err
}

// List returns every domain, defined or running.
func (h *Hypervisor) List(ctx context.Context) ([]hypervisor.DomainInfo, error) {
	list, err := call(ctx, h, func(c *lv.Connect) ([]hypervisor.DomainInfo, error) {
		doms, err := c.ListAllDomains(0)
		if err != nil {
			return nil, err
		}
		defer func() {
			for i := range doms {
				freeDomain(h.log, &doms[i])
			}
		}()
		out := make([]hypervisor.DomainInfo, 0, len(doms))
		for i := range doms {
			info, err := domainInfo(&doms[i], false)
			if isNoDomain(err) {
				continue // vanished between the listing and the lookup
			}
			if err != nil {
				return nil, err
			}
			out = append(out, info)
		}
		return out, nil
	})
	return list, wrap("list", "", err)
}

func isNoDomain(err error) bool {
	var le lv.Error
	return errors.As(err, &le) && le.Code == lv.ERR_NO_DOMAIN
}

// Info returns one domain's identity, state, sizes and agent channel state.
func (h *Hypervisor) Info(ctx context.Context, name string) (hypervisor.DomainInfo, error) {
	return withDomain(ctx, h, "info", name, func(_ *lv.Connect, d *lv.Domain) (hypervisor.DomainInfo, error) {
		return domainInfo(d, true)
	})
}

func domainInfo(d *lv.Domain, withAgent bool) (hypervisor.DomainInfo, error) {
	var info hypervisor.DomainInfo
	var err error
	if info.DomainID, err = domainID(d); err != nil {
		return info, err
	}
	s, reason, err := d.GetState()
	if err != nil {
		return info, err
	}
	info.State, info.Reason = domainState(s, reason)
	if info.Persistent, err = d.IsPersistent(); err != nil {
		return info, err
	}
	li, err := d.GetInfo()
	if err != nil {
		return info, err
	}
	info.VCPUs = int(li.NrVirtCpu)
	info.MemoryBytes = li.Memory * 1024
	info.MaxMemoryBytes = li.MaxMem * 1024
	if info.State.IsActive() {
		info.CPUTime = hypervisor.Some(time.Duration(li.CpuTime))
		if withAgent {
			xml, err := d.GetXMLDesc(0)
			if err != nil {
				return info, err
			}
			info.Agent = agentState(xml)
		}
	}
	return info, nil
}

// agentState reads the guest-agent channel's state from live domain XML.
func agentState(domainXML string) hypervisor.ChannelState {
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(domainXML); err != nil || dom.Devices == nil {
		return hypervisor.ChannelUnknown
	}
	for _, ch := range dom.Devices.Channels {
		t := ch.Target
		if t == nil || t.VirtIO == nil || t.VirtIO.Name != agentChannel {
			continue
		}
		switch t.VirtIO.State {
		case "connected":
			return hypervisor.ChannelConnected
		case "disconnected":
			return hypervisor.ChannelDisconnected
		}
	}
	return hypervisor.ChannelUnknown
}

// XML returns the live domain XML (the persistent one when shut off).
func (h *Hypervisor) XML(ctx context.Context, name string) (string, error) {
	return withDomain(ctx, h, "xml", name, func(_ *lv.Connect, d *lv.Domain) (string, error) {
		return d.GetXMLDesc(0)
	})
}

// MigratableXML returns the domain XML as a migration sends it
// (VIR_DOMAIN_XML_MIGRATABLE): the CPU mode as defined, not expanded, and
// nothing only this host's QEMU uses. A destination XML is derived from it.
func (h *Hypervisor) MigratableXML(ctx context.Context, name string) (string, error) {
	return withDomain(ctx, h, "migratable xml", name, func(_ *lv.Connect, d *lv.Domain) (string, error) {
		return d.GetXMLDesc(lv.DOMAIN_XML_MIGRATABLE)
	})
}
