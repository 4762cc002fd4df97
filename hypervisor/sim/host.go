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

	"libvirt.org/go/libvirtxml"

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

// Define makes or replaces a persistent domain from libvirt domain XML.
func (h *Host) Define(ctx context.Context, domainXML string) (hypervisor.DomainID, error) {
	if err := ctx.Err(); err != nil {
		return hypervisor.DomainID{}, err
	}
	sp, err := parseSpec(domainXML)
	if err != nil {
		name := ""
		if sp != nil {
			name = sp.name
		}
		return hypervisor.DomainID{}, hypervisor.WrapDomain("define", name, err)
	}
	var id hypervisor.DomainID
	err = h.do(ctx, func(now time.Time) error {
		if other := h.domainByUUID(sp.uuid); other != nil && other.name() != sp.name {
			return hypervisor.WrapDomain("define", sp.name, fmt.Errorf("UUID %s belongs to domain %q: %w", sp.uuid, other.name(), hypervisor.ErrExists))
		}
		d, ok := h.domains[sp.name]
		if ok {
			if sp.uuid == "" {
				sp.uuid = d.uuid()
			} else if sp.uuid != d.uuid() {
				return hypervisor.WrapDomain("define", sp.name, fmt.Errorf("already defined with UUID %s: %w", d.uuid(), hypervisor.ErrExists))
			}
			if d.incoming != nil {
				return invalidState("define", sp.name, "an incoming migration owns the domain")
			}
		}
		if sp.uuid == "" {
			sp.uuid = stableUUID(h.opts.UUID + "/domain/" + sp.name)
		}
		sp.def.UUID = sp.uuid
		if !ok {
			d = &domain{config: sp, state: hypervisor.StateShutoff, reason: hypervisor.ReasonUnknown, updated: now}
			h.add(d)
		}
		d.config = sp
		h.indexUUID(d)
		d.persistent = true
		if !d.state.IsActive() {
			d.setWorkloadModel(now)
		}
		id = hypervisor.DomainID{Name: sp.name, UUID: sp.uuid}
		h.log.Debug("defined domain", "host", h.opts.Name, "domain", sp.name, "uuid", sp.uuid)
		return nil
	})
	return id, err
}

// setWorkloadModel resolves the workload against the memory of the
// instance, keeping the bytes trackers counted so far.
func (d *domain) setWorkloadModel(now time.Time) {
	old := d.model
	d.model = newModel(d.workload, d.spec().curMemory, now)
	for _, tr := range d.trackers {
		tr.rebase(&old, &d.model)
	}
	if d.job != nil && d.job.tracker != nil {
		d.job.tracker.rebase(&old, &d.model)
	}
}

// Undefine removes a domain's persistent definition; a running domain
// stays as a transient one.
func (h *Host) Undefine(ctx context.Context, name string) error {
	return h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("undefine", name)
		if err != nil {
			return err
		}
		if d.incoming != nil {
			return invalidState("undefine", name, "an incoming migration owns the domain")
		}
		if d.state.IsActive() {
			d.persistent = false
			return nil
		}
		h.remove(name)
		return nil
	})
}

// Start boots a defined domain.
func (h *Host) Start(ctx context.Context, name string, opts hypervisor.StartOptions) error {
	return h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("start", name)
		if err != nil {
			return err
		}
		if d.state.IsActive() {
			return invalidState("start", name, "domain is already running")
		}
		h.activate(d, d.config, now)
		if opts.Paused {
			d.state, d.reason = hypervisor.StatePaused, hypervisor.ReasonUser
		} else {
			d.state, d.reason = hypervisor.StateRunning, hypervisor.ReasonBooted
			h.resumeGuest(d, now)
		}
		h.emitState(d, now)
		return nil
	})
}

// activate makes d a fresh running instance of sp (state set by the caller).
func (h *Host) activate(d *domain, sp *spec, now time.Time) {
	h.nextID++
	d.id = h.nextID
	d.gen++
	d.live = sp
	d.updated = now
	d.cpu, d.netBytes, d.blkBytes, d.faults = 0, 0, 0, 0
	d.throttle = 0
	d.bootLeft = h.opts.BootDelay
	d.agentUp = false
	d.agent, d.agentErr = nil, nil
	if sp.agent {
		d.agent, d.agentErr = h.newAgent(d, sp)
	}
	d.shutdownPending = false
	d.stopped = make(chan struct{})
	d.display = nil
	d.dirtyRate = hypervisor.Measured[uint64]{}
	d.trackers = nil
	d.setWorkloadModel(now)
}

