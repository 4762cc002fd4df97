package node

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// Finalizer is the finalizer the node agent puts on a VMI before it defines
// the VMI's domain, and removes once the domain is gone from the host. It
// keeps a deleted VMI in the store until its guest is really stopped.
const Finalizer = virtkit.NodeAgentFinalizer

// errInvalidOptions wraps every configuration error of this package; it
// matches virtkit.ErrInvalidOptions.
var errInvalidOptions = virtkit.InvalidOptions("node agent")

// Options configure an [Agent]. NodeName, Store and Hypervisor are
// required; everything else has a default.
type Options struct {
	// NodeName is this host's name: the VMIs with status.nodeName equal to
	// it are this agent's, and the Node object of that name is its
	// heartbeat.
	NodeName   string
	Store      store.Store
	Hypervisor hypervisor.Hypervisor
	// Domain configures the domain builder (resolvers, runtime dir, type).
	Domain domain.Options
	// RuntimeDirOwner, when set, makes the agent create each VMI's runtime
	// directory (guest-agent, serial and VNC sockets) before it defines the
	// domain, owned by this uid/gid: the user QEMU runs as under a real
	// libvirtd. Simulated hosts create no sockets and need none.
	RuntimeDirOwner *Owner
	// Labels are added to the Node object when the agent creates it.
	Labels map[string]string
	// HeartbeatInterval is how often the Node status is refreshed; default
	// 10 s.
	HeartbeatInterval time.Duration
	// FenceTimeout: when the agent has not renewed its heartbeat in the
	// store for this long (the store is unreachable, or the agent was
	// frozen), it destroys this node's guests, because the controller may
	// soon restart them elsewhere, and starts none until a renewal
	// succeeds again. The agent publishes it on its Node
	// (virtkit.FenceTimeoutAnnotation) and the node-health controller
	// waits at least virtkit.MinNodeGrace of it before failing the
	// node's VMIs. 0 means DefaultFenceTimeout(HeartbeatInterval) (60 s
	// with the default interval); negative disables fencing (then a
	// partitioned node's guests can run twice). It must be at least
	// MinFenceTimeout(HeartbeatInterval).
	FenceTimeout time.Duration
	// Watchdog, when set, is petted after every successful heartbeat
	// renewal with the time left before the fence deadline plus a tenth of
	// FenceTimeout, so the host stops the guests even when this process
	// cannot (frozen, killed). The margin of virtkit.MinNodeGrace
	// covers that tenth.
	Watchdog Watchdog
	// ResyncPeriod re-reads every VMI of the node; default 30 s.
	ResyncPeriod time.Duration
	// StatusInterval is the safety net of a running VMI's status: events
	// refresh it as things change (the hypervisor's domain and agent-channel
	// events, the GuestInfo source's change callbacks, VMI writes), and a
	// VMI nothing happened to is refreshed after StatusInterval, stretched
	// by a random fraction up to StatusJitter so that guests started
	// together do not refresh together; default 10 s.
	StatusInterval time.Duration
	// StatusJitter is that fraction; default 0.2, negative for none.
	StatusJitter float64
	// Float64 draws the jitter, a uniform value in [0, 1); nil is
	// math/rand/v2.Float64.
	Float64 func() float64
	// KeyedFloat64, when set, draws the jitter instead of Float64: a
	// uniform value in [0, 1) for one VMI (key is namespace/name) at one
	// time, that depends on nothing else, so that which of the agent's
	// concurrent workers draws first, and how many reconciles ran, does
	// not change the values. A seeded cluster sets it.
	KeyedFloat64 func(key string, at time.Time) float64
	// Workers bounds concurrent reconciles; default 4.
	Workers int
	// ReconcileTimeout bounds one reconcile, so a hypervisor call that hangs
	// on one domain frees its worker; default 30 s.
	ReconcileTimeout time.Duration
	// ShutdownPoll is how often the guest of a deleted VMI that has not
	// powered off yet is asked again (a guest still booting misses the
	// ACPI request) and looked at; default 5 s, virt-handler's interval.
	// The domain's lifecycle event reports the power-off sooner.
	ShutdownPoll time.Duration
	// GuestInfo supplies what the guest agent reports; nil disables guest
	// information (the AgentConnected condition then follows the channel
	// state only).
	GuestInfo GuestInfoSource
	// Migration configures live migrations to and from this node.
	Migration MigrationOptions
	// Virtiofs configures the virtiofsd processes that serve the VMIs'
	// filesystems (virtiofs shares).
	Virtiofs VirtiofsOptions
	// DownwardMetrics configures the refresh of downwardMetrics disks.
	DownwardMetrics DownwardMetricsOptions
	// Clock drives the agent's time: heartbeats, resyncs, fencing, status
	// refreshes, shutdown grace, migration progress and the guest-agent
	// pollers of the GuestInfo source the cluster builds; nil is the real
	// clock. The migration engine runs on Migration.Engine.Clock, which
	// defaults to this clock.
	Clock clock.WithTicker
	// Logger receives the agent's logs; nil discards them.
	Logger *slog.Logger
	// Events records Kubernetes-style events about this node's VMIs
	// (KubeVirt's virt-handler reasons); nil records none.
	Events events.EventRecorder
	// TracerProvider traces domain definition, boot, guest-agent connect
	// and migrations as children of the VMI's trace (see
	// virtkit.TraceParentAnnotation); nil traces nothing.
	TracerProvider trace.TracerProvider
}

