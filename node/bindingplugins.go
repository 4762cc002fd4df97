package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/store"
)

// domainOptions returns the domain builder's options for vmi: the
// agent's, with the network binding plugins of the KubeVirt object
// (kubevirt/kubevirt) when an interface of vmi names a plugin and the
// agent's options register none themselves. A VMI with containerPath
// volumes while the configuration leaves the ContainerPathVolumes gate
// off is refused with an error wrapping domain.ErrUnsupported naming the
// volume, as KubeVirt does not start it either.
func (a *Agent) domainOptions(ctx context.Context, vmi *virtkit.VirtualMachineInstance) (domain.Options, error) {
	opts := a.opts.Domain
	if vmi.Spec.Domain.LaunchSecurity != nil {
		ls, err := a.launchSecurity(ctx)
		if err != nil {
			return opts, err
		}
		opts.LaunchSecurity = ls
	}
	plugins := opts.BindingPlugins == nil && usesBindingPlugin(vmi)
	containerPath := containerPathVolume(vmi)
	if !plugins && containerPath < 0 {
		return opts, nil
	}
	cfg, err := a.kubeVirtConfiguration(ctx)
	if err != nil {
		return opts, err
	}
	if containerPath >= 0 && !cfg.FeatureGates().IsEnabled(virtkit.FeatureGateContainerPathVolumes) {
		return opts, fmt.Errorf("spec.volumes[%d].containerPath: VMI has ContainerPath volumes but the %s feature gate is disabled: %w",
			containerPath, virtkit.FeatureGateContainerPathVolumes, domain.ErrUnsupported)
	}
	if nc := cfg.NetworkConfiguration; plugins && nc != nil {
		opts.BindingPlugins = nc.Binding
	}
	return opts, nil
}

// launchSecurity is what this node's platform offers confidential
// guests: what its hypervisor reports, or, where the hypervisor cannot
// tell (a simulator that models no platform), the capability labels the
// node was given (kubevirt.io/sev, kubevirt.io/sev-es,
// kubevirt.io/sev-snp, kubevirt.io/tdx). A node labelled capable whose
// hypervisor reports no such platform builds no confidential domain: the
// VMI fails with a condition naming spec.domain.launchSecurity.
func (a *Agent) launchSecurity(ctx context.Context) (domain.LaunchSecurity, error) {
	if r, ok := a.opts.Hypervisor.(hypervisor.LaunchSecurityReporter); ok {
		ls, err := r.LaunchSecurity(ctx)
		switch {
		case err == nil:
			return domain.LaunchSecurity{SEV: ls.SEV, SEVES: ls.SEVES, SNP: ls.SNP, TDX: ls.TDX, CBitPos: ls.CBitPos, ReducedPhysBits: ls.ReducedPhysBits}, nil
		case !errors.Is(err, hypervisor.ErrNotSupported):
			return domain.LaunchSecurity{}, fmt.Errorf("reading the host's launch security: %w", err)
		}
	}
	has := func(k string) bool { _, ok := a.opts.Labels[k]; return ok }
	return domain.LaunchSecurity{SEV: has(virtkit.SEVLabel), SEVES: has(virtkit.SEVESLabel), SNP: has(virtkit.SEVSNPLabel), TDX: has(virtkit.TDXLabel)}, nil
}

// kubeVirtConfiguration reads the KubeVirt object's configuration;
// without one the cluster has KubeVirt's default configuration.
func (a *Agent) kubeVirtConfiguration(ctx context.Context) (*virtkit.KubeVirtConfiguration, error) {
	kv := &virtkit.KubeVirt{}
	err := a.opts.Store.Get(ctx, store.Key{Namespace: virtkit.DefaultKubeVirtNamespace, Name: virtkit.DefaultKubeVirtName}, kv)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return &virtkit.KubeVirtConfiguration{}, nil
	case err != nil:
		return nil, fmt.Errorf("reading the KubeVirt configuration: %w", err)
	}
	return &kv.Spec.Configuration, nil
}

func usesBindingPlugin(vmi *virtkit.VirtualMachineInstance) bool {
	for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
		if iface.Binding != nil {
			return true
		}
	}
	return false
}

// containerPathVolume is the index of vmi's first containerPath volume, or
// -1.
func containerPathVolume(vmi *virtkit.VirtualMachineInstance) int {
	for i, v := range vmi.Spec.Volumes {
		if v.ContainerPath != nil {
			return i
		}
	}
	return -1
}