// resumeGuest lets a guest that just began running continue its boot
// and a pending shutdown on the host's clock.
func (h *Host) resumeGuest(d *domain, now time.Time) {
	h.startTimers(d, now)
	if d.bootLeft == 0 {
		h.connectAgent(d, now)
	}
}

// haltGuest stops the guest's own progress (paused, or stopped).
func (h *Host) haltGuest(d *domain, now time.Time) {
	h.pauseTimers(d, now)
	h.disconnectAgent(d, now)
}

// startTimers schedules what the running guest will do by itself.
func (h *Host) startTimers(d *domain, now time.Time) {
	d.runSince = now
	gen := d.gen
	if d.bootLeft > 0 {
		d.bootTimer = h.clock.AfterFunc(d.bootLeft, func() { h.fire(d, gen, h.bootDone) })
	}
	if d.shutdownPending {
		d.shutdownTimer = h.clock.AfterFunc(d.shutdownLeft, func() { h.fire(d, gen, h.powerOff) })
	}
}

// pauseTimers stops the guest's scheduled progress, keeping what is left.
func (h *Host) pauseTimers(d *domain, now time.Time) {
	ran := now.Sub(d.runSince)
	if d.bootTimer != nil && d.bootTimer.Stop() {
		d.bootLeft = max(0, d.bootLeft-ran)
	}
	if d.shutdownTimer != nil && d.shutdownTimer.Stop() {
		d.shutdownLeft = max(0, d.shutdownLeft-ran)
	}
	d.bootTimer, d.shutdownTimer = nil, nil
}

// fire runs f for d at the clock's now if d is still the same instance.
func (h *Host) fire(d *domain, gen uint64, f func(d *domain, now time.Time)) {
	_ = h.do(context.Background(), func(now time.Time) error {
		if h.domains[d.name()] == d && d.gen == gen {
			f(d, now)
		}
		return nil
	})
}

func (h *Host) bootDone(d *domain, now time.Time) {
	d.bootLeft = 0
	d.bootTimer = nil
	if d.running() {
		h.connectAgent(d, now)
	}
}

func (h *Host) connectAgent(d *domain, now time.Time) {
	if d.agentUp || !d.spec().agent || !d.running() {
		return
	}
	d.agentUp = true
	h.emit(hypervisor.Event{Domain: d.name(), UUID: d.uuid(), Time: now, Kind: hypervisor.EventAgentLifecycle, Agent: hypervisor.ChannelConnected})
}

func (h *Host) disconnectAgent(d *domain, now time.Time) {
	if !d.agentUp {
		return
	}
	d.agentUp = false
	h.emit(hypervisor.Event{Domain: d.name(), UUID: d.uuid(), Time: now, Kind: hypervisor.EventAgentLifecycle, Agent: hypervisor.ChannelDisconnected})
}

func (h *Host) powerOff(d *domain, now time.Time) {
	d.shutdownTimer = nil
	h.stop(d, now, hypervisor.ReasonShutdown)
}

// stop ends the running instance of d.
func (h *Host) stop(d *domain, now time.Time, reason hypervisor.StateReason) {
	if d.running() {
		h.haltGuest(d, now)
	}
	d.bootTimer, d.shutdownTimer = nil, nil
	d.agentUp = false
	d.gen++
	d.state, d.reason = hypervisor.StateShutoff, reason
	d.shutdownPending = false
	d.trackers = nil
	d.throttle = 0
	d.display = nil
	if d.job != nil {
		d.job.fail(h, d, now, "domain stopped on the source: "+string(reason))
	}
	if d.incoming != nil {
		d.incoming.lost.Store(true)
		d.incoming = nil
	}
	close(d.stopped)
	h.emitState(d, now)
	if !d.persistent {
		h.remove(d.name())
	}
}

