package qgaserver

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/virtkit/virtkit/guestagent"
)

// GuestSubnet is the network simulated guests' addresses come from
// ([GuestIPv4]): 10.0.0.0/8, the pod-network range a simulated guest
// plausibly gets a DHCP lease in.
const GuestSubnet = "10.0.0.0/8"

// GuestIPv4 is the IPv4 address a guest with this MAC reports on
// [GuestSubnet]: 10.x.y.z with x.y.z the MAC's last three bytes (z of 0 or
// 255 becomes 1 or 254, so the address is never the subnet's network or
// broadcast form). It is deterministic, and unique per guest in practice
// because the MACs of different guests differ in those bytes (virtkit's
// simulated hosts derive them from the domain UUID). "" for a MAC that
// does not parse as 6 bytes.
func GuestIPv4(mac string) string {
	hw, err := net.ParseMAC(mac)
	if err != nil || len(hw) != 6 {
		return ""
	}
	last := hw[5]
	switch last {
	case 0:
		last = 1
	case 255:
		last = 254
	}
	return fmt.Sprintf("10.%d.%d.%d", hw[3], hw[4], last)
}

// guestLinkLocal is the IPv6 link-local address of the MAC (modified
// EUI-64), as a Linux guest configures it.
func guestLinkLocal(mac string) string {
	hw, err := net.ParseMAC(mac)
	if err != nil || len(hw) != 6 {
		return ""
	}
	ip := net.IP{0xfe, 0x80, 0, 0, 0, 0, 0, 0, hw[0] ^ 0x02, hw[1], hw[2], 0xff, 0xfe, hw[3], hw[4], hw[5]}
	return ip.String()
}

// LinuxGuestWithMACs is [LinuxGuest] with one interface per MAC (eth0,
// eth1, ... in order), each reporting its [GuestIPv4] address (prefix 8)
// and its IPv6 link-local address, and one user (the cloud image's
// "fedora", logged in at loginTime).
func LinuxGuestWithMACs(hostname string, macs []string, loginTime time.Time) Config {
	cfg := LinuxGuest(hostname, "", "")
	ifaces := cfg.Interfaces[:1] // lo
	for i, mac := range macs {
		iface := guestagent.NetworkInterface{Name: fmt.Sprintf("eth%d", i), HardwareAddress: strings.ToLower(mac)}
		if ip := GuestIPv4(mac); ip != "" {
			iface.IPAddresses = append(iface.IPAddresses, guestagent.IPAddress{Type: "ipv4", Address: ip, Prefix: 8})
		}
		if ip := guestLinkLocal(mac); ip != "" {
			iface.IPAddresses = append(iface.IPAddresses, guestagent.IPAddress{Type: "ipv6", Address: ip, Prefix: 64})
		}
		ifaces = append(ifaces, iface)
	}
	cfg.Interfaces = ifaces
	if !loginTime.IsZero() {
		cfg.Users = []guestagent.User{{User: "fedora", LoginTime: float64(loginTime.UnixMicro()) / 1e6}}
	}
	return cfg
}
