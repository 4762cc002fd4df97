package node

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/guestagent"
)

// GuestAgentSourceOptions configure [NewGuestAgentSource].
type GuestAgentSourceOptions struct {
	// Poller is the template for every guest's poller (intervals, bounds);
	// the zero value is KubeVirt's intervals. OnChange is set per guest.
	Poller guestagent.PollerOptions
	// Client bounds replies and sets call deadlines; zero = defaults.
	Client guestagent.Options
	// Logger receives logs; nil discards them.
	Logger *slog.Logger
}

// guestAgentSource runs one guestagent.Poller per followed domain over the
// hypervisor's agent-command passthrough.
type guestAgentSource struct {
	ac   guestagent.AgentCommander
	opts GuestAgentSourceOptions

	mu      sync.Mutex
	ctx     context.Context
	changed func(namespace, name string)
	guests  map[string]*followedGuest
	pending []string // followed before Start
}

type followedGuest struct {
	poller *guestagent.Poller
	cancel context.CancelFunc
}

// NewGuestAgentSource returns a GuestInfoSource that polls each running
// domain's guest agent through ac (a hypervisor.AgentCommander), with
// KubeVirt's intervals unless opts say otherwise.
func NewGuestAgentSource(ac guestagent.AgentCommander, opts GuestAgentSourceOptions) GuestInfoSource {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &guestAgentSource{ac: ac, opts: opts, guests: map[string]*followedGuest{}}
}

func (s *guestAgentSource) Start(ctx context.Context, changed func(namespace, name string)) {
	s.mu.Lock()
	s.ctx, s.changed = ctx, changed
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	for _, d := range pending {
		s.Follow(d)
	}
	<-ctx.Done()
	s.mu.Lock()
	for name, g := range s.guests {
		g.cancel()
		delete(s.guests, name)
	}
	s.mu.Unlock()
}

func (s *guestAgentSource) Follow(domain string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.guests[domain]; ok {
		return
	}
	if s.ctx == nil {
		s.pending = append(s.pending, domain)
		return
	}
	ns, name, ok := SplitDomainName(domain)
	if !ok {
		return
	}
	po := s.opts.Poller
	changed := s.changed
	po.OnChange = func(guestagent.Snapshot) { changed(ns, name) }
	if po.Logger == nil {
		po.Logger = s.opts.Logger
	}
	client := guestagent.New(guestagent.NewPassthroughTransport(s.ac, domain, s.opts.Client), s.opts.Client)
	p := guestagent.NewPoller(client, po)
	ctx, cancel := context.WithCancel(s.ctx)
	s.guests[domain] = &followedGuest{poller: p, cancel: cancel}
	go func() { _ = p.Start(ctx) }()
}

func (s *guestAgentSource) Forget(domain string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.guests[domain]; ok {
		g.cancel()
		delete(s.guests, domain)
	}
	s.pending = slices.DeleteFunc(s.pending, func(d string) bool { return d == domain })
}

func (s *guestAgentSource) Info(domain string) (GuestInfo, bool) {
	s.mu.Lock()
	g, ok := s.guests[domain]
	s.mu.Unlock()
	if !ok {
		return GuestInfo{}, false
	}
	return guestInfoFrom(g.poller.Snapshot()), true
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
