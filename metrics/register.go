package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/node"
)

// RegisterCluster registers a [DomainCollector] over every node of c and a
// [ControlPlaneCollector] over its store and controllers (the built-in
// ones and each node agent's) into reg. The node agents' migration
// snapshots supply the migration-job and engine series ([AgentMigrations]).
// A store that reports corrupt values ([CorruptObjectSource], as the etcd
// store does) also gets a [StoreCollector], and an [InstrumentedStore] is
// registered as its own collector.
func RegisterCluster(reg prometheus.Registerer, c *cluster.Cluster, opts Options) error {
	if reg == nil {
		return fmt.Errorf("%w: RegisterCluster: nil Registerer", ErrInvalidOptions)
	}
	if c == nil {
		return fmt.Errorf("%w: RegisterCluster: nil Cluster", ErrInvalidOptions)
	}
	dom, cp, err := clusterCollectors(c, opts)
	if err != nil {
		return err
	}
	return registerAll(reg, withStore(c.Store(), opts, dom, cp)...)
}

// ClusterHandler serves what RegisterCluster registers, with the per-VMI
// domain families streamed ([NewHandler], [DomainCollector.WriteText])
// rather than gathered: the control-plane collector goes into a registry
// of the handler's own. Scraping thousands of VMIs costs a fraction of
// Handler over a registry holding both collectors.
func ClusterHandler(c *cluster.Cluster, opts Options) (http.Handler, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: ClusterHandler: nil Cluster", ErrInvalidOptions)
	}
	dom, cp, err := clusterCollectors(c, opts)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	if err := registerAll(reg, withStore(c.Store(), opts, cp)...); err != nil {
		return nil, err
	}
	return NewHandler(reg, dom), nil
}

// StartClusterHandler is [ClusterHandler] with the control-plane
// collector watching VMIs and migrations until ctx ends
// ([ControlPlaneCollector.Start]), so phase transitions between scrapes
// are counted too.
func StartClusterHandler(ctx context.Context, c *cluster.Cluster, opts Options) (http.Handler, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: StartClusterHandler: nil Cluster", ErrInvalidOptions)
	}
	dom, cp, err := clusterCollectors(c, opts)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	if err := registerAll(reg, withStore(c.Store(), opts, cp)...); err != nil {
		return nil, err
	}
	go func() {
		if err := cp.Start(ctx); err != nil {
			cp.log.Warn("metrics: control-plane watch", "error", err)
		}
	}()
	return NewHandler(reg, dom), nil
}

// RegisterNode registers what one node agent's process exports, as
// KubeVirt's virt-handler does: a [DomainCollector] over the VMIs placed
// on agent's node (read from objects) with hv's domain statistics, the
// agent's guest filesystems and migrations, and the agent's own work
// queue and reconcile statistics. hv must be the agent's hypervisor.
// A store that reports corrupt values ([CorruptObjectSource], as the etcd
// store does) also gets a [StoreCollector].
func RegisterNode(reg prometheus.Registerer, objects ObjectLister, agent *node.Agent, hv hypervisor.Hypervisor, opts Options) error {
	switch {
	case reg == nil:
		return fmt.Errorf("%w: RegisterNode: nil Registerer", ErrInvalidOptions)
	case agent == nil:
		return fmt.Errorf("%w: RegisterNode: nil Agent", ErrInvalidOptions)
	case hv == nil:
		return fmt.Errorf("%w: RegisterNode: nil Hypervisor", ErrInvalidOptions)
	}
	dom, err := NewDomainCollector(DomainSources{Objects: objects, Nodes: []NodeSource{{
		Name: agent.Name(), Domains: hv, Guest: agent, Migrations: AgentMigrations(agent),
	}}, LabelSelector: labels.SelectorFromSet(labels.Set{virtkit.NodeNameLabel: agent.Name()})}, opts)
	if err != nil {
		return err
	}
	ctrl, err := NewControlPlaneCollector(ControlPlaneSources{Controllers: []StatsProvider{agent.Controller()},
		Handlers: []HandlerStatus{agentStatus(agent)}}, opts)
	if err != nil {
		return err
	}
	return registerAll(reg, withStore(objects, opts, dom, ctrl)...)
}

