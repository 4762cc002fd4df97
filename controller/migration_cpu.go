package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/scheduler"
)

// cpuRequirement is what a migration target must offer for the VMI's CPU:
// node labels (all required, as a nodeSelector) and why, for the message
// when no node has them.
type cpuRequirement struct {
	labels map[string]string
	why    string
}

// migrationCPURequirement derives the target's CPU requirement from the
// VMI's cpu model and the source node's published CPU (KubeVirt's rules):
//
//   - host-model (the default): the target must be able to run the model
//     host-model expanded to on the source
//     (cpu-model-migration.node.kubevirt.io/<source's host model>);
//   - host-passthrough: the target's host CPU must be identical to the
//     source's (the same node.virtkit.io/host-cpu-signature);
//   - a named model: the target must support it for migration
//     (cpu-model-migration.node.kubevirt.io/<model>).
//
// A source node that does not publish its CPU (no
// node.virtkit.io/host-cpu-source label: a hypervisor that cannot describe
// its CPU, or a Node written by hand) adds no requirement, so clusters
// without CPU labels migrate as before. A host-model or host-passthrough
// VMI on a source that publishes its CPU but lacks the label needed gets
// an error: there is no way to tell which targets are safe.
func migrationCPURequirement(vmi *virtkit.VirtualMachineInstance, source *virtkit.Node) (cpuRequirement, error) {
	if source == nil || source.Labels[virtkit.HostCPUSourceLabel] == "" {
		return cpuRequirement{}, nil
	}
	model := ""
	if c := vmi.Spec.Domain.CPU; c != nil {
		model = c.Model
	}
	switch model {
	case "", virtkit.CPUModeHostModel:
		var hostModels []string
		for k := range source.Labels {
			if m, ok := strings.CutPrefix(k, virtkit.HostModelCPULabelPrefix); ok && m != "" {
				hostModels = append(hostModels, m)
			}
		}
		if len(hostModels) == 0 {
			return cpuRequirement{}, fmt.Errorf("source node %s publishes no host-model CPU label (%s<model>)", source.Name, virtkit.HostModelCPULabelPrefix)
		}
		sort.Strings(hostModels)
		hm := hostModels[0]
		key := virtkit.CPUModelMigrationLabelPrefix + hm
		return cpuRequirement{
			labels: map[string]string{key: "true"},
			why:    fmt.Sprintf("cpu model host-model is %s on source node %s: a target needs label %s=true", hm, source.Name, key),
		}, nil
	case virtkit.CPUModeHostPassthrough:
		sig := source.Labels[virtkit.HostCPUSignatureLabel]
		if sig == "" {
			return cpuRequirement{}, fmt.Errorf("source node %s publishes no host CPU signature (%s)", source.Name, virtkit.HostCPUSignatureLabel)
		}
		return cpuRequirement{
			labels: map[string]string{virtkit.HostCPUSignatureLabel: sig},
			why: fmt.Sprintf("cpu model host-passthrough needs the source's exact host CPU: a target needs label %s=%s like source node %s",
				virtkit.HostCPUSignatureLabel, sig, source.Name),
		}, nil
	default:
		key := virtkit.CPUModelMigrationLabelPrefix + model
		return cpuRequirement{
			labels: map[string]string{key: "true"},
			why:    fmt.Sprintf("cpu model %s: a target needs label %s=true", model, key),
		}, nil
	}
}

// matches reports whether node n has every required label.
func (c cpuRequirement) matches(n *virtkit.Node) bool {
	for k, v := range c.labels {
		if n.Labels[k] != v {
			return false
		}
	}
	return true
}

// apply adds the requirement to the target template's nodeSelector.
func (c cpuRequirement) apply(t *virtkit.VirtualMachineInstance) {
	if len(c.labels) == 0 {
		return
	}
	sel := make(map[string]string, len(t.Spec.NodeSelector)+len(c.labels))
	for k, v := range t.Spec.NodeSelector {
		sel[k] = v
	}
	for k, v := range c.labels {
		sel[k] = v
	}
	t.Spec.NodeSelector = sel
}

// scheduleTarget asks the Scheduler for a target among candidates with the
// CPU requirement added to the target template; when no candidate offers
// the source's CPU it fails with ErrUnschedulable and says why, without
// asking the Scheduler.
func (r *MigrationReconciler) scheduleTarget(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance,
	srcNode *virtkit.Node, src string, candidates []virtkit.Node, placed []*virtkit.VirtualMachineInstance) (string, error) {
	req, err := migrationCPURequirement(vmi, srcNode)
	if err != nil {
		return "", fmt.Errorf("%w: no CPU-compatible target: %v", scheduler.ErrUnschedulable, err)
	}
	if len(req.labels) > 0 && !slices.ContainsFunc(candidates, func(n virtkit.Node) bool { return req.matches(&n) }) {
		return "", fmt.Errorf("%w: no node offers a CPU compatible with the source's (%d other node(s)): %s", scheduler.ErrUnschedulable, len(candidates), req.why)
	}
	sel, err := clusterNodeSelectors(ctx, r.o.Store)
	if err != nil {
		return "", err
	}
	t := withNodeSelectors(targetTemplate(vmi, mig, src), sel)
	req.apply(t)
	return r.o.Scheduler.Schedule(ctx, t, candidates, placed)
}
