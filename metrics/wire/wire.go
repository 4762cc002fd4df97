package wire

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/reconcile"
)

// RegisterCluster registers a [metrics.DomainCollector] over every node of c and a
// [metrics.ControlPlaneCollector] over its store and controllers (the built-in
// ones and each node agent's) into reg. The node agents' migration
// snapshots supply the migration-job and engine series ([AgentMigrations]).
// A store that reports corrupt values ([metrics.CorruptObjectSource], as the etcd
// store does) also gets a [StoreCollector], and an [metrics.InstrumentedStore] is
// registered as its own collector.
func RegisterCluster(reg prometheus.Registerer, c *cluster.Cluster, opts metrics.Options) error {
	if reg == nil {
		return fmt.Errorf("%w: RegisterCluster: nil Registerer", errInvalidOptions)
	}
	if c == nil {
		return fmt.Errorf("%w: RegisterCluster: nil Cluster", errInvalidOptions)
	}
	dom, cp, err := clusterCollectors(c, opts, nil, false)
	if err != nil {
		return err
	}
	return registerAll(reg, withStore(c.Store(), opts, dom, cp)...)
}

// ClusterHandler serves what RegisterCluster registers, with the per-VMI
// domain and object families streamed ([metrics.NewHandler],
// [metrics.DomainCollector.WriteText], [metrics.ControlPlaneCollector.WriteText])
// rather than gathered: the control-plane collector goes into a registry
// of the handler's own. Scraping thousands of VMIs costs a fraction of
// Handler over a registry holding both collectors.
func ClusterHandler(c *cluster.Cluster, opts metrics.Options) (http.Handler, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: ClusterHandler: nil Cluster", errInvalidOptions)
	}
	dom, cp, err := clusterCollectors(c, opts, nil, true)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	if err := registerAll(reg, withStore(c.Store(), opts, cp)...); err != nil {
		return nil, err
	}
	return metrics.NewHandler(reg, dom, cp), nil
}

// StartClusterHandler is [ClusterHandler] with the control-plane
// collector watching VMIs and migrations until ctx ends
// ([metrics.ControlPlaneCollector.Start]), so phase transitions between scrapes
// are counted too, and the domain collector reading the VMIs from a
// [metrics.VMIIndex] fed by a read-only watch instead of copying them from
// the store at every scrape.
func StartClusterHandler(ctx context.Context, c *cluster.Cluster, opts metrics.Options) (http.Handler, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: StartClusterHandler: nil Cluster", errInvalidOptions)
	}
	vmis, err := metrics.NewVMIIndex(c.Store(), nil, opts)
	if err != nil {
		return nil, err
	}
	dom, cp, err := clusterCollectors(c, opts, vmis, true)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	if err := registerAll(reg, withStore(c.Store(), opts, cp)...); err != nil {
		return nil, err
	}
	go func() { _ = vmis.Start(ctx) }()
	go func() {
		if err := cp.Start(ctx); err != nil && opts.Logger != nil {
			opts.Logger.Warn("metrics: control-plane watch", "error", err)
		}
	}()
	return metrics.NewHandler(reg, dom, cp), nil
}

// RegisterNode registers what one node agent's process exports, as
// KubeVirt's virt-handler does: a [metrics.DomainCollector] over the VMIs placed
// on agent's node (read from objects) with hv's domain statistics, the
// agent's guest filesystems and migrations, and the agent's own work
// queue and reconcile statistics. hv must be the agent's hypervisor.
// A store that reports corrupt values ([metrics.CorruptObjectSource], as the etcd
// store does) also gets a [StoreCollector].
func RegisterNode(reg prometheus.Registerer, objects metrics.ObjectLister, agent *node.Agent, hv hypervisor.Hypervisor, opts metrics.Options) error {
	switch {
	case reg == nil:
		return fmt.Errorf("%w: RegisterNode: nil Registerer", errInvalidOptions)
	case agent == nil:
		return fmt.Errorf("%w: RegisterNode: nil Agent", errInvalidOptions)
	case hv == nil:
		return fmt.Errorf("%w: RegisterNode: nil Hypervisor", errInvalidOptions)
	}
	dom, err := metrics.NewDomainCollector(metrics.DomainSources{Objects: objects, Nodes: []metrics.NodeSource{{
		Name: agent.Name(), Domains: hv, Guest: Guest(agent), Migrations: AgentMigrations(agent),
	}}, LabelSelector: labels.SelectorFromSet(labels.Set{virtkit.NodeNameLabel: agent.Name()})}, opts)
	if err != nil {
		return err
	}
	ctrl, err := metrics.NewControlPlaneCollector(metrics.ControlPlaneSources{Controllers: []metrics.StatsProvider{Controller(agent.Controller())},
		Handlers: []metrics.HandlerStatus{agentStatus(agent)}}, opts)
	if err != nil {
		return err
	}
	return registerAll(reg, withStore(objects, opts, dom, ctrl)...)
}

