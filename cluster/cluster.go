package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/network"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/scheduler"
	"github.com/virtkit/virtkit/store"
)

// errInvalidOptions wraps every configuration error of this package; it
// matches virtkit.ErrInvalidOptions.
var errInvalidOptions = virtkit.InvalidOptions("cluster")

// Built-in controller names, the keys of Options.Replace.
const (
	VMController         = "virtualmachine"
	VMIController        = "virtualmachineinstance"
	ReplicaSetController = "replicaset"
	EvictionController   = "eviction"
	MigrationController  = "migration"
	NodeHealthController = "nodehealth"
	// GarbageCollectorController orphans and deletes dependents through
	// their owner references (see controller.GarbageCollector).
	GarbageCollectorController = "garbagecollector"
	// NamespaceController deletes the content of deleted namespaces (see
	// controller.NamespaceReconciler).
	NamespaceController = "namespace"
)

// Options configure a [Cluster]. The zero value is a working cluster: a
// memory store, two simulated hosts in real time, KubeVirt's defaults.
type Options struct {
	// Store holds the objects; nil means store.NewMemory().
	Store store.Store
	// Nodes is how many hosts to run when NodeNames is empty (default 2);
	// they are called node-1, node-2, ...
	Nodes int
	// NodeNames names the hosts explicitly.
	NodeNames []string
	// NewHypervisor returns the hypervisor of one host; nil means a
	// simulated host in real time (sim.New with the node's name), every
	// such host on one sim.Network (a mesh of DefaultBandwidth links), so
	// VMIs live-migrate between them.
	NewHypervisor func(nodeName string) (hypervisor.Hypervisor, error)
	// NodeLabels returns extra labels for a host's Node object.
	NodeLabels func(nodeName string) map[string]string
	// ConfigureNode adjusts one node agent's options after the shared
	// NodeAgent ones are applied (per-host migration addresses, say). The
	// agent's event recorder and tracer provider are filled in after it,
	// on the store it leaves in the options.
	ConfigureNode func(nodeName string, o *node.Options)
	// Defaults are the object defaults the cluster applies wherever it
	// defaults objects (Apply, VMIs created from VM and ReplicaSet
	// templates), as KubeVirt's cluster configuration tunes its defaulting
	// webhook. See [Options.ObjectDefaults] for how the zero value differs
	// from virtkit.SetDefaults: the pod network's default interface is
	// masquerade, which can live-migrate. A set EvictionStrategy is the
	// cluster-wide eviction strategy and New writes it into the KubeVirt
	// object (see KubeVirt).
	Defaults virtkit.DefaultOptions
	// Domain configures the domain builder on every node.
	Domain domain.Options
	// PodNetwork, when set, gives every VMI on the pod network its own
	// address from an IPAM in the store (and, with PodNetwork.Host, real
	// bridges and NAT on the host); it sets Domain.NetworkResolver on every
	// node where that is nil. Simulated hosts report the leased addresses.
	PodNetwork *PodNetwork
	// Scheduler places VMIs and migration targets; nil means
	// scheduler.New's default.
	Scheduler scheduler.Scheduler
	// Migration configures the migration controller (cluster migration
	// configuration over KubeVirt's defaults, namespace labels).
	Migration controller.MigrationOptions
	// Replace swaps a built-in controller's reconciler (keys:
	// VMController, VMIController, ...); the replacement keeps the
	// built-in's watches unless it implements Watcher.
	Replace map[string]reconcile.Reconciler
	// Extra controllers run next to the built-in ones.
	Extra []Controller
	// NodeAgent tunes every node agent (NodeName, Store, Hypervisor and
	// Domain are filled in per node).
	NodeAgent node.Options
	// GuestAgent tunes the guest-agent pollers of every node (intervals,
	// bounds); the zero value is KubeVirt's intervals.
	GuestAgent node.GuestAgentSourceOptions
	// Workers per built-in controller. Default 4 on the real clock and 1
	// on a virtual clock ([Stepper]), where parallel workers would
	// interleave differently on every run (see [Cluster.Settle]).
	Workers int
	// Clock is the one clock of the whole cluster: controllers (requeues,
	// backoff, timestamps), the default scheduler (heartbeat freshness),
	// node agents (heartbeats, resyncs, fencing, migrations), guest-agent
	// pollers, the default memory store and the default simulated hosts.
	// Nil is the real clock. A *sim.VirtualClock runs the cluster on
	// virtual time, driven by [Cluster.Advance] and [Cluster.Settle].
	// Components given explicitly (Store, Scheduler, NewHypervisor) keep
	// their own clocks.
	Clock clock.WithTicker
	// Logger receives every component's logs; nil discards them.
	Logger *slog.Logger
	// Events records the events of every controller and node agent; nil
	// means store-backed events.Recorders (see observability.go). Pass
	// events.Discard{} to record none.
	Events events.EventRecorder
	// EventTTL is how long events are kept after their last observation;
	// 0 means events.DefaultTTL (one hour), negative keeps them forever.
	EventTTL time.Duration
	// TracerProvider receives the spans of VM starts and migrations from
	// every controller, node agent and migration engine; nil traces
	// nothing.
	TracerProvider trace.TracerProvider
	// Storage configures DataVolumes (storage classes, import workers,
	// registry pulls).
	Storage StorageOptions
	// NoCommonInstancetypes leaves out KubeVirt's common instance types
	// and preferences ([virtkit.CommonInstancetypes]), which New
	// otherwise installs in the store as cluster-scoped objects, as
	// KubeVirt's operator deploys them: missing ones are created and
	// changed ones brought back to the embedded version.
	NoCommonInstancetypes bool
	// KubeVirt is the cluster's KubeVirt configuration (feature gates,
	// eviction and VM rollout strategies, migrations). New keeps it in the
	// KubeVirt object kubevirt in namespace kubevirt, as KubeVirt's operator
	// installs it, where admission reads it for every request (apply the
	// object to change it). nil creates the object with KubeVirt's default
	// configuration, or keeps the one a persistent store already holds;
	// given, it replaces the stored object's configuration. Its
	// evictionStrategy is the cluster-wide eviction strategy, which
	// Defaults.EvictionStrategy, when set, seeds and overrides: New writes
	// it into the object, so the API's pod evictions (kubectl drain) and
	// Cluster.Drain, which read the object, agree with the controllers.
	// Its migrations (unless Migration.Config is set), eviction strategy
	// and VM rollout strategy configure the controllers as New finds them;
	// admission and Cluster.Drain follow later changes, and placement
	// reads its nodeSelectors for every decision. Its memoryOvercommit sizes the memory request of VMIs
	// that set none, and its permittedHostDevices say which of their
	// hosts' devices the node agents advertise.
	KubeVirt *virtkit.KubeVirtConfiguration
	// Seed, when not zero, seeds every random choice of the cluster: the
	// default memory store's uids and generateName suffixes
	// (store.SeededIDs), firmware UUIDs and serials drawn by defaulting,
	// the controllers' backoff jitter, the node agents' and guest-agent
	// pollers' jitter. Each component draws from its own stream, so on a
	// virtual clock a scenario run twice with one seed makes the same
	// choices (which VMIs a ReplicaSet removes on scale-down, say) and
	// records the same events. On a *sim.VirtualClock a seeded cluster
	// also fires one timer at a time, settling in between, so that two
	// timers of one instant do not race. Zero draws from math/rand as
	// before.
	// Components given explicitly (Store, Scheduler, NewHypervisor,
	// Defaults.NewUUID, NodeAgent.Float64) keep their own randomness.
	Seed int64
}

