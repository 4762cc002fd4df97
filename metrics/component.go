package metrics

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// modulePath is virtkit's module, whose version kubevirt_info reports.
const modulePath = "github.com/virtkit/virtkit"

// HandlerStatus is one node agent as kubevirt_virt_handler_ready_status
// reports it.
type HandlerStatus struct {
	// Node is the agent's node (the series' node label).
	Node string
	// Ready reports whether the agent serves its node: its watch has
	// listed the node's VMIs and it is not fenced.
	Ready func() bool
}

// version is virtkit's module version in the running binary: the main
// module's, or the dependency's when virtkit is imported, or "(devel)".
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	if bi.Main.Path == modulePath && bi.Main.Version != "" {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == modulePath {
			if d.Replace != nil && d.Replace.Version != "" {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "(devel)"
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// collectComponents writes kubevirt_info and the component status gauges.
// listed says whether this scrape's object listing succeeded (the API
// answered).
func (c *ControlPlaneCollector) collectComponents(ch chan<- prometheus.Metric, listed bool) {
	f := c.f
	send(ch, f.info, 1, runtime.Version(), c.version)
	if c.src.Objects != nil {
		send(ch, f.apiReady, boolValue(listed))
	}
	if len(c.src.ControlPlane) > 0 {
		ready := true
		for _, p := range c.src.ControlPlane {
			if p.Stats().Relists == 0 {
				ready = false
			}
		}
		send(ch, f.controllerReady, boolValue(ready))
		leading := ready
		if c.src.Leading != nil {
			leading = c.src.Leading()
		}
		send(ch, f.controllerLed, boolValue(leading))
	}
	for _, h := range c.src.Handlers {
		send(ch, f.handlerReady, boolValue(h.Ready != nil && h.Ready()), h.Node)
	}
}
