package metrics

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/virtkit/virtkit/cluster"
)

// RegisterCluster registers a [DomainCollector] over every node of c and a
// [ControlPlaneCollector] over its store and controllers (the built-in
// ones and each node agent's) into reg. The node agents' migration
// snapshots supply the migration-job and engine series ([AgentMigrations]).
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
	if err := reg.Register(dom); err != nil {
		return fmt.Errorf("registering the domain collector: %w", err)
	}
	if err := reg.Register(cp); err != nil {
		reg.Unregister(dom)
		return fmt.Errorf("registering the control-plane collector: %w", err)
	}
	return nil
}

func clusterCollectors(c *cluster.Cluster, opts Options) (*DomainCollector, *ControlPlaneCollector, error) {
	ds := DomainSources{Objects: c.Store()}
	cs := ControlPlaneSources{Objects: c.Store(), EngineFromStatus: true}
	for _, ctrl := range c.Controllers() {
		cs.Controllers = append(cs.Controllers, ctrl)
	}
	for _, n := range c.Nodes() {
		ns := NodeSource{Name: n.Name, Domains: n.Hypervisor}
		if n.Agent != nil {
			ns.Guest = n.Agent
			cs.Controllers = append(cs.Controllers, n.Agent.Controller())
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
