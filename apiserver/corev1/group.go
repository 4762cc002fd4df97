package corev1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// errInvalidOptions wraps every configuration error of this package; it
// matches virtkit.ErrInvalidOptions.
var errInvalidOptions = virtkit.InvalidOptions("core v1")

// Options are what the core v1 group is built from.
type Options struct {
	// RESTOptions gives the storage of the stored resources: namespaces,
	// configmaps, secrets and serviceaccounts. Required.
	RESTOptions generic.RESTOptionsGetter
	// Store is virtkit's store: it backs the views (nodes, pods,
	// persistentvolumeclaims, events) and namespace deletion; it must be
	// the store RESTOptions keeps objects in. Required.
	Store store.Store
	// Clock is the clock of the printed ages; nil is the real clock.
	Clock clock.PassiveClock
}

// NewAPIGroupInfo returns the legacy core v1 group, for
// GenericAPIServer.InstallLegacyAPIGroup("/api", &info):
//
//   - namespaces (with status and finalize), configmaps, secrets and
//     serviceaccounts: registry.Stores over opts.RESTOptions, with
//     kube-apiserver's validation;
//   - nodes: core v1 views of virtkit's Nodes, whose spec.unschedulable
//     and taints can be updated and patched (kubectl cordon, uncordon);
//   - pods: read-only views of the VMIs as their virt-launcher pods, and
//     pods/eviction, which applies a VMI's eviction strategy as KubeVirt
//     does (kubectl drain);
//   - persistentvolumeclaims: read-only views of the DataVolumes' claims;
//   - events: a read-only core v1 view of the events.k8s.io Events.
//
// A namespace's content is deleted by controller.NamespaceReconciler,
// which must run against opts.Store.
func NewAPIGroupInfo(opts Options) (genericapiserver.APIGroupInfo, error) {
	if opts.RESTOptions == nil {
		return genericapiserver.APIGroupInfo{}, fmt.Errorf("%w: RESTOptions: required", errInvalidOptions)
	}
	if opts.Store == nil {
		return genericapiserver.APIGroupInfo{}, fmt.Errorf("%w: Store: required", errInvalidOptions)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	scheme, err := NewScheme()
	if err != nil {
		return genericapiserver.APIGroupInfo{}, err
	}
	info := genericapiserver.NewDefaultAPIGroupInfo("", scheme, runtime.NewParameterCodec(scheme), serializer.NewCodecFactory(scheme))
	storage, err := newStorage(opts, scheme)
	if err != nil {
		return genericapiserver.APIGroupInfo{}, err
	}
	info.VersionedResourcesStorageMap[GroupVersion.Version] = storage
	return info, nil
}

func newStorage(opts Options, typer runtime.ObjectTyper) (map[string]rest.Storage, error) {
	out := map[string]rest.Storage{}
	for _, k := range []storedKind{configMaps(), secrets(), serviceAccounts()} {
		s, err := newRegistryStore(opts.RESTOptions, typer, opts.Clock, k)
		if err != nil {
			return nil, err
		}
		out[k.resource] = s
		if len(k.shortNames) > 0 {
			out[k.resource] = shortNamedStore{Store: s, shortNames: k.shortNames}
		}
	}
	ns, status, finalize, err := newNamespaceREST(opts.RESTOptions, typer, opts.Store, opts.Clock)
	if err != nil {
		return nil, err
	}
	out["namespaces"], out["namespaces/status"], out["namespaces/finalize"] = ns, status, finalize
	out["nodes"] = newNodeREST(opts.Store, opts.Clock)
	pods := newPodREST(opts.Store, opts.Clock)
	out["pods"] = pods
	out["pods/eviction"] = &evictionREST{st: opts.Store, pods: pods, clock: opts.Clock}
	out["persistentvolumeclaims"] = &claimREST{view: newClaimREST(opts.Store, opts.Clock)}
	out["events"] = newEventREST(opts.Store, opts.Clock)
	return out, nil
}