// Owner is a file owner.
type Owner struct{ UID, GID int }

// Agent keeps one host's domains in line with the VMIs placed on it: the
// virt-handler of virtkit. It defines and starts the domain of every
// Scheduled VMI, mirrors domain state into VMI status, stops domains of
// deleted VMIs gracefully, removes domains no VMI owns, and keeps its Node
// object's heartbeat and capacity current.
type Agent struct {
	opts Options
	log  *slog.Logger
	ctrl *reconcile.Controller

	mu sync.Mutex
	// shutdownSince records when a graceful shutdown was first and last
	// requested, per domain, so the grace period survives across
	// reconciles.
	shutdownSince map[string]shutdownAsks
	// domainFacts caches what each domain's XML says (see facts).
	domainFacts map[string]domainFacts
	// migs are the migrations this agent runs as the source.
	migs migrationRegistry
	// owned are the domains this agent has found to be its own, with the
	// VMI uid in their metadata; foreign are those it leaves alone, with
	// why (see classify).
	owned   map[string]string
	foreign map[string]string
	// takenSaid records, per domain name, the VMI uid and reason last
	// logged as "VMI's domain name is taken", so retries do not repeat it.
	takenSaid map[string]string
	// fenced are the domains fencing destroyed, until they are removed.
	fenced map[string]bool
	// lease tracks heartbeat renewals for fencing.
	lease lease
	// hostCPU holds the CPU labels published on the Node.
	hostCPU hostFact[map[string]string]
	// launchSec holds the launch-security labels published on the Node.
	launchSec hostFact[map[string]string]
	// pullFailures counts failed image pulls per VMI uid (back-off).
	pullFailures map[string]pullFailure
	// vfs are the virtiofsd processes of virtiofs shares.
	vfs virtiofsds
	// netActive are the incoming migrations whose networks this node
	// activated (see netmigrate.go).
	netActive netActivations
	// dm are the downward metrics refreshers.
	dm downwardRefreshers
}

