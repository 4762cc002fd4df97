package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/libvirt"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/metrics/wire"
	"github.com/virtkit/virtkit/node"
)

// markStoppedTimeout bounds the last write of a node agent that is
// shutting down.
const markStoppedTimeout = 5 * time.Second

type nodeFlags struct {
	store             storeFlags
	metricsAddr       string
	name              string
	hypervisor        string
	uri               string
	simState          string
	simCPUs           int
	simMemory         string
	domainType        string
	runtimeDir        string
	heartbeatInterval time.Duration
	fenceTimeout      time.Duration
	watchdog          bool
	watchdogSet       bool // --watchdog given explicitly
	statusInterval    time.Duration
	workers           int
	logLevel          string
	cpuProfile        string
	allowHostPaths    []string
	allowContainerDir []string
	migration         migrationFlags
	storage           nodeStorageFlags
	network           nodeNetworkFlags
	endpoint          endpointFlags
	simFaultsAddr     string
}

func newNodeCmd() *cobra.Command {
	f := &nodeFlags{}
	cmd := &cobra.Command{
		Use:   "node --name NAME --store etcd://HOST:PORT --hypervisor sim|libvirt",
		Short: "Run one node agent (the virt-handler of a host)",
		Long: `node runs the node agent of one host: it registers the Node object NAME, posts a
heartbeat every --heartbeat-interval, starts the guests of the VMIs placed on NAME
and reports their status. On start it adopts the guests already on the host and
destroys those no VMI wants (stale guests of VMIs that were failed and replaced
while the agent was away). It never touches a domain whose virtkit metadata does
not name NAME (other people's guests on a shared host, other nodes' guests): it
leaves them alone and reports them. On SIGTERM or SIGINT it marks the Node not
ready (reason AgentStopped) and exits; the guests keep running. Started while
etcd cannot be reached (not up yet, or across a partition), it waits for it,
retrying with a growing delay (up to 5s) and logging why, until etcd answers or
the process is stopped.

Fencing: when the agent cannot renew its heartbeat in the store for
--fence-timeout (default 6 heartbeat intervals, at least 10s: 60s with the
default --heartbeat-interval), it destroys its own guests and starts none until
a renewal succeeds, because the controller restarts them elsewhere once the
node has been silent for its grace. The agent publishes the timeout on its Node
(annotation virtkit.io/fence-timeout) and the controller waits at least 1.5x
that long before it fails the node's VMIs. With --hypervisor sim the simulated
host also has a watchdog (--watchdog, on by default) that the agent pets on
every renewal: a frozen (SIGSTOP) or killed process's guests are stopped at the
deadline too. libvirt hosts have no watchdog here: a frozen or killed agent's
guests keep running (use a host watchdog such as Linux softdog to reset the
host). --fence-timeout 0 keeps the default; a negative value disables fencing
(unsafe: a partitioned node's guests can run twice).

With --metrics-addr, GET /debug/domains returns what the hypervisor really
runs, read straight from it (JSON: domains with state, active, virtkit metadata
and ownership; fenced, fences, foreign domains, watchdog deadline), and
/metrics adds virtkit_node_fenced, virtkit_node_fences_total and
virtkit_node_foreign_domains.

--hypervisor sim runs a simulated host named NAME inside this process; its
guests die with the process unless --sim-state FILE keeps their definitions and
run states in FILE and restores them on the next start, as real guests would
survive an agent restart. The file also keeps the watchdog's deadline: guests
restored after it passed come back stopped, as the watchdog would have stopped
them. --hypervisor libvirt connects to --uri.

Simulator only: --sim-faults-addr 127.0.0.1:PORT (loopback addresses only; no
authentication) serves the simulated host's guest-fault hooks for tests that
run this process: POST /sim/faults/crash-guest, /sim/faults/guest-agent-gone,
/sim/faults/cut-migration and /sim/faults/acpi with a JSON body naming one of
this node's domains ({"domain": "NAMESPACE_NAME"}, for acpi also "ignore": true
or "delay": "20s"; neither restores the default). libvirt has no such hooks:
the flag is refused with --hypervisor libvirt.

Live migration: a libvirt node publishes --migration-uri (and
--migration-data-uri) as its migration address, the source's destination
URI. A simulated host listens for migrations from other node processes on
--migration-uri tcp://HOST:PORT (default tcp://127.0.0.1:0, a free loopback
port; give an address the other nodes can reach when they run elsewhere)
and publishes the address it listens on; the guest's pages cross that TCP
connection as the simulation sends them. The stream has no TLS or
authentication: keep it on a trusted network. A node that cannot take part
in migrations (a libvirt node without --migration-uri) logs so at start-up
and puts the reason on its Node (annotation virtkit.io/migration-unsupported):
the controller never picks it as a target and fails a migration from it
with that reason.

Imports: the node's DataVolume import worker converts tenants' images with
qemu-img, confined by bubblewrap (--qemu-img-sandbox bwrap, the default) to
the files of one import; the node refuses to start when bwrap is missing.
--qemu-img-sandbox none runs qemu-img unconfined, only together with
--allow-unconfined-qemu-img, and logs a warning: a crafted image that slipped
past the importer's header checks could then make qemu-img read host files.

Streams: with --endpoint-addr the agent serves its endpoint (console, VNC,
port-forward and guest-agent information of its VMIs, for the API server of
virtkit controller) over mutual TLS and publishes its URL on its Node
(annotation virtkit.io/node-endpoint). --endpoint-cert-dir holds the
controller's CA certificate and this node's certificate node-NAME.crt/.key,
issued there when the CA key is present.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.watchdogSet = cmd.Flags().Changed("watchdog")
			f.network.cmd = cmd
			return runNode(cmd.Context(), f, cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	f.store.register(cmd)
	fs.StringVar(&f.name, "name", "", "node name (required)")
	fs.StringVar(&f.hypervisor, "hypervisor", "sim", "sim or libvirt")
	fs.StringVar(&f.uri, "uri", "qemu:///system", "libvirt connection URI (--hypervisor libvirt)")
	fs.StringVar(&f.simState, "sim-state", "", "file that keeps the simulated host's guests across restarts (--hypervisor sim)")
	fs.IntVar(&f.simCPUs, "sim-cpus", 0, "CPUs of the simulated host (default 8)")
	fs.StringVar(&f.simMemory, "sim-memory", "", "memory of the simulated host, e.g. 64Gi (default 32Gi)")
	fs.StringVar(&f.domainType, "domain-type", domain.TypeQEMU, "libvirt domain type: qemu or kvm")
	fs.StringVar(&f.runtimeDir, "runtime-dir", "", "directory for per-VMI sockets (default /run/virtkit)")
	fs.DurationVar(&f.heartbeatInterval, "heartbeat-interval", 10*time.Second, "how often the Node's heartbeat is posted")
	fs.DurationVar(&f.fenceTimeout, "fence-timeout", 0,
		"destroy this node's guests when the heartbeat cannot be renewed for this long (0: 6 heartbeat intervals, at least 10s; negative: never)")
	fs.BoolVar(&f.watchdog, "watchdog", true, "pet the simulated host's watchdog on every heartbeat renewal (--hypervisor sim)")
	fs.DurationVar(&f.statusInterval, "status-interval", 10*time.Second, "how often a running VMI's status is refreshed")
	fs.IntVar(&f.workers, "workers", 4, "VMIs reconciled in parallel")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (e.g. 127.0.0.1:9100) at /metrics")
	fs.StringArrayVar(&f.allowHostPaths, "allow-host-path", nil, "absolute path prefix a hostDisk may name, symlinks resolved (repeatable; default: none)")
	fs.StringArrayVar(&f.allowContainerDir, "allow-container-path", nil, "absolute directory prefix a containerPath volume may name; the guest is served a copy taken at its start (repeatable; default: none)")
	f.migration.register(cmd)
	f.storage.register(cmd)
	f.network.register(cmd)
	f.endpoint.register(cmd)
	registerSimFaultsFlag(cmd, &f.simFaultsAddr)
	addCPUProfileFlag(cmd, &f.cpuProfile)
	return cmd
}

func runNode(ctx context.Context, f *nodeFlags, stderr io.Writer) error {
	if f.name == "" {
		return errors.New("--name: required")
	}
	if msgs := validation.IsDNS1123Label(f.name); len(msgs) > 0 {
		return fmt.Errorf("--name %q: not a valid node name: %s", f.name, strings.Join(msgs, "; "))
	}
	for _, p := range f.allowHostPaths {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			return fmt.Errorf("--allow-host-path %q: want a clean absolute path", p)
		}
	}
	for _, p := range f.allowContainerDir {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			return fmt.Errorf("--allow-container-path %q: want a clean absolute path", p)
		}
	}
	if f.heartbeatInterval <= 0 {
		return fmt.Errorf("--heartbeat-interval: %v is not positive", f.heartbeatInterval)
	}
	if f.fenceTimeout > 0 && f.fenceTimeout < node.MinFenceTimeout(f.heartbeatInterval) {
		return fmt.Errorf("--fence-timeout: %v is shorter than three heartbeat intervals plus 1s (%v)",
			f.fenceTimeout, node.MinFenceTimeout(f.heartbeatInterval))
	}
	if f.watchdogSet && f.watchdog && f.hypervisor != "sim" {
		return errors.New("--watchdog: only with --hypervisor sim")
	}
	if f.watchdog && f.fenceTimeout < 0 && f.hypervisor == "sim" {
		if f.watchdogSet {
			return errors.New("--watchdog: needs fencing (--fence-timeout is negative)")
		}
		f.watchdog = false
	}
	if err := checkSimFaultsAddr(f.simFaultsAddr, f.hypervisor); err != nil {
		return err
	}
	migOpts, err := f.migration.options(f.hypervisor)
	if err != nil {
		return err
	}
	base, err := newLogger(stderr, f.logLevel)
	if err != nil {
		return err
	}
	// The agent adds the node attribute to its own logs; everything else
	// here gets it once from log.
	log := base.With("node", f.name)
	stopProfile, err := startCPUProfile(f.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	st, err := f.store.openWaiting(ctx, log)
	if err != nil {
		return err
	}
	defer st.Close()

	hv, closeHV, err := f.openHypervisor(ctx, log)
	if err != nil {
		return err
	}
	defer closeHV()
	var wd node.Watchdog
	if f.watchdog && f.hypervisor == "sim" {
		wd, _ = hv.(node.Watchdog)
	}
	storage, err := f.storage.options(log)
	if err != nil {
		return err
	}
	podNetwork, err := f.network.options(f.name, f.hypervisor, log)
	if err != nil {
		return err
	}
	endpoint, err := f.endpoint.endpoint(ctx, f.name)
	if err != nil {
		return err
	}
	// The one assembly of a node process (cluster.NewNodeProcess): the
	// agent's event recorder and its retries, the import worker, the pod
	// network, the simulated host's migration listener, the endpoint.
	proc, err := cluster.NewNodeProcess(ctx, cluster.NodeProcessOptions{
		Node: cluster.NodeOptions{
			Agent: node.Options{
				NodeName:   f.name,
				Store:      st,
				Hypervisor: hv,
				Domain: domain.Options{Type: f.domainType, RuntimeDir: f.runtimeDir,
					HostPaths:      domain.HostPathPolicy{Allow: f.allowHostPaths},
					ContainerPaths: domain.HostPathPolicy{Allow: f.allowContainerDir}},
				HeartbeatInterval: f.heartbeatInterval,
				FenceTimeout:      f.fenceTimeout,
				Watchdog:          wd,
				StatusInterval:    f.statusInterval,
				Workers:           f.workers,
				Migration:         migOpts,
				Logger:            base,
			},
			GuestAgent: node.GuestAgentSourceOptions{Logger: log},
		},
		Storage:            storage,
		PodNetwork:         podNetwork,
		Endpoint:           endpoint,
		MarkStoppedTimeout: markStoppedTimeout,
	})
	if err != nil {
		if endpoint != nil {
			_ = endpoint.Listener.Close()
		}
		return f.storage.explain(err)
	}
	defer proc.Close()
	agent := proc.Agent()
	if f.metricsAddr != "" {
		reg := prometheus.NewRegistry()
		if err := wire.RegisterNode(reg, st, agent, hv, metrics.Options{}); err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		if err := registerNodeSafety(reg, agent); err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		wdInfo, _ := wd.(watchdogInfo)
		stopMetrics, err := serveMetrics(ctx, f.metricsAddr, reg, stderr,
			route{path: hostDomainsPath, handler: hostDomainsHandler(agent, wdInfo)})
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	if f.simFaultsAddr != "" {
		sh := simHostOf(hv)
		if sh == nil {
			return fmt.Errorf("%w: the hypervisor is not the simulator", errSimFaultsFlag)
		}
		stopFaults, err := serveSimFaults(ctx, f.simFaultsAddr, sh, agent, log, stderr)
		if err != nil {
			return err
		}
		defer stopFaults()
	}
	log.Info("node agent starting", "hypervisor", f.hypervisor, "store", f.store.store,
		"fenceTimeout", fenceTimeoutText(f.fenceTimeout, f.heartbeatInterval), "watchdog", wd != nil)
	if wd == nil && f.fenceTimeout >= 0 {
		log.Warn("no host watchdog: the guests of a frozen or killed node agent keep running; only a live agent fences them")
	}
	return proc.Run(ctx)
}

func (f *nodeFlags) openHypervisor(ctx context.Context, log *slog.Logger) (hypervisor.Hypervisor, func(), error) {
	switch f.hypervisor {
	case "sim":
		o := sim.Options{Name: f.name, CPUs: f.simCPUs, Logger: log}
		if f.simMemory != "" {
			q, err := resource.ParseQuantity(f.simMemory)
			if err != nil || q.Sign() <= 0 {
				return nil, nil, fmt.Errorf("--sim-memory: %q is not a positive quantity", f.simMemory)
			}
			o.MemoryBytes = uint64(q.Value())
		}
		h := sim.New(o)
		if f.simState == "" {
			return h, func() {}, nil
		}
		p, err := sim.OpenPersistent(ctx, h, f.simState)
		if err != nil {
			return nil, nil, fmt.Errorf("--sim-state: %w", err)
		}
		return p, func() {}, nil
	case "libvirt":
		if f.simState != "" {
			return nil, nil, errors.New("--sim-state: only with --hypervisor sim")
		}
		h, err := libvirt.New(ctx, libvirt.Options{URI: f.uri, Logger: log})
		if err != nil {
			return nil, nil, fmt.Errorf("--hypervisor libvirt --uri %s: %w", f.uri, err)
		}
		return h, func() { _ = h.Close() }, nil
	}
	return nil, nil, fmt.Errorf("--hypervisor: want sim or libvirt, got %q", f.hypervisor)
}

// newLogger writes text logs at the given level.
func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// fenceTimeoutText is the effective fence timeout, for the start-up log.
func fenceTimeoutText(fence, heartbeat time.Duration) string {
	switch {
	case fence < 0:
		return "off"
	case fence == 0:
		return node.DefaultFenceTimeout(heartbeat).String()
	}
	return fence.String()
}
