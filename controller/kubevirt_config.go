package controller

import (
	"context"
	"errors"
	"maps"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// clusterKubeVirt reads the cluster's KubeVirt object (kubevirt in
// namespace kubevirt); found is false when there is none.
func clusterKubeVirt(ctx context.Context, st interface {
	Get(context.Context, store.Key, virtkit.Object) error
}) (kv *virtkit.KubeVirt, found bool, err error) {
	kv = &virtkit.KubeVirt{}
	err = st.Get(ctx, store.Key{Namespace: virtkit.DefaultKubeVirtNamespace, Name: virtkit.DefaultKubeVirtName}, kv)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return kv, true, nil
}

// clusterNodeSelectors returns the developerConfiguration.nodeSelectors of
// the cluster's KubeVirt object; none when there is no such object.
func clusterNodeSelectors(ctx context.Context, st interface {
	Get(context.Context, store.Key, virtkit.Object) error
}) (map[string]string, error) {
	kv, found, err := clusterKubeVirt(ctx, st)
	if err != nil || !found {
		return nil, err
	}
	if d := kv.Spec.Configuration.DeveloperConfiguration; d != nil {
		return d.NodeSelectors, nil
	}
	return nil, nil
}

// withNodeSelectors returns what the scheduler places for vmi: vmi itself,
// or with the cluster's node selectors a copy whose node selector has
// them under its own (the VMI's own value wins for a key both name), as
// KubeVirt renders the node selector of a VMI's pod. The stored VMI is
// not changed.
func withNodeSelectors(vmi *virtkit.VirtualMachineInstance, cluster map[string]string) *virtkit.VirtualMachineInstance {
	if len(cluster) == 0 {
		return vmi
	}
	out := vmi.DeepCopy()
	sel := maps.Clone(cluster)
	maps.Copy(sel, vmi.Spec.NodeSelector)
	out.Spec.NodeSelector = sel
	return out
}
