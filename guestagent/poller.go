package guestagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// KubeVirt's agent poller intervals (virt-launcher flag defaults).
const (
	DefaultVersionInterval  = 300 * time.Second
	DefaultFSInfoInterval   = 300 * time.Second
	DefaultFSFreezeInterval = 5 * time.Second
	DefaultSysInterval      = 120 * time.Second
	DefaultUsersInterval    = 10 * time.Second
	DefaultInitialInterval  = 10 * time.Second
	DefaultSnapshotMaxItems = 128
	DefaultSnapshotMaxStr   = 256
)

// PollerOptions configures a Poller. The zero value is KubeVirt's behaviour.
type PollerOptions struct {
	// Worker intervals: guest-info (300 s), guest-get-fsinfo (300 s),
	// guest-fsfreeze-status (5 s), the "sys" group of interfaces, OS info,
	// host name and time zone (120 s), guest-get-users (10 s).
	VersionInterval  time.Duration
	FSInfoInterval   time.Duration
	FSFreezeInterval time.Duration
	SysInterval      time.Duration
	UsersInterval    time.Duration
	// InitialInterval is the first wait after the immediate first poll; it
	// doubles until it reaches the worker's interval (10 s).
	InitialInterval time.Duration
	// OnChange is called with a copy of the snapshot whenever OS info,
	// interfaces, connectivity or the fsfreeze status change (what KubeVirt
	// pushes to virt-handler at once). Calls are serialized; keep it fast.
	OnChange func(Snapshot)
	// MaxItems bounds every list copied into the snapshot (default 128).
	MaxItems int
	// MaxStringLen bounds every string copied into the snapshot (default 256).
	MaxStringLen int
	// Clock times the polls and stamps the snapshot; nil is the real
	// clock.
	Clock clock.WithTicker
	// Logger receives debug records (nil discards).
	Logger *slog.Logger
}

func (o PollerOptions) withDefaults() PollerOptions {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.VersionInterval, DefaultVersionInterval)
	def(&o.FSInfoInterval, DefaultFSInfoInterval)
	def(&o.FSFreezeInterval, DefaultFSFreezeInterval)
	def(&o.SysInterval, DefaultSysInterval)
	def(&o.UsersInterval, DefaultUsersInterval)
	def(&o.InitialInterval, DefaultInitialInterval)
	if o.MaxItems <= 0 {
		o.MaxItems = DefaultSnapshotMaxItems
	}
	if o.MaxStringLen <= 0 {
		o.MaxStringLen = DefaultSnapshotMaxStr
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// Snapshot is what the Poller knows about one guest. Every string in it is
// sanitized and bounded, every list capped, and interfaces named "lo" are
// dropped; interface statistics are left out (they change on every poll).
// Values never polled yet are zero.
type Snapshot struct {
	// Connected is true while the agent answers (an agent error is an
	// answer); false after a call timed out or the channel broke.
	Connected         bool
	AgentVersion      string
	SupportedCommands []CommandInfo
	OSInfo            OSInfo
	HostName          string
	Timezone          Timezone
	Interfaces        []NetworkInterface
	Users             []User
	Filesystems       []FSInfo
	FSFreezeStatus    FreezeStatus
	// LastError describes the most recent failed call, at LastErrorTime.
	LastError     string
	LastErrorTime time.Time
	// UpdatedAt is when any field was last refreshed.
	UpdatedAt time.Time
}

// DeepCopy returns a copy sharing no memory with s.
func (s Snapshot) DeepCopy() Snapshot {
	out := s
	out.SupportedCommands = cloneSlice(s.SupportedCommands)
	out.Users = cloneSlice(s.Users)
	out.Interfaces = nil
	for _, i := range s.Interfaces {
		i.IPAddresses = cloneSlice(i.IPAddresses)
		if i.Statistics != nil {
			st := *i.Statistics
			i.Statistics = &st
		}
		out.Interfaces = append(out.Interfaces, i)
	}
	out.Filesystems = nil
	for _, f := range s.Filesystems {
		f.UsedBytes = clonePtr(f.UsedBytes)
		f.TotalBytes = clonePtr(f.TotalBytes)
		f.Disk = cloneSlice(f.Disk)
		out.Filesystems = append(out.Filesystems, f)
	}
	return out
}

func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// PrimaryIP is KubeVirt's primary address of an interface: the first IPv4
// address, else the first address, else "".
func PrimaryIP(iface NetworkInterface) string {
	for _, a := range iface.IPAddresses {
		if a.Type == "ipv4" {
			return a.Address
		}
	}
	if len(iface.IPAddresses) > 0 {
		return iface.IPAddresses[0].Address
	}
	return ""
}

// Poller keeps one guest's Snapshot current by running KubeVirt's agent
// poller workers against a Client.
type Poller struct {
	client *Client
	opts   PollerOptions

	mu      sync.Mutex
	snap    Snapshot
	started bool

	notifyMu sync.Mutex // serializes OnChange calls
}

// NewPoller returns a poller over c.
func NewPoller(c *Client, opts PollerOptions) *Poller {
	return &Poller{client: c, opts: opts.withDefaults()}
}

// Snapshot returns a deep copy of what the poller knows now.
func (p *Poller) Snapshot() Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.snap.DeepCopy()
}

