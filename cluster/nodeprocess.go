package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"crypto/tls"

	"golang.org/x/sync/errgroup"

	"github.com/virtkit/virtkit/cdi/importer"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/network"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// DefaultMarkStoppedTimeout bounds the last write of a node process that
// is stopping: its Node marked not ready.
const DefaultMarkStoppedTimeout = 5 * time.Second

// NodeProcessOptions configure a host run on its own, apart from its
// control plane: what `virtkit node` runs. The zero value is a simulated
// host named node-1 on a memory store.
type NodeProcessOptions struct {
	// Node are the agent's options, completed as [NewNode] completes them.
	// Node.Agent.NodeName defaults to node-1, Node.Agent.Store to a
	// memory store and Node.Agent.Hypervisor to a simulated host of that
	// name. With Node.Events nil the agent and its import worker record
	// through a store-backed recorder whose retries of missed writes Run
	// runs.
	Node NodeOptions
	// Storage configures the node's DataVolume import worker and the
	// DataVolume volume resolver.
	Storage NodeStorageOptions
	// PodNetwork, when set, gives the VMIs on the pod network their own
	// addresses from the node's subnet (its Subnet, or one leased from
	// Range) and Run collects the leases of deleted VMIs. Host, when set,
	// is called with the node's name.
	PodNetwork *PodNetwork
	// Endpoint, when set, serves the agent's endpoint (console, VNC,
	// port-forward and guest information for the API server, and the
	// uploads the upload proxy forwards to the node's DataVolumes) while
	// Run runs.
	Endpoint *NodeEndpoint
	// MarkStoppedTimeout bounds the Node's last write when Run ends; 0 is
	// DefaultMarkStoppedTimeout.
	MarkStoppedTimeout time.Duration
}

// NodeEndpoint is where a node process serves its agent's endpoint.
type NodeEndpoint struct {
	// Listener accepts the API server's connections; required.
	Listener net.Listener
	// TLS is the endpoint's mutual TLS configuration
	// (node.EndpointTLSConfig); required.
	TLS *tls.Config
	// URL is the endpoint's address as the API server reaches it,
	// published on the Node; required.
	URL string
	// Options tune the endpoint.
	Options node.EndpointOptions
}

// NodeProcess is a host run on its own: its node agent and what runs
// beside it (the import worker, the event recorder's retries, the pod
// network's lease collector, the simulated host's migration listener, the
// endpoint). Build it with [NewNodeProcess] and run it with Run.
type NodeProcess struct {
	opts      NodeProcessOptions
	agent     *node.Agent
	recorder  *events.Recorder
	importer  *reconcile.Controller
	uploads   *importer.Worker
	ipam      *network.IPAM
	migration *sim.MigrationListener
	log       *slog.Logger
	closeOnce sync.Once
}

