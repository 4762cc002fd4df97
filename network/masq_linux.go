//go:build linux

package network

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/virtkit/virtkit"
)

// KubeVirt's masquerade addressing as the guest sees it.
var (
	MasqueradeSubnet  = netip.MustParsePrefix("10.0.2.0/24")
	MasqueradeGateway = netip.MustParsePrefix("10.0.2.1/24")
	MasqueradeGuest   = netip.MustParseAddr("10.0.2.2")
	// IPv6, where the pod network has an IPv6 range.
	MasqueradeSubnet6  = netip.MustParsePrefix("fd10:0:2::/120")
	MasqueradeGateway6 = netip.MustParsePrefix("fd10:0:2::1/120")
	MasqueradeGuest6   = netip.MustParseAddr("fd10:0:2::2")
)

// Masquerade is one guest behind NAT the way KubeVirt's masquerade binding
// puts it: the guest sees 10.0.2.2/24 with gateway 10.0.2.1, and the
// outside sees PodAddress.
type Masquerade struct {
	// ID names the pieces (at most 10 characters): namespace vk-ID, guest
	// bridge vkmID, veths vkgID/vkiID (guest side) and vkpID/vkeID (pod
	// side).
	ID string
	// PodBridge is the node's pod network bridge; PodAddress the VMI's
	// address on it and PodGateway the bridge's address.
	PodBridge  string
	PodAddress netip.Prefix
	PodGateway netip.Addr
	// PodAddress6 and PodGateway6, when valid, add IPv6: the guest gets
	// fd10:0:2::2/120 (DHCPv6, router advertisements from its gateway
	// fd10:0:2::1) behind NAT66 of PodAddress6.
	PodAddress6 netip.Prefix
	PodGateway6 netip.Addr
	// GuestMAC gets 10.0.2.2 by DHCP.
	GuestMAC string
	// Ports, when any, are the only ones forwarded to the guest; none
	// forwards every TCP and UDP port.
	Ports []virtkit.Port
	// PodMAC and GatewayMAC, when set, are the MACs of the namespace's
	// pod-side leg (holding PodAddress) and guest-side leg (holding
	// 10.0.2.1). A migrating guest's copies on both nodes use the same
	// ones, so neither the guest's nor the pod network's neighbour caches
	// go stale at the switchover.
	PodMAC, GatewayMAC string
	// Standby builds everything but leaves the pod-side leg off the pod
	// bridge, so the pod address answers only where the guest runs (a
	// migration target prepares its copy this way and calls
	// ActivateMasquerade once the guest runs there).
	Standby bool
	// MTU, when set, is given to the copy's links (the guest bridge and
	// both veth pairs), so the path matches the guest NIC's MTU.
	MTU int
	// Owner says whose copy this is; the Host records it with the copy
	// (see Host.Masquerades), so a restarted node agent can tell its
	// guests' copies from stale ones.
	Owner MasqueradeOwner
}

// MasqueradeOwner is the VMI and node a masquerade copy belongs to.
type MasqueradeOwner struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	UID       string `json:"uid,omitempty"`
	Node      string `json:"node,omitempty"`
}

// GuestBridge is the bridge the guest's NIC attaches to.
func (m Masquerade) GuestBridge() string { return "vkm" + m.ID }

// Netns is the network namespace holding the NAT.
func (m Masquerade) Netns() string { return "vk-" + m.ID }

