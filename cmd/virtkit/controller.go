package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/manifest"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/internal/leader"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/metrics/wire"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/reconcile"
)

type controllerFlags struct {
	noCommonInstancetypes bool
	store                 storeFlags
	metricsAddr           string
	nodes                 int
	workers               int
	monitorGrace          time.Duration
	unresponsiveGrace     time.Duration
	heartbeatInterval     time.Duration
	fenceTimeout          time.Duration
	leaderTTL             time.Duration
	identity              string
	logLevel              string
	cpuProfile            string
	files                 []string
	nodesSet              bool // --nodes given explicitly
	defaultIface          string
	api                   apiFlags
	goRuntime             goRuntimeFlags
}

func newControllerCmd() *cobra.Command {
	f := &controllerFlags{}
	cmd := &cobra.Command{
		Use:   "controller --store etcd://HOST:PORT[,...] | --store memory --nodes N",
		Short: "Run the control plane's controllers (with leader election on etcd)",
		Long: `controller runs virtkit's built-in controllers: VirtualMachine, VMI placement,
ReplicaSet, eviction, migration and node health.

With --store etcd://..., any number of replicas may run; they elect a leader
through etcd (a session lease of --leader-ttl and a campaign on
<etcd-prefix>/leader/controller) and only the leader runs the controllers. A
replica logs every leader it sees. When the leader process dies, the next one
takes over once its lease expires (--leader-ttl). A leader that loses its lease
(it could not reach etcd for --leader-ttl) stops its controllers at once and
exits with a non-zero status, to be restarted as a candidate by its supervisor:
controllers keep state in memory that is only trusted after a fresh start.
etcd's client renews the lease every third of --leader-ttl and gives it up when
no renewal has been answered for a whole --leader-ttl, so a stall of the process
or of etcd (a loaded machine, a slow disk) of about two thirds of it costs a live
leader its lease: a renewal answered that late is logged as a warning. Keep
--leader-ttl well above the stalls the machines see (2s, etcd's smallest lease,
tolerates about 1.3s).
A replica started while etcd cannot be reached waits for it, retrying with a
growing delay (up to 5s) and logging why, until etcd answers or it is stopped.

With --store memory (the default) the store lives in this process, so it also
runs --nodes simulated node agents: the whole control plane in one process,
until interrupted. -f applies manifests to it at start.

Node health: a node whose heartbeat has not changed for --node-monitor-grace
is marked Ready=False/HeartbeatTimeout; --unresponsive-grace later its VMIs
fail with reason NodeUnresponsive and their VMs are started elsewhere. A node
agent that fences (see virtkit node --fence-timeout) publishes its fence timeout
F on its Node; its VMIs then fail no sooner than 1.5 x F after its last
heartbeat, even when the two graces add up to less, so a node cut off from the
store has stopped its guests before they start elsewhere. A deleted Node object
is not a dead node: a live agent registers it again with its next heartbeat, and
its VMIs fail only after the same grace.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.nodesSet = cmd.Flags().Changed("nodes")
			return runController(cmd.Context(), f, cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	f.store.register(cmd)
	fs.IntVar(&f.nodes, "nodes", 2, "simulated node agents to run in this process (--store memory only)")
	fs.IntVar(&f.workers, "workers", 4, "workers per controller")
	fs.DurationVar(&f.monitorGrace, "node-monitor-grace", controller.DefaultNodeMonitorGracePeriod,
		"a node without a new heartbeat for this long is marked not ready")
	fs.DurationVar(&f.unresponsiveGrace, "unresponsive-grace", controller.DefaultNodeUnresponsiveGracePeriod,
		"how much longer a not-ready node's VMIs are left before they fail with NodeUnresponsive")
	fs.DurationVar(&f.heartbeatInterval, "heartbeat-interval", 10*time.Second, "heartbeat of the in-process node agents (--store memory)")
	fs.DurationVar(&f.fenceTimeout, "fence-timeout", 0,
		"fence timeout of the in-process node agents (--store memory; 0: 6 heartbeat intervals, at least 10s; negative: never)")
	fs.DurationVar(&f.leaderTTL, "leader-ttl", leader.DefaultTTL, "leader election lease: the failover time after a leader dies")
	fs.StringVar(&f.identity, "leader-id", "", "this replica's name in the election (default HOSTNAME-PID)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (e.g. 127.0.0.1:9100) at /metrics")
	fs.StringVar(&f.defaultIface, "default-network-interface", string(virtkit.NetworkBindingMasquerade),
		"binding of the pod network interface VMIs get when they name none: masquerade (live-migratable) or bridge "+
			"(KubeVirt's stock default; KubeVirt's network.defaultNetworkInterface)")
	addCPUProfileFlag(cmd, &f.cpuProfile)
	f.goRuntime.register(cmd)
	f.api.register(cmd)
	fs.StringArrayVarP(&f.files, "filename", "f", nil, "manifests to apply at start (--store memory only; repeatable)")
	fs.BoolVar(&f.noCommonInstancetypes, "no-common-instancetypes", false,
		"do not install KubeVirt's common instance types and preferences (u1.small, fedora, ...) in the store")
	return cmd
}

func runController(ctx context.Context, f *controllerFlags, stderr io.Writer) error {
	log, err := newLogger(stderr, f.logLevel)
	if err != nil {
		return err
	}
	if f.workers <= 0 {
		return fmt.Errorf("--workers: %d is not positive", f.workers)
	}
	restoreGC, err := f.goRuntime.apply()
	if err != nil {
		return err
	}
	defer restoreGC()
	if f.monitorGrace <= 0 || f.unresponsiveGrace <= 0 {
		return errors.New("--node-monitor-grace, --unresponsive-grace: must be positive")
	}
	if f.heartbeatInterval <= 0 {
		return fmt.Errorf("--heartbeat-interval: %v is not positive", f.heartbeatInterval)
	}
	if f.fenceTimeout > 0 && f.fenceTimeout < node.MinFenceTimeout(f.heartbeatInterval) {
		return fmt.Errorf("--fence-timeout: %v is shorter than three heartbeat intervals plus 1s (%v)",
			f.fenceTimeout, node.MinFenceTimeout(f.heartbeatInterval))
	}
	controllersOnly := !f.store.isMemory()
	if controllersOnly && f.nodesSet {
		return errors.New("--nodes: only with --store memory; run `virtkit node` processes against etcd")
	}
	if controllersOnly && len(f.files) > 0 {
		return errors.New("-f: only with --store memory; use `virtkit apply` against etcd")
	}
	if !controllersOnly && f.nodes <= 0 {
		return fmt.Errorf("--nodes: %d is not positive", f.nodes)
	}
	if f.identity == "" {
		host, _ := os.Hostname()
		f.identity = host + "-" + strconv.Itoa(os.Getpid())
	}
	log = log.With("replica", f.identity)
	if grace := f.monitorGrace + f.unresponsiveGrace; !controllersOnly && f.fenceTimeout >= 0 {
		fence := f.fenceTimeout
		if fence == 0 {
			fence = node.DefaultFenceTimeout(f.heartbeatInterval)
		}
		if need := virtkit.MinNodeGrace(fence); grace < need {
			log.Warn("node grace shorter than the node agents' fence timeout allows: silent nodes' VMIs wait longer",
				"grace", grace, "fenceTimeout", fence, "wait", need)
		}
	}
	stopProfile, err := startCPUProfile(f.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if f.api.addr != "" {
		// The API server reads resourceVersion 0 as "any".
		f.store.memoryStartRV = 1
	}
	st, err := f.store.openWaiting(ctx, log)
	if err != nil {
		return err
	}
	defer st.Close()

	nh, err := controller.NewNodeHealthReconciler(controller.NodeHealthOptions{
		Store: st, MonitorGracePeriod: f.monitorGrace, UnresponsiveGracePeriod: f.unresponsiveGrace, Logger: log,
	})
	if err != nil {
		return err
	}
	binding := virtkit.NetworkBinding(f.defaultIface)
	if binding != virtkit.NetworkBindingMasquerade && binding != virtkit.NetworkBindingBridge {
		return fmt.Errorf("--default-network-interface: want masquerade or bridge, got %q", f.defaultIface)
	}
	copts := cluster.Options{
		Defaults:  virtkit.DefaultOptions{PodNetworkBinding: binding},
		Store:     st,
		Workers:   f.workers,
		Replace:   map[string]reconcile.Reconciler{cluster.NodeHealthController: nh},
		NodeAgent: node.Options{HeartbeatInterval: f.heartbeatInterval, FenceTimeout: f.fenceTimeout},
		Logger:    log,
		// As KubeVirt's operator deploys them.
		NoCommonInstancetypes: f.noCommonInstancetypes,
	}
	// The one assembly of a control plane: alone against a shared store
	// (its node agents are `virtkit node` processes), or with --nodes
	// simulated hosts in this process, as the embedded cluster runs.
	var c *cluster.Cluster
	if controllersOnly {
		c, err = cluster.NewControlPlane(copts)
	} else {
		copts.Nodes = f.nodes
		c, err = cluster.New(copts)
	}
	if err != nil {
		return err
	}
	if len(f.files) > 0 {
		objs, err := manifest.Decode(os.Stdin, f.files)
		if err != nil {
			return err
		}
		if err := c.Apply(ctx, objs...); err != nil {
			return err
		}
		log.Info("applied manifests", "objects", len(objs))
	}
	var guest apiserver.GuestInfo
	var local []*cluster.Node
	if !controllersOnly {
		guest = c.GuestInfo()
		local = c.Nodes()
		f.api.uploads = c
	}
	stopAPI, err := f.api.start(ctx, st.Store, copts.Defaults, guest, local, log, stderr)
	if err != nil {
		return err
	}
	defer stopAPI()
	if f.metricsAddr != "" {
		// Every VMI's series are streamed (wire.ClusterHandler) when
		// this process runs the node agents too; a controller alone has
		// only the control-plane families.
		var h http.Handler
		if controllersOnly {
			reg := prometheus.NewRegistry()
			if err := wire.RegisterControlPlane(reg, st, c.Controllers(), metrics.Options{}); err != nil {
				return fmt.Errorf("--metrics-addr: %w", err)
			}
			h = metrics.Handler(reg)
		} else {
			var err error
			if h, err = wire.ClusterHandler(c, metrics.Options{}); err != nil {
				return fmt.Errorf("--metrics-addr: %w", err)
			}
		}
		stopMetrics, err := serveHandler(ctx, f.metricsAddr, h, stderr)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	work := func(ctx context.Context) error {
		if !controllersOnly {
			log.Info("single-process control plane running", "nodes", f.nodes)
		} else {
			log.Info("controllers running")
		}
		return c.Start(ctx)
	}
	err = leader.Run(ctx, leader.Options{
		Client:   st.Etcd,
		Key:      st.Prefix + "/leader/controller",
		Identity: f.identity,
		TTL:      f.leaderTTL,
		Logger:   log,
	}, work)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	log.Info("controller stopped")
	return nil
}