// Reboot restarts the guest inside the running domain: its agent
// disconnects and reconnects after the boot delay.
func (h *Host) Reboot(ctx context.Context, name string) error {
	return h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("reboot", name)
		if err != nil {
			return err
		}
		if !d.running() || d.incoming != nil || d.job != nil {
			return invalidState("reboot", name, fmt.Sprintf("domain is %s/%s", d.state, d.reason))
		}
		h.rebootGuest(d, now)
		return nil
	})
}

func (h *Host) rebootGuest(d *domain, now time.Time) {
	h.haltGuest(d, now)
	d.bootLeft = h.opts.BootDelay
	h.resumeGuest(d, now)
}

// Destroy stops the domain at once.
func (h *Host) Destroy(ctx context.Context, name string) error {
	return h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("destroy", name)
		if err != nil {
			return err
		}
		if !d.state.IsActive() {
			return invalidState("destroy", name, "domain is not running")
		}
		h.stop(d, now, hypervisor.ReasonDestroyed)
		return nil
	})
}

// Pause suspends the vCPUs. Pausing a paused domain does nothing (as
// with QEMU).
func (h *Host) Pause(ctx context.Context, name string) error {
	return h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("suspend", name)
		if err != nil {
			return err
		}
		switch {
		case !d.state.IsActive():
			return invalidState("suspend", name, "domain is not running")
		case d.state == hypervisor.StatePaused:
			return nil
		}
		h.haltGuest(d, now)
		d.state, d.reason = hypervisor.StatePaused, hypervisor.ReasonUser
		h.emitState(d, now)
		return nil
	})
}

// Resume continues a paused domain. Resuming a running domain does
// nothing (as with QEMU).
func (h *Host) Resume(ctx context.Context, name string) error {
	return h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("resume", name)
		if err != nil {
			return err
		}
		switch {
		case !d.state.IsActive():
			return invalidState("resume", name, "domain is not running")
		case d.state == hypervisor.StateRunning:
			return nil
		case d.incoming != nil || d.job != nil && d.job.phase >= phaseStopCopy || d.reason == hypervisor.ReasonPostcopyFailed:
			return invalidState("resume", name, fmt.Sprintf("domain is paused for migration (%s)", d.reason))
		}
		d.state, d.reason = hypervisor.StateRunning, hypervisor.ReasonUnpaused
		h.resumeGuest(d, now)
		h.emitState(d, now)
		return nil
	})
}

// List returns every domain, sorted by name.
func (h *Host) List(ctx context.Context) ([]hypervisor.DomainInfo, error) {
	var list []hypervisor.DomainInfo
	err := h.do(ctx, func(now time.Time) error {
		for _, name := range h.order {
			list = append(list, h.info(h.current(h.domains[name])))
		}
		return nil
	})
	return list, err
}

// Info returns one domain's state and sizes.
func (h *Host) Info(ctx context.Context, name string) (hypervisor.DomainInfo, error) {
	var info hypervisor.DomainInfo
	err := h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("info", name)
		if err != nil {
			return err
		}
		info = h.info(d)
		return nil
	})
	return info, err
}

func (h *Host) info(d *domain) hypervisor.DomainInfo {
	sp := d.spec()
	info := hypervisor.DomainInfo{
		DomainID:       hypervisor.DomainID{Name: d.name(), UUID: d.uuid()},
		State:          d.state,
		Reason:         d.reason,
		Persistent:     d.persistent,
		VCPUs:          sp.vcpus,
		MemoryBytes:    sp.curMemory,
		MaxMemoryBytes: sp.maxMemory,
		Agent:          d.agentState(),
	}
	if d.state.IsActive() {
		info.CPUTime = hypervisor.Some(time.Duration(d.cpu))
	}
	return info
}

func (d *domain) agentState() hypervisor.ChannelState {
	switch {
	case !d.spec().agent:
		return hypervisor.ChannelUnknown
	case d.agentUp:
		return hypervisor.ChannelConnected
	}
	return hypervisor.ChannelDisconnected
}

// XML returns the live domain XML: the definition plus what the host
// filled in while it runs (id, interface names, aliases, agent state).
func (h *Host) XML(ctx context.Context, name string) (string, error) {
	var view xmlView
	err := h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("xml", name)
		if err != nil {
			return err
		}
		view = xmlView{sp: d.spec(), active: d.state.IsActive(), id: d.id, agent: d.agentState()}
		return nil
	})
	if err != nil {
		return "", err
	}
	// Rendering is the expensive part; it reads only the snapshot, so it
	// runs outside the host lock.
	out, err := liveXML(view)
	if err != nil {
		return "", hypervisor.WrapDomain("xml", name, err)
	}
	return out, nil
}