// EnsureMasquerade builds the guest's NAT: a network namespace that owns
// the pod address (a veth on the pod bridge) and routes between it and a
// per-guest bridge where it is 10.0.2.1, with nftables DNAT of the
// declared ports to 10.0.2.2, source NAT of the guest's traffic, and a
// DHCP server handing the guest 10.0.2.2. Nothing with 10.0.2.0/24 lives
// in the host namespace, so any number of guests use the same addresses.
// Idempotent.
func (h *Host) EnsureMasquerade(ctx context.Context, m Masquerade) error {
	if m.ID == "" || len(m.ID) > 10 {
		return fmt.Errorf("%w: masquerade id %q must be 1 to 10 characters", ErrHost, m.ID)
	}
	ns := m.Netns()
	h.mu.Lock()
	_, known := h.netns[ns]
	h.mu.Unlock()
	if !known {
		if _, err := run(ctx, "", "ip", "netns", "add", ns); err != nil && !strings.Contains(err.Error(), "File exists") {
			return err
		}
		h.mu.Lock()
		h.netns[ns] = &netnsState{}
		h.mu.Unlock()
	}
	if err := h.EnsureBridge(ctx, Bridge{Name: m.GuestBridge()}); err != nil {
		return err
	}
	gwHost, gwIn := "vkg"+m.ID, "vki"+m.ID
	podHost, podIn := "vkp"+m.ID, "vke"+m.ID
	for _, pair := range [][3]string{{gwHost, gwIn, m.GatewayMAC}, {podHost, podIn, m.PodMAC}} {
		args := []string{"type", "veth", "peer", "name", pair[1]}
		if pair[2] != "" {
			args = append(args, "address", pair[2])
		}
		if _, err := h.ensureLink(ctx, pair[0], append(args, "netns", ns)...); err != nil {
			return err
		}
	}
	if m.MTU > 0 {
		mtu := strconv.Itoa(m.MTU)
		for _, l := range [][2]string{{"", m.GuestBridge()}, {"", gwHost}, {"", podHost}, {ns, gwIn}, {ns, podIn}} {
			if _, err := run(ctx, l[0], "ip", "link", "set", "dev", l[1], "mtu", mtu); err != nil {
				return err
			}
		}
	}
	podLeg := []string{"", "ip", "link", "set", "dev", podHost, "master", m.PodBridge, "up"}
	if m.Standby {
		podLeg = []string{"", "ip", "link", "set", "dev", podHost, "down"}
	}
	steps := [][]string{
		{"", "ip", "link", "set", "dev", gwHost, "master", m.GuestBridge(), "up"},
		podLeg,
		{ns, "ip", "link", "set", "dev", "lo", "up"},
		{ns, "ip", "link", "set", "dev", gwIn, "up"},
		{ns, "ip", "link", "set", "dev", podIn, "up"},
		{ns, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"},
	}
	for _, s := range steps {
		if _, err := run(ctx, s[0], s[1], s[2:]...); err != nil {
			return err
		}
	}
	if err := ensureAddr(ctx, ns, gwIn, MasqueradeGateway); err != nil {
		return err
	}
	if err := ensureAddr(ctx, ns, podIn, m.PodAddress); err != nil {
		return err
	}
	if m.PodGateway.IsValid() {
		// onlink: the route stays while a standby leg has no carrier.
		if _, err := run(ctx, ns, "ip", "route", "replace", "default", "via", m.PodGateway.String(), "dev", podIn, "onlink"); err != nil {
			return err
		}
	}
	d := DHCP{Netns: ns, Interface: gwIn, Subnet: MasqueradeSubnet, Router: MasqueradeGateway.Addr()}
	if m.PodAddress6.IsValid() {
		d.Subnet6 = MasqueradeSubnet6
		if _, err := run(ctx, ns, "sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/all/forwarding"); err != nil {
			return err
		}
		if err := ensureAddr(ctx, ns, gwIn, MasqueradeGateway6); err != nil {
			return err
		}
		if err := ensureAddr(ctx, ns, podIn, m.PodAddress6); err != nil {
			return err
		}
		if m.PodGateway6.IsValid() {
			if _, err := run(ctx, ns, "ip", "-6", "route", "replace", "default", "via", m.PodGateway6.String(), "dev", podIn, "onlink"); err != nil {
				return err
			}
		}
	}
	if err := nftScript(ctx, ns, masqueradeRules(m, podIn)); err != nil {
		return err
	}
	h.own(m.GuestBridge(), gwHost, podHost)
	if err := h.recordMasquerade(m); err != nil {
		return err
	}
	if m.PodAddress6.IsValid() {
		if err := h.SetDHCPHost(ctx, d, m.GuestMAC, MasqueradeGuest6); err != nil {
			return err
		}
	}
	return h.SetDHCPHost(ctx, d, m.GuestMAC, MasqueradeGuest)
}

// masqueradeRules is the namespace's nftables table, replaced whole.
func masqueradeRules(m Masquerade, podIn string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "table inet virtkit\ndelete table inet virtkit\ntable inet virtkit {\n")
	fmt.Fprintf(&b, "  chain prerouting {\n    type nat hook prerouting priority dstnat;\n")
	type family struct {
		nft       string
		pod       netip.Addr
		guest     netip.Addr
		guestNets netip.Prefix
	}
	fams := []family{{"ip", m.PodAddress.Addr(), MasqueradeGuest, MasqueradeSubnet}}
	if m.PodAddress6.IsValid() {
		fams = append(fams, family{"ip6", m.PodAddress6.Addr(), MasqueradeGuest6, MasqueradeSubnet6})
	}
	for _, f := range fams {
		if len(m.Ports) == 0 {
			fmt.Fprintf(&b, "    iifname %[1]q %[2]s daddr %[3]s meta l4proto { tcp, udp } dnat %[2]s to %[4]s\n", podIn, f.nft, f.pod, f.guest)
		}
		for _, p := range m.Ports {
			proto := strings.ToLower(p.Protocol)
			if proto == "" {
				proto = "tcp"
			}
			fmt.Fprintf(&b, "    iifname %[1]q %[2]s daddr %[3]s %[4]s dport %[5]d dnat %[2]s to %[6]s\n", podIn, f.nft, f.pod, proto, p.Port, f.guest)
		}
	}
	fmt.Fprintf(&b, "  }\n  chain postrouting {\n    type nat hook postrouting priority srcnat;\n")
	for _, f := range fams {
		fmt.Fprintf(&b, "    iifname %q oifname %q %s saddr %s masquerade\n", "vki"+m.ID, podIn, f.nft, f.guestNets)
	}
	fmt.Fprintf(&b, "  }\n}\n")
	return b.String()
}

