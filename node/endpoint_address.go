package node

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/internal/netpolicy"
)

// guestAddress is the address a port-forward dials: one the node itself
// assigned to the VMI on its network (its network resolver's lease for an
// interface the domain has, the pod address with masquerade), or one
// status.interfaces lists inside the operator's AllowedNetworks. An
// address only the guest agent reported is never trusted otherwise: the
// guest could name the node's loopback or the metadata service.
func (e *Endpoint) guestAddress(ctx context.Context, vmi *virtkit.VirtualMachineInstance, natMACs map[string]bool) (string, error) {
	var leased map[string][]string
	if r, ok := e.a.opts.Domain.NetworkResolver.(InterfaceAddresser); ok {
		var err error
		if leased, err = r.InterfaceAddresses(ctx, vmi); err != nil {
			return "", fmt.Errorf("vmi %s/%s: the addresses the node assigned: %w", vmi.Namespace, vmi.Name, err)
		}
	}
	return guestAddress(vmi, natMACs, leased, e.policy)
}

// guestAddress picks the address (IPv4 first) among the leased addresses
// of the VMI's domain interfaces not behind QEMU's user-mode NAT (natMACs)
// and the listed addresses inside policy.Allowed; each must pass the
// policy.
func guestAddress(vmi *virtkit.VirtualMachineInstance, natMACs map[string]bool, leased map[string][]string, policy netpolicy.Policy) (string, error) {
	var candidates []netip.Addr
	var refused []string
	consider := func(s string, allowedOnly bool) {
		ip, err := netip.ParseAddr(s)
		if err != nil || ip.Zone() != "" {
			return
		}
		if allowedOnly && !inPrefixes(ip, policy.Allowed) {
			refused = append(refused, s+" (reported, not assigned by the node)")
			return
		}
		if err := policy.Check(ip); err != nil {
			refused = append(refused, err.Error())
			return
		}
		candidates = append(candidates, ip)
	}
	for _, i := range vmi.Status.Interfaces {
		if natMACs[strings.ToLower(i.MAC)] {
			continue
		}
		if strings.Contains(i.InfoSource, virtkit.InfoSourceDomain) || i.InfoSource == "" && i.Name != "" {
			for _, a := range leased[i.Name] {
				consider(a, false)
			}
		}
		for _, a := range append([]string{i.IP}, i.IPs...) {
			if a != "" {
				consider(a, true)
			}
		}
	}
	for _, ip := range candidates {
		if ip.Is4() || ip.Is4In6() {
			return ip.Unmap().String(), nil
		}
	}
	if len(candidates) > 0 {
		return candidates[0].String(), nil
	}
	why := "status.interfaces lists no address the node assigned (a guest behind QEMU's user-mode NAT cannot be reached from the node: give it a pod network)"
	if len(refused) > 0 {
		why = "no address the node assigned; refused: " + strings.Join(refused, "; ")
	}
	return "", fmt.Errorf("vmi %s/%s: %w: %s", vmi.Namespace, vmi.Name, ErrNoGuestAddress, why)
}

func inPrefixes(ip netip.Addr, ps []netip.Prefix) bool {
	ip = ip.Unmap()
	for _, p := range ps {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