// RegisterControlPlane registers a [metrics.ControlPlaneCollector] over objects
// and the controllers, as KubeVirt's virt-controller exports them. Use it
// next to per-node [RegisterNode] endpoints; engine metrics then come from
// the nodes' live migrations, not from status.
// A store that reports corrupt values ([metrics.CorruptObjectSource], as the etcd
// store does) also gets a [StoreCollector].
func RegisterControlPlane(reg prometheus.Registerer, objects metrics.ObjectLister, controllers []*reconcile.Controller, opts metrics.Options) error {
	if reg == nil {
		return fmt.Errorf("%w: RegisterControlPlane: nil Registerer", errInvalidOptions)
	}
	src := metrics.ControlPlaneSources{Objects: objects}
	if objects == nil {
		return fmt.Errorf("%w: RegisterControlPlane: nil objects", errInvalidOptions)
	}
	for _, c := range controllers {
		src.Controllers = append(src.Controllers, Controller(c))
		src.ControlPlane = append(src.ControlPlane, Controller(c))
	}
	cp, err := metrics.NewControlPlaneCollector(src, opts)
	if err != nil {
		return err
	}
	return registerAll(reg, withStore(objects, opts, cp)...)
}

// withStore appends a [StoreCollector] when objects is a store that can
// report corrupt values ([metrics.CorruptObjectSource]).
func withStore(objects any, opts metrics.Options, cs ...prometheus.Collector) []prometheus.Collector {
	if is, ok := objects.(*metrics.InstrumentedStore); ok && is != nil {
		cs = append(cs, is)
		objects = is.Store()
	}
	if src, ok := objects.(metrics.CorruptObjectSource); ok && src != nil {
		if sc, err := metrics.NewStoreCollector(src, opts); err == nil {
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

// clusterCollectors builds the cluster's collectors; vmis, when not nil,
// feeds both collectors' VMIs; stream has the control-plane collector
// stream its per-VMI families (for metrics.NewHandler).
func clusterCollectors(c *cluster.Cluster, opts metrics.Options, vmis metrics.VMIRanger, stream bool) (*metrics.DomainCollector, *metrics.ControlPlaneCollector, error) {
	ds := metrics.DomainSources{Objects: c.Store(), VMIs: vmis}
	cs := metrics.ControlPlaneSources{Objects: c.Store(), VMIs: vmis, EngineFromStatus: true, StreamVMIFamilies: stream}
	for _, ctrl := range c.Controllers() {
		cs.Controllers = append(cs.Controllers, Controller(ctrl))
		cs.ControlPlane = append(cs.ControlPlane, Controller(ctrl))
	}
	for _, n := range c.Nodes() {
		ns := metrics.NodeSource{Name: n.Name, Domains: n.Hypervisor}
		if n.Agent != nil {
			ns.Guest = Guest(n.Agent)
			cs.Controllers = append(cs.Controllers, Controller(n.Agent.Controller()))
			cs.Handlers = append(cs.Handlers, agentStatus(n.Agent))
			ns.Migrations = AgentMigrations(n.Agent)
			cs.EngineFromStatus = false
		}
		ds.Nodes = append(ds.Nodes, ns)
	}
	dom, err := metrics.NewDomainCollector(ds, opts)
	if err != nil {
		return nil, nil, err
	}
	cp, err := metrics.NewControlPlaneCollector(cs, opts)
	if err != nil {
		return nil, nil, err
	}
	return dom, cp, nil
}

// errInvalidOptions wraps every configuration error of this package; it
// matches virtkit.ErrInvalidOptions.
var errInvalidOptions = virtkit.InvalidOptions("metrics")