// New validates opts and returns an agent that does nothing until Start.
func New(opts Options) (*Agent, error) {
	switch {
	case opts.NodeName == "":
		return nil, fmt.Errorf("%w: NodeName: required", errInvalidOptions)
	case opts.Store == nil:
		return nil, fmt.Errorf("%w: Store: required", errInvalidOptions)
	case opts.Hypervisor == nil:
		return nil, fmt.Errorf("%w: Hypervisor: required", errInvalidOptions)
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = 10 * time.Second
	}
	switch {
	case opts.FenceTimeout == 0:
		opts.FenceTimeout = DefaultFenceTimeout(opts.HeartbeatInterval)
	case opts.FenceTimeout > 0 && opts.FenceTimeout < MinFenceTimeout(opts.HeartbeatInterval):
		return nil, fmt.Errorf("%w: FenceTimeout: %v is shorter than three heartbeat intervals plus 1 s (%v)", errInvalidOptions,
			opts.FenceTimeout, MinFenceTimeout(opts.HeartbeatInterval))
	case opts.FenceTimeout < 0:
		opts.FenceTimeout = -1
		if opts.Watchdog != nil {
			return nil, fmt.Errorf("%w: Watchdog: needs fencing (FenceTimeout is negative)", errInvalidOptions)
		}
	}
	switch {
	case opts.Domain.NodeName == "":
		opts.Domain.NodeName = opts.NodeName
	case opts.Domain.NodeName != opts.NodeName:
		return nil, fmt.Errorf("%w: Domain.NodeName: %q differs from NodeName %q", errInvalidOptions, opts.Domain.NodeName, opts.NodeName)
	}
	if opts.Domain.ConfigResolver == nil {
		opts.Domain.ConfigResolver = StoreConfig{Store: opts.Store}
	}
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = 30 * time.Second
	}
	if opts.StatusInterval <= 0 {
		opts.StatusInterval = 10 * time.Second
	}
	if opts.Float64 == nil {
		opts.Float64 = rand.Float64
	}
	switch {
	case opts.StatusJitter == 0:
		opts.StatusJitter = 0.2
	case opts.StatusJitter < 0:
		opts.StatusJitter = 0
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.ReconcileTimeout <= 0 {
		opts.ReconcileTimeout = 30 * time.Second
	}
	if opts.ShutdownPoll <= 0 {
		opts.ShutdownPoll = 5 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Migration.Engine.Clock == nil {
		opts.Migration.Engine.Clock = opts.Clock
	}
	opts.Migration = opts.Migration.withDefaults(opts.NodeName)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Agent{
		opts:          opts,
		log:           log.With("node", opts.NodeName),
		shutdownSince: map[string]shutdownAsks{},
		domainFacts:   map[string]domainFacts{},
		owned:         map[string]string{},
		foreign:       map[string]string{},
		takenSaid:     map[string]string{},
		fenced:        map[string]bool{},
	}
	sel := labels.SelectorFromSet(labels.Set{virtkit.NodeNameLabel: opts.NodeName})
	ctrl, err := reconcile.New(opts.Store, reconcile.ReconcilerFunc(a.Reconcile), reconcile.Options{
		Name:                    "node/" + opts.NodeName,
		MaxConcurrentReconciles: opts.Workers,
		ResyncPeriod:            opts.ResyncPeriod,
		ReconcileTimeout:        opts.ReconcileTimeout,
		Clock:                   opts.Clock,
		Logger:                  log,
	}, reconcile.Watch{
		NewList:       func() virtkit.ObjectList { return &virtkit.VirtualMachineInstanceList{} },
		LabelSelector: sel,
	}, reconcile.Watch{
		// Migration targets carry the target label until they own the VMI.
		NewList:       func() virtkit.ObjectList { return &virtkit.VirtualMachineInstanceList{} },
		LabelSelector: labels.SelectorFromSet(labels.Set{virtkit.MigrationTargetNodeNameLabel: opts.NodeName}),
	})
	if err != nil {
		return nil, err
	}
	a.ctrl = ctrl
	return a, nil
}

// Name is the node's name.
func (a *Agent) Name() string { return a.opts.NodeName }

// Controller exposes the agent's work queue runner, for metrics.
func (a *Agent) Controller() *reconcile.Controller { return a.ctrl }

// Enqueue asks the agent to look at one VMI again.
func (a *Agent) Enqueue(namespace, name string) {
	a.ctrl.Enqueue(reconcile.Request{Namespace: namespace, Name: name})
}

// Start registers the node (retrying while the store cannot be reached), adopts or removes the domains already on the
// host, and runs until ctx ends. On return the heartbeat has stopped; the
// guests keep running (a restarted agent adopts them).
func (a *Agent) Start(ctx context.Context) error {
	if err := a.register(ctx); err != nil {
		return fmt.Errorf("node %s: register: %w", a.opts.NodeName, err)
	}
	if ctx.Err() != nil {
		return nil // stopped while starting: not a failure
	}
	a.migs.setBase(ctx)
	a.dm.setBase(ctx)
	if why := a.opts.Migration.Unsupported; why != "" {
		a.log.Warn("this node cannot take part in live migrations", "reason", why)
	}
	events, err := a.opts.Hypervisor.Events(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting: not a failure
		}
		return fmt.Errorf("node %s: hypervisor events: %w", a.opts.NodeName, err)
	}
	// Every domain already on the host is looked at once: this node's are
	// adopted or, when no VMI wants them any more, removed (recovery after
	// an agent restart); domains without virtkit's metadata for this node
	// are left alone and reported (ForeignDomains). First, the virtiofsd
	// processes an earlier agent left are adopted or stopped.
	a.sweepShares(ctx)
	if err := a.scanHost(ctx, true); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting: not a failure
		}
		return fmt.Errorf("node %s: list domains: %w", a.opts.NodeName, err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { a.pumpEvents(ctx, events) })
	wg.Go(func() { a.heartbeatLoop(ctx) })
	wg.Go(func() { a.fenceLoop(ctx) })
	wg.Go(func() { a.scanLoop(ctx) })
	if a.opts.GuestInfo != nil {
		wg.Go(func() { a.opts.GuestInfo.Start(ctx, a.Enqueue) })
	}
	err = a.ctrl.Start(ctx)
	wg.Wait()
	a.migs.wg.Wait()
	a.dm.wg.Wait()
	return err
}

