package sim

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/guestagent/qgaserver"
	"github.com/virtkit/virtkit/hypervisor"
)

// GuestAgent answers guest-agent commands for one guest: one JSON command
// in, the reply object out, as libvirt's virDomainQemuAgentCommand returns
// it. [qgaserver.Server] is the built-in one.
type GuestAgent interface {
	HandleCommand(ctx context.Context, command string) (string, error)
}

// AgentOptions configure the simulated guest agents. Every domain whose
// XML has the org.qemu.guest_agent.0 channel gets one when it starts; it
// answers once the guest has booted and while the domain runs.
type AgentOptions struct {
	// Guest returns the configuration of a domain's simulated guest (OS
	// info, host name, interfaces, users, ...). When both are nil the guest
	// is [qgaserver.LinuxGuestWithMACs] named after the domain, with one
	// interface per domain interface reporting the domain's MAC and an
	// address on [qgaserver.GuestSubnet] derived from it, a logged-in user,
	// a root filesystem and the host's clock. Guest-shutdown requests reach
	// the simulated guest unless the Config sets OnShutdown.
	Guest func(domain hypervisor.DomainID) qgaserver.Config
	// GuestForDomain is Guest given the domain's interface MACs too (in
	// domain XML order; a MAC the XML leaves out is the one the host
	// derives from the UUID); it wins over Guest.
	GuestForDomain func(domain hypervisor.DomainID, macs []string) qgaserver.Config
	// New replaces the QGA server with another agent; it wins over Guest.
	New func(domain hypervisor.DomainID) (GuestAgent, error)
	// Addresses, when set, gives the IPv4 addresses the default guest
	// reports on the interface with this MAC, in place of the one derived
	// from the MAC (a DHCP lease from an IPAM); none keeps the derived one.
	Addresses func(mac string) []guestagent.IPAddress
}

// AgentCommand passes a raw QGA command to the domain's guest agent.
func (h *Host) AgentCommand(ctx context.Context, name string, command string) (string, error) {
	const op = "agent command"
	var agent GuestAgent
	err := h.do(ctx, func(now time.Time) error {
		d, err := h.lookup(op, name)
		if err != nil {
			return err
		}
		switch {
		case !d.state.IsActive():
			return invalidState(op, name, "domain is not running")
		case !d.spec().agent:
			return hypervisor.WrapDomain(op, name, fmt.Errorf("no %s channel: %w", agentChannelName, hypervisor.ErrAgentUnavailable))
		case !d.agentUp:
			return hypervisor.WrapDomain(op, name, fmt.Errorf("guest agent is not connected: %w", hypervisor.ErrAgentUnavailable))
		case d.agentErr != nil:
			return hypervisor.WrapDomain(op, name, d.agentErr)
		}
		agent = d.agent
		return nil
	})
	if err != nil {
		return "", err
	}
	reply, err := agent.HandleCommand(ctx, command)
	switch {
	case err == nil:
		return reply, nil
	case ctx.Err() != nil:
		return "", hypervisor.WrapDomain(op, name, err)
	}
	return "", hypervisor.WrapDomain(op, name, fmt.Errorf("%w: %w", hypervisor.ErrAgentUnavailable, err))
}

// GuestAgent returns the running domain's simulated guest agent, for
// changing the guest while it runs (a [qgaserver.Server] unless
// AgentOptions.New built another kind).
func (h *Host) GuestAgent(name string) (GuestAgent, error) {
	var agent GuestAgent
	err := h.do(context.Background(), func(now time.Time) error {
		d, err := h.lookup("guest agent", name)
		if err != nil {
			return err
		}
		if d.agent == nil {
			return invalidState("guest agent", name, "domain is not running or has no agent channel")
		}
		agent = d.agent
		return nil
	})
	return agent, err
}

// newAgent builds the agent of a domain instance starting from sp.
func (h *Host) newAgent(d *domain, sp *spec) (GuestAgent, error) {
	id := hypervisor.DomainID{Name: d.name(), UUID: d.uuid()}
	if h.opts.Agent.New != nil {
		return h.opts.Agent.New(id)
	}
	var cfg qgaserver.Config
	switch {
	case h.opts.Agent.GuestForDomain != nil:
		cfg = h.opts.Agent.GuestForDomain(id, guestMACs(sp, id.UUID))
	case h.opts.Agent.Guest != nil:
		cfg = h.opts.Agent.Guest(id)
	default:
		cfg = qgaserver.LinuxGuestWithMACs(guestHostname(id.Name), guestMACs(sp, id.UUID), h.clock.Now())
		if f := h.opts.Agent.Addresses; f != nil {
			leaseAddresses(cfg.Interfaces, f)
		}
		cfg.VCPUs = nil
		for i := range sp.vcpus {
			cfg.VCPUs = append(cfg.VCPUs, guestagent.VCPU{LogicalID: i, Online: true})
		}
	}
	if cfg.Clock == nil {
		cfg.Clock = h.clock.Now
	}
	var self GuestAgent // set before anyone can reach the agent
	if cfg.OnShutdown == nil {
		cfg.OnShutdown = func(mode string) error { return h.guestShutdown(d, self, mode) }
	}
	if cfg.Logger == nil {
		cfg.Logger = h.log
	}
	srv := qgaserver.New(cfg)
	self = srv
	return srv, nil
}

// guestHostname is the VMI name in virtkit's "<namespace>_<name>".
func guestHostname(domain string) string {
	if _, after, ok := strings.Cut(domain, "_"); ok && after != "" {
		return after
	}
	return domain
}

// guestMACs are the MACs of the domain's interfaces, in XML order; an
// interface without one gets QEMU's prefix and the rest from the UUID (and
// its index), stable across runs.
func guestMACs(sp *spec, uuid string) []string {
	var macs []string
	hex := strings.ReplaceAll(uuid, "-", "")
	for len(hex) < 6 {
		hex += "0"
	}
	for i := range sp.interfaces {
		if dev := sp.def.Devices; dev != nil && i < len(dev.Interfaces) && dev.Interfaces[i].MAC != nil && dev.Interfaces[i].MAC.Address != "" {
			macs = append(macs, dev.Interfaces[i].MAC.Address)
			continue
		}
		var last byte
		_, _ = fmt.Sscanf(hex[4:6], "%02x", &last)
		macs = append(macs, fmt.Sprintf("52:54:00:%s:%s:%02x", hex[0:2], hex[2:4], last+byte(i)))
	}
	return macs
}

// guestShutdown is the guest acting on guest-shutdown: it powers off (or
// reboots) as after an ACPI request.
func (h *Host) guestShutdown(d *domain, agent GuestAgent, mode string) error {
	return h.do(context.Background(), func(now time.Time) error {
		if h.domains[d.name()] != d || d.agent != agent || !d.running() {
			return fmt.Errorf("guest is not running")
		}
		if mode == "reboot" {
			h.rebootGuest(d, now)
			return nil
		}
		h.requestShutdown(d, now, h.opts.ShutdownDelay)
		return nil
	})
}

// leaseAddresses replaces the derived IPv4 address of every interface the
// lookup knows.
func leaseAddresses(ifaces []guestagent.NetworkInterface, lookup func(mac string) []guestagent.IPAddress) {
	for i := range ifaces {
		got := lookup(ifaces[i].HardwareAddress)
		if len(got) == 0 || ifaces[i].Name == "lo" {
			continue
		}
		keep := append([]guestagent.IPAddress(nil), got...)
		for _, a := range ifaces[i].IPAddresses {
			if a.Type != "ipv4" {
				keep = append(keep, a)
			}
		}
		ifaces[i].IPAddresses = keep
	}
}