// ActivateMasquerade joins a standby masquerade's pod-side leg to the pod
// bridge: from then on the pod address answers here. Idempotent.
func (h *Host) ActivateMasquerade(ctx context.Context, m Masquerade) error {
	if m.ID == "" || len(m.ID) > 10 {
		return fmt.Errorf("%w: masquerade id %q must be 1 to 10 characters", ErrHost, m.ID)
	}
	_, err := run(ctx, "", "ip", "link", "set", "dev", "vkp"+m.ID, "master", m.PodBridge, "up")
	return err
}

// RemoveMasquerade tears down one guest's NAT (its DHCP server, namespace
// and links). Idempotent.
func (h *Host) RemoveMasquerade(ctx context.Context, id string) error {
	m := Masquerade{ID: id}
	ns := m.Netns()
	h.mu.Lock()
	key := DHCP{Netns: ns, Interface: "vki" + id}.key()
	s := h.dhcp[key]
	delete(h.dhcp, key)
	delete(h.netns, ns)
	h.mu.Unlock()
	if s != nil {
		s.stop()
	}
	h.forgetMasquerade(id)
	var errs []string
	if _, err := run(ctx, "", "ip", "netns", "del", ns); err != nil && !strings.Contains(err.Error(), "No such file") {
		errs = append(errs, err.Error())
	}
	for _, l := range []string{"vkg" + id, "vkp" + id, m.GuestBridge()} {
		// A veth whose peer was in the namespace goes away with it, but
		// the kernel tears a namespace down asynchronously: the link may
		// vanish between the check and the delete.
		if linkExists(ctx, "", l) {
			if _, err := run(ctx, "", "ip", "link", "del", "dev", l); err != nil && linkExists(ctx, "", l) {
				errs = append(errs, err.Error())
			}
		}
		h.forget(l)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func (h *Host) forget(link string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, l := range h.links {
		if l == link {
			h.links = append(h.links[:i], h.links[i+1:]...)
			return
		}
	}
}