func (a *Agent) pumpEvents(ctx context.Context, events <-chan hypervisor.Event) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ns, name, ok := SplitDomainName(ev.Domain); ok {
				a.Enqueue(ns, name)
			}
		}
	}
}

// DomainName is the libvirt domain name of a VMI: <namespace>_<name>.
func DomainName(namespace, name string) string { return namespace + "_" + name }

// SplitDomainName reverses DomainName. Namespaces are DNS labels and never
// contain '_', so the first '_' separates them.
func SplitDomainName(domain string) (namespace, name string, ok bool) {
	ns, n, found := strings.Cut(domain, "_")
	if !found || ns == "" || n == "" {
		return "", "", false
	}
	return ns, n, true
}

// statusResync is when a running VMI's status is refreshed again if no
// event comes first: StatusInterval, jittered.
func (a *Agent) statusResync(vmi *virtkit.VirtualMachineInstance) time.Duration {
	d := a.opts.StatusInterval
	u := drawUnit(a.opts.KeyedFloat64, a.opts.Float64, vmi.Namespace+"/"+vmi.Name, a.opts.Clock.Now())
	return d + time.Duration(u*a.opts.StatusJitter*float64(d))
}

// drawUnit draws a jitter's uniform value in [0, 1): keyed by key and at
// when keyed is set (a seeded cluster's), from draw otherwise.
func drawUnit(keyed func(key string, at time.Time) float64, draw func() float64, key string, at time.Time) float64 {
	if keyed != nil {
		return keyed(key, at)
	}
	return draw()
}

func (a *Agent) now() metav1.Time {
	return metav1.NewTime(a.opts.Clock.Now().UTC().Truncate(time.Second))
}
