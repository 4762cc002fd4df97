package main

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/virtkit/virtkit/node"
)

// hostDomainsPath serves what a node's hypervisor really runs, read
// straight from it: the observation point for fault-injection tests.
const hostDomainsPath = "/debug/domains"

// hostDomainsTimeout bounds one read of the host.
const hostDomainsTimeout = 5 * time.Second

// watchdogInfo describes a host watchdog, when there is one.
type watchdogInfo interface {
	WatchdogDeadline() (time.Time, bool)
	WatchdogFired() uint64
}

// hostDomainsReply is the JSON document at hostDomainsPath.
type hostDomainsReply struct {
	Node string `json:"node"`
	// Time is when the host was read.
	Time    time.Time         `json:"time"`
	Domains []node.HostDomain `json:"domains"`
	// Fenced is true while the agent is fenced; Fences counts fences.
	Fenced   bool                 `json:"fenced"`
	Fences   uint64               `json:"fences"`
	Foreign  []node.ForeignDomain `json:"foreign"`
	Watchdog *watchdogReply       `json:"watchdog,omitempty"`
}

type watchdogReply struct {
	Armed    bool       `json:"armed"`
	Deadline *time.Time `json:"deadline,omitempty"`
	Fired    uint64     `json:"fired"`
}

func hostDomainsHandler(agent *node.Agent, wd watchdogInfo) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), hostDomainsTimeout)
		defer cancel()
		doms, err := agent.HostDomains(ctx)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		rep := hostDomainsReply{Node: agent.Name(), Time: time.Now().UTC(), Domains: doms,
			Fenced: agent.Fenced(), Fences: agent.Fences(), Foreign: agent.ForeignDomains()}
		if wd != nil {
			deadline, armed := wd.WatchdogDeadline()
			rep.Watchdog = &watchdogReply{Armed: armed, Fired: wd.WatchdogFired()}
			if armed {
				rep.Watchdog.Deadline = &deadline
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep)
	})
}

// registerNodeSafety exports the agent's fencing and ownership state.
func registerNodeSafety(reg prometheus.Registerer, agent *node.Agent) error {
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "virtkit_node_fenced",
			Help: "1 while the node agent is fenced: it could not renew its heartbeat within its fence timeout and stopped its guests."},
			func() float64 {
				if agent.Fenced() {
					return 1
				}
				return 0
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "virtkit_node_fences_total",
			Help: "Times the node agent fenced itself."},
			func() float64 { return float64(agent.Fences()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "virtkit_node_foreign_domains",
			Help: "Domains on the host the node agent does not own and leaves alone (no virtkit metadata for this node)."},
			func() float64 { return float64(len(agent.ForeignDomains())) }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
