package node

import (
	"context"
	"errors"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
)

// cpuLabelPrefixes are the label prefixes the agent owns on its Node: it
// removes those it no longer publishes.
var cpuLabelPrefixes = []string{
	virtkit.CPUModelLabelPrefix, virtkit.CPUModelMigrationLabelPrefix,
	virtkit.HostModelCPULabelPrefix, virtkit.CPUVendorLabelPrefix,
}

// hostFact is what the agent asks its hypervisor once, as it does not
// change while the agent runs (the host CPU, the platform's launch
// security).
type hostFact[T any] struct {
	mu   sync.Mutex
	done bool
	v    T
}

// get returns the fact, asking read until it answers for good: read
// returns the value and whether it is final (a value, or "the hypervisor
// cannot tell"); after a passing failure (not final) it is asked again at
// the next call.
func (c *hostFact[T]) get(read func() (T, bool)) T {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return c.v
	}
	v, final := read()
	if final {
		c.v, c.done = v, true
	}
	return v
}

// cpuLabels returns the Node labels describing the host CPU, nil when the
// hypervisor cannot describe it (or could not this time: asked again at
// the next heartbeat).
func (a *Agent) cpuLabels(ctx context.Context) map[string]string {
	return a.hostCPU.get(func() (map[string]string, bool) {
		r, ok := a.opts.Hypervisor.(hypervisor.HostCPUReporter)
		if !ok {
			return nil, true
		}
		cpu, err := r.HostCPU(ctx)
		switch {
		case errors.Is(err, hypervisor.ErrNotSupported):
			a.log.Info("the hypervisor does not describe its CPU: no CPU labels, migrations from here are not CPU-filtered", "err", err)
			return nil, true
		case err != nil:
			a.log.Warn("reading the host CPU", "err", err)
			return nil, false
		}
		return hostCPULabels(cpu), true
	})
}

// hostCPULabels turns a host CPU description into Node labels; names that
// cannot be label keys are left out.
func hostCPULabels(cpu hypervisor.HostCPU) map[string]string {
	out := map[string]string{}
	add := func(prefix, name string) {
		key := prefix + name
		if name != "" && len(validation.IsQualifiedName(key)) == 0 {
			out[key] = "true"
		}
	}
	for _, m := range cpu.UsableModels {
		add(virtkit.CPUModelLabelPrefix, m)
		add(virtkit.CPUModelMigrationLabelPrefix, m)
	}
	add(virtkit.CPUModelMigrationLabelPrefix, cpu.HostModel)
	add(virtkit.HostModelCPULabelPrefix, cpu.HostModel)
	add(virtkit.CPUVendorLabelPrefix, cpu.Vendor)
	if cpu.Signature != "" && len(validation.IsValidLabelValue(cpu.Signature)) == 0 {
		out[virtkit.HostCPUSignatureLabel] = cpu.Signature
	}
	out[virtkit.HostCPUSourceLabel] = virtkit.HostCPUSourceHardware
	if cpu.Modelled {
		out[virtkit.HostCPUSourceLabel] = virtkit.HostCPUSourceModelled
	}
	return out
}

// applyCPULabels makes n's CPU labels exactly want (nil: leave them as they
// are, the CPU is unknown this time) and reports whether n changed.
func applyCPULabels(n *virtkit.Node, want map[string]string) bool {
	if want == nil {
		return false
	}
	changed := false
	for k := range n.Labels {
		if _, keep := want[k]; keep || !ownedCPULabel(k) {
			continue
		}
		delete(n.Labels, k)
		changed = true
	}
	for k, v := range want {
		if n.Labels[k] != v {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[k] = v
			changed = true
		}
	}
	return changed
}

func ownedCPULabel(k string) bool {
	if k == virtkit.HostCPUSignatureLabel || k == virtkit.HostCPUSourceLabel {
		return true
	}
	for _, p := range cpuLabelPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}