// Controller is a reconciler and the watches that feed it.
type Controller struct {
	Name       string
	Reconciler reconcile.Reconciler
	Watches    []reconcile.Watch
}

// Watcher is implemented by reconcilers that know what to watch.
type Watcher interface {
	Watches() []reconcile.Watch
}

// Cluster is a running (or ready to run) control plane with its nodes.
type Cluster struct {
	opts        Options
	store       store.Store
	controllers []*reconcile.Controller
	nodes       []*Node
	started     atomic.Bool
	// outsideGoBaseline is how many goroutines were parked outside Go
	// (a CPU profile's writer) before the cluster started: Settle
	// does not wait for them.
	outsideGoBaseline atomic.Uint64
	// controllerEvents records the controllers' events; collector
	// deletes expired events (nil: kept forever).
	controllerEvents events.EventRecorder
	collector        *events.Collector
	// recorders are the store-backed recorders the cluster made (the
	// controllers' and each node agent's), by reporting instance: Start
	// runs their retries of failed writes for the cluster's lifetime.
	recorders map[string]*events.Recorder
	storage   *storageSetup
	// shared is the controllers' one watch per kind.
	shared *reconcile.SharedCache
	// agents runs the node agents (see faults.go).
	agents agentGroup
	// exports runs the VirtualMachineExports' servers (see export.go).
	exports interface{ Start(context.Context) error }
}

