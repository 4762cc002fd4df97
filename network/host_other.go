//go:build !linux

package network

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"

	"github.com/virtkit/virtkit"
)

// ErrHost wraps failures of host commands.
var ErrHost = errors.New("host network")

// ErrUnsupportedHost: the host cannot provide what a network asks for.
var ErrUnsupportedHost = errors.New("not supported by this host")

// VLANSupported is false off Linux.
func VLANSupported(context.Context, string) bool { return false }

// HostOptions configure a Host (Linux only).
type HostOptions struct {
	StateDir, Table, DNSMasq string
	Logger                   *slog.Logger
}

// Host is only implemented on Linux; elsewhere every call fails.
type Host struct{}

// NewHost returns a Host whose calls fail off Linux.
func NewHost(HostOptions) *Host { return &Host{} }

// Bridge describes a host bridge.
type Bridge struct {
	Name                      string
	Address                   netip.Prefix
	VLANFiltering, Masquerade bool
}

// DHCP describes a DHCP service on one interface.
type DHCP struct {
	Netns, Interface string
	Subnet           netip.Prefix
	Router           netip.Addr
	Subnet6          netip.Prefix
}

// Masquerade is one guest behind NAT.
type Masquerade struct {
	ID, PodBridge string
	PodAddress    netip.Prefix
	PodGateway    netip.Addr
	PodAddress6   netip.Prefix
	PodGateway6   netip.Addr
	GuestMAC      string
	Ports         []virtkit.Port
	PodMAC        string
	GatewayMAC    string
	Standby       bool
	MTU           int
	Owner         MasqueradeOwner
}

// MasqueradeOwner is the VMI and node a masquerade copy belongs to.
type MasqueradeOwner struct {
	Namespace, Name, UID, Node string
}

// GuestBridge is the bridge the guest's NIC attaches to.
func (m Masquerade) GuestBridge() string { return "vkm" + m.ID }

var errNotLinux = errors.New("host networking needs Linux")

func (*Host) EnsureBridge(context.Context, Bridge) error          { return errNotLinux }
func (*Host) VLANPort(context.Context, string, string, int) error { return errNotLinux }
func (*Host) VLANInterface(context.Context, string, string, int, netip.Prefix) error {
	return errNotLinux
}
func (*Host) SetDHCPHost(context.Context, DHCP, string, netip.Addr) error { return errNotLinux }
func (*Host) EnsureMasquerade(context.Context, Masquerade) error          { return errNotLinux }
func (*Host) RemoveMasquerade(context.Context, string) error              { return errNotLinux }
func (*Host) ActivateMasquerade(context.Context, Masquerade) error        { return errNotLinux }

// Masquerades lists recorded masquerade copies (none off Linux).
func (*Host) Masquerades() ([]Masquerade, error) { return nil, nil }

// ReapStale stops stale DHCP servers (none off Linux).
func (*Host) ReapStale(context.Context) (int, error) { return 0, nil }
func (*Host) Close(context.Context) error            { return nil }
