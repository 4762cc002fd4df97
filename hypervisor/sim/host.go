package sim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// Options configure a simulated host. The zero value is a working host
// named "sim" on the real clock.
type Options struct {
	// Name is the host name and, on a [Network], its address: the
	// DestinationURI that migrates to it. Default "sim".
	Name string
	// UUID is the host UUID; default derived from Name.
	UUID string
	// CPUs and MemoryBytes are the host's capacity (default 8 and 32 GiB).
	CPUs        int
	MemoryBytes uint64
	// Clock drives the host; nil is the real clock. Hosts that migrate to
	// each other share one clock.
	Clock Clock

	// BootDelay is how long a started guest runs before its guest agent
	// connects (default 50 ms; negative: at once). ShutdownDelay is how long
	// it runs after an ACPI shutdown request before powering off (default
	// 20 ms; negative: at once); [Host.SetACPIBehaviour] changes it for one
	// domain, or makes its guest ignore the request.
	BootDelay     time.Duration
	ShutdownDelay time.Duration

	// SwitchoverCost is the fixed part of a pre-copy downtime (device
	// state, CPU sync, resume), default 30 ms. PostCopyBlackout is the pause
	// when switching to post-copy, default 50 ms.
	SwitchoverCost   time.Duration
	PostCopyBlackout time.Duration
	// MigrationSetup is the fixed time between the start of a migration job
	// and its first byte (the destination's QEMU starting, the handshake):
	// nothing is sent and no dirty page is tracked meanwhile. Default none;
	// about 2 s for the tiny TCG guest between two libvirt daemons here.
	MigrationSetup time.Duration
	// MigrationLink is the modelled link to hosts in other processes
	// (tcp:// destinations, see [ListenMigration]); the zero value is
	// DefaultBandwidth. The real socket caps it when slower.
	MigrationLink Link

	// AutoConvergeSchedule is the QEMU version's auto-converge behaviour;
	// "" = AutoConvergeLegacy.
	AutoConvergeSchedule AutoConvergeSchedule
	// LibvirtFace makes migrations present exactly what libvirt offers
	// (see [hypervisor.MigrationCapabilities]): jobs without a direct
	// throttle (only auto-converge, set at the start), no dirty-rate
	// calculation while a job runs, and a job dirty rate that reads 0 until
	// QEMU's first sync computed one.
	LibvirtFace bool

	// Agent configures the simulated guest agent of every domain.
	Agent AgentOptions

	// CPU is the simulated host's CPU as migration placement sees it (a
	// modelled capability); the zero value is [DefaultCPU].
	CPU CPU

	// HostDevices is the simulated host's device inventory: PCI devices
	// (vendor:device IDs), USB devices (vendor:product IDs on a bus) and
	// mediated devices (vGPU types) it can pass
	// through (a modelled inventory; no device is touched). A started
	// domain's <hostdev>s must name devices listed here that no other
	// running domain holds. The zero value has none.
	HostDevices hypervisor.HostDevices

	// LaunchSecurity is what the simulated host's platform offers
	// confidential guests (a modelled capability: no memory is
	// encrypted). Nil: the simulator reports nothing, and a node agent
	// goes by the capability labels its node was given.
	LaunchSecurity *hypervisor.LaunchSecurity

	// EventBuffer is the capacity of each Events channel (default 256).
	EventBuffer int
	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = "sim"
	}
	if o.UUID == "" {
		o.UUID = stableUUID("host/" + o.Name)
	}
	if o.CPUs <= 0 {
		o.CPUs = 8
	}
	if o.MemoryBytes == 0 {
		o.MemoryBytes = 32 << 30
	}
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	o.BootDelay = orDefault(o.BootDelay, 50*time.Millisecond)
	o.ShutdownDelay = orDefault(o.ShutdownDelay, 20*time.Millisecond)
	o.SwitchoverCost = orDefault(o.SwitchoverCost, 30*time.Millisecond)
	o.PostCopyBlackout = orDefault(o.PostCopyBlackout, 50*time.Millisecond)
	if o.EventBuffer <= 0 {
		o.EventBuffer = 256
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// orDefault maps 0 to def and a negative duration to none.
func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// Host is one simulated hypervisor host. It implements
// [hypervisor.Hypervisor], [hypervisor.DirtyRateMeasurer],
// [hypervisor.Migrator] and [hypervisor.AgentCommander], and is safe for
// concurrent use.
type Host struct {
	// now is the time of the operation under way (set under mu by do).
	now time.Time
	// candidates may need fine steps (see advanceLocked).
	candidates map[string]struct{}
	opts       Options
	clock      Clock
	log        *slog.Logger

	mu      sync.Mutex
	domains map[string]*domain
	// byUUID finds a domain by UUID for Define's uniqueness check without
	// a scan of every domain; entries are checked against domains on use.
	byUUID  map[string]*domain
	order   []string // domain names, sorted: the order domains advance in
	nextID  int
	subs    []*subscriber
	network *Network
	// remoteLinks are the links to migration listeners in other
	// processes, by address (concurrent migrations to one share it).
	remoteLinks map[string]*linkState
	post        []func() // run after mu is released: work on other hosts
	wd          watchdog
	// shares are the modelled virtiofs shares (see ServeVirtiofs).
	shares virtiofsShares
	// services are the guests' modelled services (see ConfigureGuest).
	services guestServices
	// acpi is how the guests of some domain names answer the power
	// button (see SetACPIBehaviour); other guests use the defaults.
	acpi map[string]ACPIBehaviour
}

var (
	_ hypervisor.Hypervisor        = (*Host)(nil)
	_ hypervisor.DirtyRateMeasurer = (*Host)(nil)
	_ hypervisor.Migrator          = (*Host)(nil)
	_ hypervisor.AgentCommander    = (*Host)(nil)
	_ hypervisor.ShutdownRequester = (*Host)(nil)
)

// New returns a host with no domains.
func New(opts Options) *Host {
	opts = opts.withDefaults()
	return &Host{opts: opts, clock: opts.Clock, log: opts.Logger, domains: map[string]*domain{}, byUUID: map[string]*domain{}, candidates: map[string]struct{}{}}
}

// Name is the host's name, its address on a [Network].
func (h *Host) Name() string { return h.opts.Name }

// Clock is the clock the host runs on.
func (h *Host) Clock() Clock { return h.clock }

// do runs fn under the host's lock after bringing every domain up to the
// clock's now, then runs the work fn queued for other hosts.
func (h *Host) do(ctx context.Context, fn func(now time.Time) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h.mu.Lock()
	now := h.clock.Now()
	h.advanceLocked(now)
	h.checkWatchdogLocked(now)
	err := fn(now)
	post := h.post
	h.post = nil
	h.mu.Unlock()
	for _, f := range post {
		f()
	}
	return err
}

// advanceLocked brings the host to now. Domains that need fine steps (a
// migration job, a dirty-rate measurement, a bursty workload) are stepped
// together, in name order, because they interact through links and jobs.
// Every other domain integrates linearly, so it is brought up to date
// lazily when something looks at it (lookup, List): one call then costs
// O(stepping domains), not O(domains), which matters with thousands of
// guests per host.
func (h *Host) advanceLocked(now time.Time) {
	h.now = now
	// Candidates are the domains touched since they last stopped needing
	// steps (see lookup and add); the rest cannot need any.
	stepping := make([]string, 0, len(h.candidates))
	for name := range h.candidates {
		d, ok := h.domains[name]
		if !ok || !d.needsSteps() {
			delete(h.candidates, name)
			continue
		}
		if d.updated.Before(now) {
			stepping = append(stepping, name)
		}
	}
	// Name order keeps runs deterministic; stepping may remove domains.
	slices.Sort(stepping)
	for _, name := range stepping {
		if d, ok := h.domains[name]; ok && d.updated.Before(now) {
			d.advance(h, now)
		}
	}
}

// current brings one domain up to the host's time before it is read or
// changed.
func (h *Host) current(d *domain) *domain {
	if d.updated.Before(h.now) {
		d.advance(h, h.now)
	}
	return d
}

func (h *Host) add(d *domain) {
	name := d.name()
	h.domains[name] = d
	h.indexUUID(d)
	h.candidates[name] = struct{}{}
	if i, found := slices.BinarySearch(h.order, name); !found {
		h.order = slices.Insert(h.order, i, name)
	}
}

// indexUUID records d under its UUID (mu held).
func (h *Host) indexUUID(d *domain) {
	if u := d.uuid(); u != "" {
		h.byUUID[u] = d
	}
}

// domainByUUID returns the domain with that UUID, or nil (mu held). An
// index entry whose domain was replaced or re-identified is dropped.
func (h *Host) domainByUUID(uuid string) *domain {
	if uuid == "" {
		return nil
	}
	d := h.byUUID[uuid]
	if d == nil {
		return nil
	}
	if h.domains[d.name()] != d || d.uuid() != uuid {
		delete(h.byUUID, uuid)
		return nil
	}
	return d
}

func (h *Host) remove(name string) {
	if d := h.domains[name]; d != nil && h.byUUID[d.uuid()] == d {
		delete(h.byUUID, d.uuid())
	}
	delete(h.domains, name)
	if i, found := slices.BinarySearch(h.order, name); found {
		h.order = slices.Delete(h.order, i, i+1)
	}
}

// after queues f to run once the host's lock is released.
func (h *Host) after(f func()) { h.post = append(h.post, f) }

func (h *Host) lookup(op, name string) (*domain, error) {
	d, ok := h.domains[name]
	if !ok {
		return nil, hypervisor.WrapDomain(op, name, hypervisor.ErrNotFound)
	}
	// Whatever the caller does may make the domain need steps (a job, a
	// tracker, a bursty workload resumed).
	h.candidates[name] = struct{}{}
	return h.current(d), nil
}

func invalidState(op, name, why string) error {
	return hypervisor.WrapDomain(op, name, fmt.Errorf("%s: %w", why, hypervisor.ErrInvalidState))
}

// Host describes the simulated machine.
func (h *Host) Host(ctx context.Context) (hypervisor.HostInfo, error) {
	if err := ctx.Err(); err != nil {
		return hypervisor.HostInfo{}, err
	}
	return hypervisor.HostInfo{
		Hostname: h.opts.Name, UUID: h.opts.UUID, Arch: "x86_64",
		CPUs: h.opts.CPUs, MemoryBytes: h.opts.MemoryBytes, Model: "sim",
	}, nil
}

// String names the host in logs.
func (h *Host) String() string { return "sim host " + strings.TrimSpace(h.opts.Name) }