// NewNodeProcess builds a host's node agent and what runs beside it. It
// opens the simulated host's migration listener (when the hypervisor is
// simulated and the agent's migration URI is a tcp://HOST:PORT address,
// the agent then publishing the address it really listens on) and sets up
// the pod network (a leased subnet, the host's bridge); ctx bounds that
// work. Nothing else runs until Run; Close releases a process never run.
func NewNodeProcess(ctx context.Context, o NodeProcessOptions) (*NodeProcess, error) {
	if o.MarkStoppedTimeout <= 0 {
		o.MarkStoppedTimeout = DefaultMarkStoppedTimeout
	}
	p := &NodeProcess{opts: o}
	no := &p.opts.Node.Agent
	if no.NodeName == "" {
		no.NodeName = "node-1"
	}
	if no.Logger == nil {
		no.Logger = slog.New(slog.DiscardHandler)
	}
	if no.Store == nil {
		st, err := store.NewMemoryWithOptions(store.Options{Clock: no.Clock})
		if err != nil {
			return nil, err
		}
		no.Store = st
	}
	if no.Hypervisor == nil {
		no.Hypervisor = sim.New(sim.Options{Name: no.NodeName, Clock: simClock(no.Clock), Logger: no.Logger})
	}
	p.log = no.Logger.With("node", no.NodeName)
	rec, err := nodeObservability(no, o.Node.Events, o.Node.TracerProvider)
	if err != nil {
		return nil, err
	}
	p.recorder = rec
	if p.importer, p.uploads, err = o.Storage.setUp(no, p.log); err != nil {
		return nil, err
	}
	if pn := o.PodNetwork; pn != nil && no.Domain.NetworkResolver == nil {
		r, err := pn.resolver(ctx, no.Store, no.NodeName)
		if err != nil {
			return nil, err
		}
		no.Domain.NetworkResolver = r
		p.ipam = &network.IPAM{Store: no.Store}
	}
	if err := p.listenMigrations(ctx); err != nil {
		return nil, err
	}
	if p.agent, err = NewNode(p.opts.Node); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// listenMigrations opens a simulated host's listener for migrations from
// other processes, on the data URI, else the URI, of the agent's
// migration options, when that is a tcp://HOST:PORT address, and puts the
// address it listens on in their place.
func (p *NodeProcess) listenMigrations(ctx context.Context) error {
	mo := &p.opts.Node.Agent.Migration
	var h *sim.Host
	switch v := p.opts.Node.Agent.Hypervisor.(type) {
	case *sim.Host:
		h = v
	case *sim.Persistent:
		h = v.Unwrap()
	default:
		return nil
	}
	field, listen := "URI", mo.URI
	if mo.DataURI != "" {
		field, listen = "DataURI", mo.DataURI
	}
	if listen == "" || mo.Unsupported != "" {
		return nil
	}
	if _, err := sim.ParseMigrationAddress(listen); err != nil {
		return fmt.Errorf("%w: Node.Agent.Migration.%s %q: a simulated host listens on tcp://HOST:PORT: %w", errInvalidOptions, field, listen, err)
	}
	l, err := sim.ListenMigration(ctx, h, listen, sim.ListenOptions{Logger: p.log})
	if err != nil {
		return fmt.Errorf("Node.Agent.Migration.%s %s: %w", field, listen, err)
	}
	if mo.DataURI != "" {
		mo.DataURI = l.URI()
	} else {
		mo.URI = l.URI()
	}
	p.migration = l
	p.log.Info("listening for incoming migrations", "address", l.URI())
	return nil
}

// Agent is the process's node agent.
func (p *NodeProcess) Agent() *node.Agent { return p.agent }

// Options are the options the process was built with, completed
// (defaults, the migration addresses it listens on).
func (p *NodeProcess) Options() NodeProcessOptions { return p.opts }

// Close releases what NewNodeProcess opened (the migration listener); Run
// closes it when it returns.
func (p *NodeProcess) Close() {
	p.closeOnce.Do(func() {
		if p.migration != nil {
			_ = p.migration.Close()
		}
	})
}

// Run runs the node agent and everything beside it until ctx ends or the
// agent fails, then marks the Node stopped (not ready, reason
// AgentStopped; its guests keep running) within MarkStoppedTimeout and
// waits for everything to stop. It returns nil when ctx ended, else the
// agent's error.
func (p *NodeProcess) Run(ctx context.Context) error {
	defer p.Close()
	bctx, stop := context.WithCancel(ctx)
	g, gctx := errgroup.WithContext(bctx)
	if p.recorder != nil {
		g.Go(func() error {
			if err := p.recorder.Start(gctx); err != nil && gctx.Err() == nil {
				p.log.Error("event recorder stopped", "err", err)
			}
			return nil
		})
	}
	if p.importer != nil {
		g.Go(func() error {
			if err := p.importer.Start(gctx); err != nil && gctx.Err() == nil {
				p.log.Error("import worker stopped", "err", err)
			}
			return nil
		})
	}
	if p.ipam != nil {
		interval := p.opts.PodNetwork.CollectInterval
		g.Go(func() error {
			_ = p.ipam.RunCollector(gctx, network.CollectorOptions{Interval: interval, Logger: p.log})
			return nil
		})
	}
	if p.migration != nil {
		g.Go(func() error {
			if err := p.migration.Serve(gctx); err != nil && gctx.Err() == nil {
				p.log.Error("migration listener stopped", "err", err)
			}
			return nil
		})
	}
	if e := p.opts.Endpoint; e != nil {
		eo := e.Options
		if eo.Uploads == nil && p.uploads != nil {
			// The node's upload server: the proxy forwards the uploads
			// to this node's DataVolumes here.
			eo.Uploads = p.uploads
		}
		ep := p.agent.Endpoint(eo)
		g.Go(func() error {
			if err := ep.Serve(gctx, e.Listener, e.TLS, e.URL); err != nil && gctx.Err() == nil {
				p.log.Error("node endpoint", "err", err)
			}
			return nil
		})
		p.log.Info("node endpoint listening", "url", e.URL)
	}
	runErr := p.agent.Start(ctx)
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.opts.MarkStoppedTimeout)
	defer cancel()
	if err := p.agent.MarkStopped(mctx); err != nil {
		p.log.Warn("marking the node stopped", "err", err)
	} else {
		p.log.Info("node agent stopped; Node marked not ready")
	}
	stop()
	_ = g.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return runErr
}