// xmlView is what the live XML of a domain depends on, taken under the
// host lock. Specs are replaced on redefinition, never changed in place.
type xmlView struct {
	sp     *spec
	active bool
	id     int
	agent  hypervisor.ChannelState
}

func liveXML(d xmlView) (string, error) {
	text, err := d.sp.def.Marshal()
	if err != nil {
		return "", err
	}
	def := &libvirtxml.Domain{}
	if err := def.Unmarshal(text); err != nil { // a deep copy
		return "", err
	}
	if !d.active {
		return def.Marshal()
	}
	id := d.id
	def.ID = &id
	if dev := def.Devices; dev != nil {
		for i := range dev.Interfaces {
			iface := &dev.Interfaces[i]
			if iface.Target == nil {
				iface.Target = &libvirtxml.DomainInterfaceTarget{Dev: fmt.Sprintf("vnet%d", i)}
			}
			if iface.Alias == nil {
				iface.Alias = &libvirtxml.DomainAlias{Name: fmt.Sprintf("net%d", i)}
			}
		}
		for i := range dev.Disks {
			if dev.Disks[i].Alias == nil {
				dev.Disks[i].Alias = &libvirtxml.DomainAlias{Name: fmt.Sprintf("virtio-disk%d", i)}
			}
		}
		for i := range dev.Channels {
			c := &dev.Channels[i]
			if c.Target != nil && c.Target.VirtIO != nil && c.Target.VirtIO.Name == agentChannelName {
				c.Target.VirtIO.State = string(d.agent)
			}
		}
	}
	return def.Marshal()
}

// Stats returns the domain's counters; a shut-off domain has only its state.
func (h *Host) Stats(ctx context.Context, name string) (hypervisor.DomainStats, error) {
	var st hypervisor.DomainStats
	err := h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("stats", name)
		if err != nil {
			return err
		}
		st = stats(d, now)
		return nil
	})
	return st, err
}

func stats(d *domain, now time.Time) hypervisor.DomainStats {
	st := hypervisor.DomainStats{Domain: d.name(), Collected: now, State: d.state, Reason: d.reason, DirtyRate: d.dirtyRate}
	if !d.state.IsActive() {
		return st
	}
	sp := d.spec()
	cpu := time.Duration(d.cpu)
	st.CPUTime = hypervisor.Some(cpu)
	st.CPUUser = hypervisor.Some(cpu * 7 / 10)
	st.CPUSystem = hypervisor.Some(cpu - cpu*7/10)
	for i := range sp.vcpus {
		vstate := "running"
		if !d.running() {
			vstate = "halted"
		}
		// The model has no host-CPU contention and no guest I/O wait, so
		// libvirt's vcpu.N.wait and vcpu.N.delay are measured zeros.
		st.VCPUs = append(st.VCPUs, hypervisor.VCPUStats{ID: i, State: vstate, Time: hypervisor.Some(cpu / time.Duration(sp.vcpus)),
			Wait: hypervisor.Some[time.Duration](0), Delay: hypervisor.Some[time.Duration](0)})
	}
	mem := sp.curMemory
	used := residentOf(d)
	st.Memory = hypervisor.MemoryStats{
		BalloonCurrent: hypervisor.Some(mem),
		BalloonMaximum: hypervisor.Some(sp.maxMemory),
		Actual:         hypervisor.Some(mem),
		Available:      hypervisor.Some(mem),
		Unused:         hypervisor.Some(mem - used),
		Usable:         hypervisor.Some(mem - used),
		RSS:            hypervisor.Some(used),
		DiskCaches:     hypervisor.Some(min(mem-used, uint64(d.blkBytes))),
		SwapIn:         hypervisor.Some[uint64](0),
		SwapOut:        hypervisor.Some[uint64](0),
		MajorFaults:    hypervisor.Some(uint64(d.faults / 100)),
		MinorFaults:    hypervisor.Some(uint64(d.faults)),
		LastUpdate:     hypervisor.Some(now.Unix()),
	}
	for i := range sp.interfaces {
		b := uint64(d.netBytes)
		st.Net = append(st.Net, hypervisor.NetStats{
			Name:    fmt.Sprintf("vnet%d", i),
			RxBytes: hypervisor.Some(b), RxPackets: hypervisor.Some(b / 1000),
			RxErrors: hypervisor.Some[uint64](0), RxDropped: hypervisor.Some[uint64](0),
			TxBytes: hypervisor.Some(b / 2), TxPackets: hypervisor.Some(b / 2000),
			TxErrors: hypervisor.Some[uint64](0), TxDropped: hypervisor.Some[uint64](0),
		})
	}
	for _, disk := range sp.disks {
		b := uint64(d.blkBytes)
		// Times as libvirt reports them (rd/wr/fl.times), at the model's
		// disk throughput; one flush per 16 writes.
		flushes := b / 8192 / 16
		st.Block = append(st.Block, hypervisor.BlockStats{
			Name: disk.target, Path: disk.path,
			ReadReqs: hypervisor.Some(b / 4096), ReadBytes: hypervisor.Some(b),
			WriteReqs: hypervisor.Some(b / 8192), WriteBytes: hypervisor.Some(b / 2),
			ReadTime:  hypervisor.Some(diskTime(b)),
			WriteTime: hypervisor.Some(diskTime(b / 2)),
			FlushReqs: hypervisor.Some(flushes),
			FlushTime: hypervisor.Some(time.Duration(flushes) * simFlushTime),
		})
	}
	return st
}