// Node is one host of the cluster.
type Node struct {
	Name       string
	Hypervisor hypervisor.Hypervisor
	// Agent is the node's agent; [Cluster.RestartAgent] replaces it.
	Agent *node.Agent

	build func() (*node.Agent, error)
	run   agentRun
}

// New builds the cluster. Nothing runs until Start.
func New(opts Options) (*Cluster, error) {
	return build(opts, true)
}

// build builds a cluster, with its hosts when withNodes is set.
func build(opts Options, withNodes bool) (*Cluster, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Store == nil {
		so := store.Options{Clock: opts.Clock}
		if opts.Seed != 0 {
			so.IDs = store.SeededIDs(opts.Seed)
		}
		st, err := store.NewMemoryWithOptions(so)
		if err != nil {
			return nil, err
		}
		opts.Store = st
	}
	if opts.Nodes < 0 {
		return nil, fmt.Errorf("%w: Nodes: must not be negative", errInvalidOptions)
	}
	names := opts.NodeNames
	if len(names) == 0 && withNodes {
		n := opts.Nodes
		if n == 0 {
			n = 2
		}
		for i := 1; i <= n; i++ {
			names = append(names, fmt.Sprintf("node-%d", i))
		}
	}
	if opts.Workers <= 0 {
		opts.Workers = defaultWorkers(opts.Clock)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	var self *Cluster // for the simulated guests' DHCP
	if opts.NewHypervisor == nil {
		var agent sim.AgentOptions
		if opts.PodNetwork != nil {
			agent.Addresses = func(mac string) []guestagent.IPAddress { return self.simAddresses(mac) }
		}
		opts.NewHypervisor = defaultSimHosts(simClock(opts.Clock), agent)
	}
	opts.Defaults = opts.ObjectDefaults()
	if !opts.NoCommonInstancetypes {
		if err := installCommonInstancetypes(opts.Store); err != nil {
			return nil, err
		}
	}
	// The namespaces kube-apiserver creates at start, and KubeVirt's.
	if err := controller.EnsureNamespaces(context.Background(), opts.Store, append(virtkit.SystemNamespaces(), virtkit.DefaultKubeVirtNamespace)...); err != nil {
		return nil, err
	}
	kvConfig, err := installKubeVirtWithTimeout(opts.Store, opts.KubeVirt, opts.Defaults.EvictionStrategy, metav1.NewTime(opts.Clock.Now()))
	if err != nil {
		return nil, err
	}
	if opts.Migration.Config == nil && kvConfig.MigrationConfiguration != nil {
		opts.Migration.Config = kvConfig.MigrationConfiguration.DeepCopy()
	}
	// The controllers default the VMIs of VMs and replica sets with the
	// configuration's eviction and rollout strategies as New found them
	// (admission reads them for every request).
	if es := kvConfig.EvictionStrategy; es != nil && opts.Defaults.EvictionStrategy == "" {
		opts.Defaults.EvictionStrategy = *es
	}
	if rs := kvConfig.VMRolloutStrategy; rs != nil {
		opts.Defaults.NoHotplug = *rs == virtkit.VMRolloutStrategyStage
	}
	c := &Cluster{opts: opts, store: opts.Store, recorders: map[string]*events.Recorder{}}
	self = c
	shared, err := reconcile.NewSharedCache(opts.Store, reconcile.SharedCacheOptions{Clock: opts.Clock, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	c.shared = shared
	if err := c.setUpEvents(); err != nil {
		return nil, err
	}

	rc := controller.ReconcilerOptions{Store: opts.Store, Scheduler: opts.Scheduler, Clock: opts.Clock, Logger: opts.Logger,
		Defaults: opts.Defaults, DefaultEvictionStrategy: opts.Defaults.EvictionStrategy, Events: c.controllerEvents, TracerProvider: opts.TracerProvider, Cache: c.shared}
	builtins, err := builtinControllers(rc, opts.Migration, opts.Seed)
	if err != nil {
		return nil, err
	}
	if opts.Seed != 0 && c.opts.Defaults.NewUUID == nil {
		c.opts.Defaults.NewUUID = seededUUIDs(opts.Seed, "uuid/apply")
	}
	for _, b := range builtins {
		if r, ok := opts.Replace[b.Name]; ok {
			b.Reconciler = r
			if w, ok := r.(Watcher); ok {
				b.Watches = w.Watches()
			}
		}
		if err := c.addController(b); err != nil {
			return nil, err
		}
	}
	for _, e := range opts.Extra {
		if err := c.addController(e); err != nil {
			return nil, err
		}
	}
	if err := c.setUpStorage(); err != nil {
		return nil, err
	}

	if !withNodes {
		return c, nil
	}
	for _, name := range names {
		hv, err := opts.NewHypervisor(name)
		if err != nil {
			c.cleanUpStorage()
			return nil, fmt.Errorf("node %s: hypervisor: %w", name, err)
		}
		no := opts.NodeAgent
		no.NodeName = name
		no.Store = opts.Store
		no.Hypervisor = hv
		no.Domain = opts.Domain
		if opts.PodNetwork != nil && no.Domain.NetworkResolver == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			r, err := opts.PodNetwork.resolver(ctx, c.store, name)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("node %s: %w", name, err)
			}
			no.Domain.NetworkResolver = r
		}
		if no.Clock == nil {
			no.Clock = opts.Clock
		}
		if no.Logger == nil {
			no.Logger = opts.Logger
		}
		seedNode(opts.Seed, name, &no)
		if opts.NodeLabels != nil {
			no.Labels = opts.NodeLabels(name)
		}
		if opts.ConfigureNode != nil {
			opts.ConfigureNode(name, &no)
		}
		// After ConfigureNode: the agent's recorder writes through the
		// store the agent uses, as a node agent's events travel on its
		// own connection to the API server.
		rec, err := nodeObservability(&no, opts.Events, opts.TracerProvider)
		if err != nil {
			return nil, err
		}
		if rec != nil {
			c.recorders[name] = rec
		}
		if err := c.setUpNodeStorage(name, &no); err != nil {
			c.cleanUpStorage()
			return nil, fmt.Errorf("node %s: storage: %w", name, err)
		}
		gao := opts.GuestAgent
		seedGuestAgent(opts.Seed, name, &gao)
		// build makes the node's agent: once here, again after
		// [Cluster.CrashAgent] for [Cluster.RestartAgent] (a fresh
		// process: no memory of the last one but what the host and the
		// store keep).
		base := no
		build := func() (*node.Agent, error) {
			return NewNode(NodeOptions{Agent: base, Events: opts.Events, TracerProvider: opts.TracerProvider, GuestAgent: gao})
		}
		agent, err := build()
		if err != nil {
			c.cleanUpStorage()
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
		c.nodes = append(c.nodes, &Node{Name: name, Hypervisor: hv, Agent: agent, build: build})
	}
	return c, nil
}

func (c *Cluster) addController(spec Controller) error {
	// Every controller watches through the one shared cache: one store
	// watch per kind for the whole control plane.
	ctrl, err := reconcile.New(c.shared, spec.Reconciler, reconcile.Options{
		Name:                    spec.Name,
		MaxConcurrentReconciles: c.opts.Workers,
		Clock:                   c.opts.Clock,
		Logger:                  c.opts.Logger,
	}, spec.Watches...)
	if err != nil {
		return fmt.Errorf("controller %s: %w", spec.Name, err)
	}
	c.controllers = append(c.controllers, ctrl)
	return nil
}

func builtinControllers(rc controller.ReconcilerOptions, mo controller.MigrationOptions, seed int64) ([]Controller, error) {
	vm, err := controller.NewVMReconciler(seededReconciler(rc, seed, VMController))
	if err != nil {
		return nil, err
	}
	vmi, err := controller.NewVMIReconciler(seededReconciler(rc, seed, VMIController))
	if err != nil {
		return nil, err
	}
	rs, err := controller.NewReplicaSetReconciler(seededReconciler(rc, seed, ReplicaSetController))
	if err != nil {
		return nil, err
	}
	ev, err := controller.NewEvictionReconciler(seededReconciler(rc, seed, EvictionController))
	if err != nil {
		return nil, err
	}
	nh, err := controller.NewNodeHealthReconciler(controller.NodeHealthOptions{Store: rc.Store, Clock: rc.Clock, Logger: rc.Logger, Events: rc.Events})
	if err != nil {
		return nil, err
	}
	mig, err := controller.NewMigrationReconciler(seededReconciler(rc, seed, MigrationController), mo)
	if err != nil {
		return nil, err
	}
	gc, err := controller.NewGarbageCollector(rc)
	if err != nil {
		return nil, err
	}
	ns, err := controller.NewNamespaceReconciler(rc)
	if err != nil {
		return nil, err
	}
	return []Controller{
		{Name: VMController, Reconciler: vm, Watches: vm.Watches()},
		{Name: VMIController, Reconciler: vmi, Watches: vmi.Watches()},
		{Name: ReplicaSetController, Reconciler: rs, Watches: rs.Watches()},
		{Name: EvictionController, Reconciler: ev, Watches: ev.Watches()},
		{Name: MigrationController, Reconciler: mig, Watches: mig.Watches()},
		{Name: NodeHealthController, Reconciler: nh, Watches: nh.Watches()},
		{Name: GarbageCollectorController, Reconciler: gc, Watches: gc.Watches()},
		{Name: NamespaceController, Reconciler: ns, Watches: ns.Watches()},
	}, nil
}

// Store is the cluster's object store.
func (c *Cluster) Store() store.Store { return c.store }

// Nodes are the cluster's hosts, in order.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Node returns the host of that name, or nil.
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// NodesReady reports whether every node of the cluster has registered and
// reports Ready.
func (c *Cluster) NodesReady(ctx context.Context) (bool, error) {
	var nodes virtkit.NodeList
	if err := c.store.List(ctx, &nodes, store.ListOptions{}); err != nil {
		return false, err
	}
	ready := 0
	for _, n := range nodes.Items {
		if virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady) {
			ready++
		}
	}
	return ready == len(c.nodes), nil
}

// Controllers are the running controllers (built-in and extra), for
// metrics and inspection.
func (c *Cluster) Controllers() []*reconcile.Controller { return c.controllers }

// Start runs the controllers and node agents until ctx ends or one of them
// fails. It can be called once.
func (c *Cluster) Start(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("cluster already started")
	}
	c.outsideGoBaseline.Store(outsideGo())
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return c.shared.Start(ctx) })
	for _, ctrl := range c.controllers {
		g.Go(func() error { return ctrl.Start(ctx) })
	}
	c.agents.set(ctx, g)
	for _, n := range c.nodes {
		c.startAgent(n, n.Agent, false)
	}
	for _, rec := range c.recorders {
		g.Go(func() error { return rec.Start(ctx) })
	}
	if c.collector != nil {
		g.Go(func() error { return c.collector.Start(ctx) })
	}
	if c.exports != nil {
		g.Go(func() error { return c.exports.Start(ctx) })
	}
	defer c.cleanUpStorage()
	if p := c.opts.PodNetwork; p != nil {
		ipam := &network.IPAM{Store: c.store}
		g.Go(func() error {
			return ipam.RunCollector(ctx, network.CollectorOptions{Interval: p.CollectInterval, Logger: c.opts.Logger})
		})
	}
	return g.Wait()
}

// Apply defaults, validates and stores objects: new ones are created,
// existing ones (same kind, namespace and name) get the new spec. Objects
// without a namespace land in "default" (cluster-scoped kinds excepted).
// The cluster's object defaults ([Options.Defaults]) apply.
func (c *Cluster) Apply(ctx context.Context, objs ...virtkit.Object) error {
	_, virtual := c.opts.Clock.(Stepper)
	return applyAll(ctx, c.store, c.opts.Defaults, virtual, objs...)
}
