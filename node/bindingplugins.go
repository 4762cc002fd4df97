package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/store"
)

// domainOptions returns the domain builder's options for vmi: the
// agent's, with the network binding plugins of the KubeVirt object
// (kubevirt/kubevirt) when an interface of vmi names a plugin and the
// agent's options register none themselves.
func (a *Agent) domainOptions(ctx context.Context, vmi *virtkit.VirtualMachineInstance) (domain.Options, error) {
	opts := a.opts.Domain
	if opts.BindingPlugins != nil || !usesBindingPlugin(vmi) {
		return opts, nil
	}
	kv := &virtkit.KubeVirt{}
	err := a.opts.Store.Get(ctx, store.Key{Namespace: virtkit.DefaultKubeVirtNamespace, Name: virtkit.DefaultKubeVirtName}, kv)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return opts, nil // KubeVirt's default configuration registers no plugins
	case err != nil:
		return opts, fmt.Errorf("reading the network binding plugins of the KubeVirt configuration: %w", err)
	}
	if nc := kv.Spec.Configuration.NetworkConfiguration; nc != nil {
		opts.BindingPlugins = nc.Binding
	}
	return opts, nil
}

func usesBindingPlugin(vmi *virtkit.VirtualMachineInstance) bool {
	for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
		if iface.Binding != nil {
			return true
		}
	}
	return false
}