type pollWorker struct {
	name     string
	interval time.Duration
	poll     func(ctx context.Context) error
}

func (p *Poller) workers() []pollWorker {
	return []pollWorker{
		{"version", p.opts.VersionInterval, p.pollVersion},
		{"filesystems", p.opts.FSInfoInterval, p.pollFilesystems},
		{"fsfreeze", p.opts.FSFreezeInterval, p.pollFSFreeze},
		{"sys", p.opts.SysInterval, p.pollSys},
		{"users", p.opts.UsersInterval, p.pollUsers},
	}
}

// Start runs the workers until ctx ends, then returns nil. Each worker polls
// at once, then after InitialInterval, doubling up to its interval. A Poller
// starts once; a second Start returns an error.
func (p *Poller) Start(ctx context.Context) error {
	p.mu.Lock()
	if p.started {
		p.mu.Unlock()
		return errors.New("guestagent: poller already started")
	}
	p.started = true
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range p.workers() {
		wg.Go(func() { p.run(ctx, w) })
	}
	wg.Wait()
	return nil
}

func (p *Poller) run(ctx context.Context, w pollWorker) {
	wait := min(p.opts.InitialInterval, w.interval)
	for ctx.Err() == nil {
		if err := w.poll(ctx); err != nil && ctx.Err() == nil {
			p.opts.Logger.Debug("guest agent poll failed", "worker", w.name, "err", err)
		}
		timer := p.opts.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}
		wait = min(2*wait, w.interval)
	}
}

// PollOnce runs every worker once, in order, and returns their errors
// joined. It is what one poll cycle costs.
func (p *Poller) PollOnce(ctx context.Context) error {
	var errs []error
	for _, w := range p.workers() {
		if err := w.poll(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", w.name, err))
		}
	}
	return errors.Join(errs...)
}

// update applies f to the snapshot after a call that returned err, keeps
// connectivity and the last error, and calls OnChange when a watched field
// changed. A call cut short because the poller is stopping changes nothing.
func (p *Poller) update(ctx context.Context, err error, f func(s *Snapshot)) {
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		return
	}
	p.mu.Lock()
	before := p.snap
	now := p.opts.Clock.Now()
	answered := err == nil || errors.Is(err, ErrAgent)
	p.snap.Connected = answered
	if err != nil {
		p.snap.LastError = Sanitize(err.Error(), p.opts.MaxStringLen)
		p.snap.LastErrorTime = now
	}
	if err == nil && f != nil {
		f(&p.snap)
		p.snap.UpdatedAt = now
	}
	changed := before.Connected != p.snap.Connected ||
		before.FSFreezeStatus != p.snap.FSFreezeStatus ||
		before.OSInfo != p.snap.OSInfo ||
		!reflect.DeepEqual(before.Interfaces, p.snap.Interfaces)
	var snap Snapshot
	if changed {
		snap = p.snap.DeepCopy()
	}
	p.mu.Unlock()
	if changed && p.opts.OnChange != nil {
		p.notifyMu.Lock()
		defer p.notifyMu.Unlock()
		p.opts.OnChange(snap)
	}
}