// The model's disk: 500 MB/s, 1 ms per flush.
const (
	simDiskBytesPerSecond = 500e6
	simFlushTime          = time.Millisecond
)

// diskTime is how long the model's disk takes to move n bytes.
func diskTime(n uint64) time.Duration {
	return time.Duration(float64(n) / simDiskBytesPerSecond * float64(time.Second))
}

func workingSetOf(d *domain) uint64 {
	if d.workload.DirtyRate == 0 {
		return 0
	}
	if d.workload.WorkingSet == 0 {
		return d.spec().curMemory
	}
	return d.workload.WorkingSet
}

// SetWorkload sets what the guest does to its memory; it applies at once to
// a running guest and to every later start.
func (h *Host) SetWorkload(name string, w Workload) error {
	return h.do(context.Background(), func(now time.Time) error {
		d, err := h.lookup("set workload", name)
		if err != nil {
			return err
		}
		if err := w.Validate(d.spec().curMemory); err != nil {
			return hypervisor.WrapDomain("set workload", name, err)
		}
		d.workload = w
		d.setWorkloadModel(now)
		return nil
	})
}

// Events delivers the host's events until ctx ends.
func (h *Host) Events(ctx context.Context) (<-chan hypervisor.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sub := &subscriber{ch: make(chan hypervisor.Event, h.opts.EventBuffer)}
	h.mu.Lock()
	h.subs = append(h.subs, sub)
	h.mu.Unlock()
	go func() {
		<-ctx.Done()
		h.mu.Lock()
		h.subs = slices.DeleteFunc(h.subs, func(s *subscriber) bool { return s == sub })
		close(sub.ch)
		h.mu.Unlock()
	}()
	return sub.ch, nil
}

type subscriber struct{ ch chan hypervisor.Event }

// emit delivers ev to every subscriber, dropping a subscriber's oldest
// event when its buffer is full. Called with h.mu held.
func (h *Host) emit(ev hypervisor.Event) {
	for _, s := range h.subs {
		select {
		case s.ch <- ev:
			continue
		default:
		}
		select {
		case <-s.ch:
		default:
		}
		select {
		case s.ch <- ev:
		default:
		}
	}
}

func (h *Host) emitState(d *domain, now time.Time) {
	h.log.Debug("domain state", "host", h.opts.Name, "domain", d.name(), "state", d.state, "reason", d.reason)
	h.emit(hypervisor.Event{Domain: d.name(), UUID: d.uuid(), Time: now, Kind: hypervisor.EventLifecycle, State: d.state, Reason: d.reason})
}

// String names the host in logs.
func (h *Host) String() string { return "sim host " + strings.TrimSpace(h.opts.Name) }
