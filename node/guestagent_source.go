package node

import (
	"log/slog"
	"strings"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/guestagent"
)

// GuestAgentSourceOptions configure [NewGuestAgentSource].
type GuestAgentSourceOptions struct {
	// Poller is the template for every guest's poller (intervals, bounds,
	// clock); the zero value is KubeVirt's intervals. OnChange is set per
	// guest.
	Poller guestagent.PollerOptions
	// Client bounds replies and sets call deadlines; zero = defaults.
	Client guestagent.Options
	// Workers bounds the guest-agent calls in flight for the whole host;
	// default DefaultGuestAgentWorkers.
	Workers int
	// Jitter spreads each poll's next run by up to this fraction of its
	// wait (so guests started together do not poll together); default
	// DefaultGuestAgentJitter, negative for none.
	Jitter float64
	// Float64 draws the jitter, a uniform value in [0, 1); nil is
	// math/rand/v2.Float64.
	Float64 func() float64
	// KeyedFloat64, when set, draws the jitter instead of Float64: a
	// uniform value in [0, 1) for one poll (key names the domain and the
	// poll) at one time, that depends on nothing else, so that which of
	// the pool's concurrent workers draws first, and how often, does not
	// change the values. A seeded cluster sets it.
	KeyedFloat64 func(key string, at time.Time) float64
	// Logger receives logs; nil discards them.
	Logger *slog.Logger
}

// NewGuestAgentSource returns a GuestInfoSource that polls each running
// domain's guest agent through ac (a hypervisor.AgentCommander), with
// KubeVirt's intervals unless opts say otherwise. All guests of the host
// share one pool of opts.Workers workers and one schedule: no goroutine or
// timer per guest.
func NewGuestAgentSource(ac guestagent.AgentCommander, opts GuestAgentSourceOptions) GuestInfoSource {
	return newGuestAgentPool(ac, opts)
}

// guestInfoFrom converts a poller snapshot (already sanitized and bounded)
// into what status needs.
func guestInfoFrom(snap guestagent.Snapshot) GuestInfo {
	gi := GuestInfo{
		Connected: snap.Connected,
		OS: virtkit.VirtualMachineInstanceGuestOSInfo{
			Name: snap.OSInfo.Name, KernelRelease: snap.OSInfo.KernelRelease, Version: snap.OSInfo.Version,
			PrettyName: snap.OSInfo.PrettyName, VersionID: snap.OSInfo.VersionID, KernelVersion: snap.OSInfo.KernelVersion,
			Machine: snap.OSInfo.Machine, ID: snap.OSInfo.ID,
		},
		Hostname:       snap.HostName,
		Timezone:       snap.Timezone.Zone,
		FSFreezeStatus: string(snap.FSFreezeStatus),
	}
	if snap.FSFreezeStatus == "thawed" {
		gi.FSFreezeStatus = ""
	}
	if snap.AgentVersion != "" || len(snap.SupportedCommands) > 0 {
		info := guestagent.Info{Version: snap.AgentVersion, SupportedCommands: snap.SupportedCommands}
		if !guestagent.AgentSupported(info) {
			gi.UnsupportedReason = "This guest agent doesn't support required basic commands"
			if missing := guestagent.MissingRequiredCommands(info); len(missing) > 0 {
				gi.UnsupportedReason += ": " + strings.Join(missing, ", ")
			}
		}
	}
	for _, i := range snap.Interfaces {
		gif := GuestInterface{Name: i.Name, MAC: strings.ToLower(i.HardwareAddress)}
		for _, a := range i.IPAddresses {
			gif.IPs = append(gif.IPs, a.Address)
		}
		gi.Interfaces = append(gi.Interfaces, gif)
	}
	for _, u := range snap.Users {
		gi.Users = append(gi.Users, GuestUser{UserName: u.User, Domain: u.Domain, LoginTime: u.LoginTime})
	}
	for _, f := range snap.Filesystems {
		gf := GuestFilesystem{DiskName: f.Name, MountPoint: f.Mountpoint, FileSystemType: f.Type}
		if f.UsedBytes != nil {
			gf.UsedBytes = int64(*f.UsedBytes)
		}
		if f.TotalBytes != nil {
			gf.TotalBytes = int64(*f.TotalBytes)
		}
		gi.Filesystems = append(gi.Filesystems, gf)
	}
	return gi
}