func (p *Poller) str(s string) string { return Sanitize(s, p.opts.MaxStringLen) }

func capItems[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func (p *Poller) pollVersion(ctx context.Context) error {
	info, err := p.client.Info(ctx)
	p.update(ctx, err, func(s *Snapshot) {
		s.AgentVersion = p.str(info.Version)
		s.SupportedCommands = nil
		for _, c := range capItems(info.SupportedCommands, max(p.opts.MaxItems, len(requiredCommands)*8)) {
			c.Name = p.str(c.Name)
			s.SupportedCommands = append(s.SupportedCommands, c)
		}
	})
	return err
}

func (p *Poller) pollFilesystems(ctx context.Context) error {
	fs, err := p.client.FSInfo(ctx)
	p.update(ctx, err, func(s *Snapshot) {
		s.Filesystems = nil
		for _, f := range capItems(fs, p.opts.MaxItems) {
			f.Name, f.Mountpoint, f.Type = p.str(f.Name), p.str(f.Mountpoint), p.str(f.Type)
			f.Disk = capItems(f.Disk, p.opts.MaxItems)
			for i := range f.Disk {
				d := &f.Disk[i]
				d.BusType, d.Serial, d.Dev = p.str(d.BusType), p.str(d.Serial), p.str(d.Dev)
			}
			s.Filesystems = append(s.Filesystems, f)
		}
	})
	return err
}

func (p *Poller) pollFSFreeze(ctx context.Context) error {
	st, err := p.client.FSFreezeStatus(ctx)
	p.update(ctx, err, func(s *Snapshot) { s.FSFreezeStatus = st })
	return err
}

func (p *Poller) pollUsers(ctx context.Context) error {
	users, err := p.client.Users(ctx)
	p.update(ctx, err, func(s *Snapshot) {
		s.Users = nil
		for _, u := range capItems(users, p.opts.MaxItems) {
			u.User, u.Domain = p.str(u.User), p.str(u.Domain)
			s.Users = append(s.Users, u)
		}
	})
	return err
}

// pollSys is virDomainGetGuestInfo's INTERFACES|OS|HOSTNAME|TIMEZONE: four
// calls, each failing on its own.
func (p *Poller) pollSys(ctx context.Context) error {
	ifaces, err := p.client.NetworkInterfaces(ctx)
	p.update(ctx, err, func(s *Snapshot) {
		s.Interfaces = nil
		for _, i := range ifaces {
			if i.Name == "lo" {
				continue
			}
			if len(s.Interfaces) == p.opts.MaxItems {
				break
			}
			out := NetworkInterface{Name: p.str(i.Name), HardwareAddress: p.str(i.HardwareAddress)}
			for _, a := range capItems(i.IPAddresses, p.opts.MaxItems) {
				out.IPAddresses = append(out.IPAddresses, IPAddress{Type: p.str(a.Type), Address: p.str(a.Address), Prefix: a.Prefix})
			}
			s.Interfaces = append(s.Interfaces, out)
		}
	})
	errs := []error{err}

	osInfo, err := p.client.OSInfo(ctx)
	p.update(ctx, err, func(s *Snapshot) {
		s.OSInfo = OSInfo{
			KernelRelease: p.str(osInfo.KernelRelease), KernelVersion: p.str(osInfo.KernelVersion),
			Machine: p.str(osInfo.Machine), ID: p.str(osInfo.ID), Name: p.str(osInfo.Name),
			PrettyName: p.str(osInfo.PrettyName), Version: p.str(osInfo.Version),
			VersionID: p.str(osInfo.VersionID), Variant: p.str(osInfo.Variant), VariantID: p.str(osInfo.VariantID),
		}
	})
	errs = append(errs, err)

	host, err := p.client.HostName(ctx)
	p.update(ctx, err, func(s *Snapshot) { s.HostName = p.str(host) })
	errs = append(errs, err)

	tz, err := p.client.Timezone(ctx)
	p.update(ctx, err, func(s *Snapshot) { s.Timezone = Timezone{Zone: p.str(tz.Zone), Offset: tz.Offset} })
	errs = append(errs, err)
	return errors.Join(errs...)
}