// RegisterControlPlane registers a [ControlPlaneCollector] over objects
// and the controllers, as KubeVirt's virt-controller exports them. Use it
// next to per-node [RegisterNode] endpoints; engine metrics then come from
// the nodes' live migrations, not from status.
// A store that reports corrupt values ([CorruptObjectSource], as the etcd
// store does) also gets a [StoreCollector].
func RegisterControlPlane(reg prometheus.Registerer, objects ObjectLister, controllers []*controller.Controller, opts Options) error {
	if reg == nil {
		return fmt.Errorf("%w: RegisterControlPlane: nil Registerer", ErrInvalidOptions)
	}
	src := ControlPlaneSources{Objects: objects}
	if objects == nil {
		return fmt.Errorf("%w: RegisterControlPlane: nil objects", ErrInvalidOptions)
	}
	for _, c := range controllers {
		src.Controllers = append(src.Controllers, c)
		src.ControlPlane = append(src.ControlPlane, c)
	}
	cp, err := NewControlPlaneCollector(src, opts)
	if err != nil {
		return err
	}
	return registerAll(reg, withStore(objects, opts, cp)...)
}

// withStore appends a [StoreCollector] when objects is a store that can
// report corrupt values ([CorruptObjectSource]).
func withStore(objects any, opts Options, cs ...prometheus.Collector) []prometheus.Collector {
	if is, ok := objects.(*InstrumentedStore); ok && is != nil {
		cs = append(cs, is)
		objects = is.Store()
	}
	if src, ok := objects.(CorruptObjectSource); ok && src != nil {
		if sc, err := NewStoreCollector(src, opts); err == nil {
			cs = append(cs, sc)
		}
	}
	return cs
}

// registerAll registers every collector or, on the first failure, none.
func registerAll(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return fmt.Errorf("registering metrics collector: %w", err)
		}
	}
	return nil
}

func clusterCollectors(c *cluster.Cluster, opts Options) (*DomainCollector, *ControlPlaneCollector, error) {
	ds := DomainSources{Objects: c.Store()}
	cs := ControlPlaneSources{Objects: c.Store(), EngineFromStatus: true}
	for _, ctrl := range c.Controllers() {
		cs.Controllers = append(cs.Controllers, ctrl)
		cs.ControlPlane = append(cs.ControlPlane, ctrl)
	}
	for _, n := range c.Nodes() {
		ns := NodeSource{Name: n.Name, Domains: n.Hypervisor}
		if n.Agent != nil {
			ns.Guest = n.Agent
			cs.Controllers = append(cs.Controllers, n.Agent.Controller())
			cs.Handlers = append(cs.Handlers, agentStatus(n.Agent))
			ns.Migrations = AgentMigrations(n.Agent)
			cs.EngineFromStatus = false
		}
		ds.Nodes = append(ds.Nodes, ns)
	}
	dom, err := NewDomainCollector(ds, opts)
	if err != nil {
		return nil, nil, err
	}
	cp, err := NewControlPlaneCollector(cs, opts)
	if err != nil {
		return nil, nil, err
	}
	return dom, cp, nil
}

// Handler serves g in the Prometheus exposition format (content
// negotiation by promhttp). A collector error is logged by promhttp's
// defaults and the rest is served, so one bad series cannot blank the
// whole page.
func Handler(g prometheus.Gatherer) http.Handler {
	if g == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, errNilGatherer.Error(), http.StatusInternalServerError)
		})
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

var errNilGatherer = errors.New("metrics: Handler: nil Gatherer")

// agentStatus reports a node agent ready once its watch has listed the
// node's VMIs, while it is not fenced.
func agentStatus(a *node.Agent) HandlerStatus {
	return HandlerStatus{Node: a.Name(), Ready: func() bool {
		return a.Controller().Stats().Relists > 0 && !a.Fenced()
	}}
}
