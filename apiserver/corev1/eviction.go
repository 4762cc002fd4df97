package corev1

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// evictionREST serves pods/eviction: the policy/v1 Eviction of a
// launcher pod (kubectl drain posts one per pod) applies its VMI's
// eviction strategy as KubeVirt's eviction admission does. The strategy
// is the VMI's spec.evictionStrategy, else the cluster's (the KubeVirt
// object's spec.configuration.evictionStrategy), else None:
//
//   - LiveMigrate, and LiveMigrateIfPossible on a migratable VMI: the VMI
//     is marked for evacuation (status.evacuationNodeName is set to the
//     pod's node) and the eviction is refused with 429 TooManyRequests,
//     which kubectl retries; the eviction reconciler migrates the VMI away,
//     its pod on the node goes, and the next try finds none;
//   - External: marked likewise, and refused with 429 until an external
//     controller has moved the VMI;
//   - LiveMigrate on a VMI that cannot migrate: refused with 429 saying
//     so, which blocks the drain as in KubeVirt;
//   - None, and LiveMigrateIfPossible on a VMI that cannot migrate: the
//     VMI is deleted (its guest shuts down gracefully) and the eviction
//     succeeds (201); a VM whose run strategy restarts it starts a new VMI
//     elsewhere.
//
// The API only writes the VMI (its status, or its deletion); the control
// plane acts on it. The pod of a migration's target is not evicted while
// the migration runs (429).
type evictionREST struct {
	st    store.Store
	pods  *podREST
	clock clock.PassiveClock
}

var (
	_ rest.NamedCreater             = (*evictionREST)(nil)
	_ rest.GroupVersionKindProvider = (*evictionREST)(nil)
)

// evictionGVK is the kind pods/eviction takes, as kube-apiserver serves it.
var evictionGVK = policyv1.SchemeGroupVersion.WithKind("Eviction")

// New implements rest.Storage.
func (r *evictionREST) New() runtime.Object { return &policyv1.Eviction{} }

// Destroy implements rest.Storage; the store belongs to the caller.
func (r *evictionREST) Destroy() {}

// GroupVersionKind implements rest.GroupVersionKindProvider.
func (r *evictionREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return evictionGVK
}

// errNotMigratable and errMigrating are reasons an eviction is refused
// with 429.
var (
	errNotMigratable = errors.New("VMI is configured with an eviction strategy but is not live-migratable")
	errMigrating     = errors.New("the pod is the target of a running migration")
)

// Create implements rest.NamedCreater: name is the pod's.
func (r *evictionREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	ev, ok := obj.(*policyv1.Eviction)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not an Eviction: %T", obj))
	}
	if ev.Name != "" && ev.Name != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("name in URL does not match name in Eviction object: %q, %q", name, ev.Name))
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj); err != nil {
			return nil, err
		}
	}
	pod, vmi, err := r.pods.pod(ctx, name)
	if err != nil {
		return nil, err
	}
	dryRun := options != nil && len(options.DryRun) > 0
	if do := ev.DeleteOptions; do != nil {
		dryRun = dryRun || len(do.DryRun) > 0
		if p := do.Preconditions; p != nil {
			if p.UID != nil && *p.UID != pod.UID {
				return nil, apierrors.NewConflict(r.pods.groupResource(), name, errPrecondition("UID", string(*p.UID), string(pod.UID)))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != pod.ResourceVersion {
				return nil, apierrors.NewConflict(r.pods.groupResource(), name, errPrecondition("ResourceVersion", *p.ResourceVersion, pod.ResourceVersion))
			}
		}
	}
	if vmi.DeletionTimestamp != nil || vmi.IsFinal() {
		return evicted(), nil // already going
	}
	node := pod.Spec.NodeName
	if node != vmi.Status.NodeName {
		return nil, tooManyRequests(fmt.Sprintf("%v of VMI %s/%s to node %s; retry once it has ended", errMigrating, vmi.Namespace, vmi.Name, node))
	}
	strategy, err := r.strategy(ctx, vmi)
	if err != nil {
		return nil, err
	}
	switch {
	case strategy == virtkit.EvictionStrategyLiveMigrate && !vmi.IsMigratable():
		return nil, tooManyRequests(fmt.Sprintf("%s/%s: %v", vmi.Namespace, vmi.Name, errNotMigratable))
	case strategy == virtkit.EvictionStrategyLiveMigrate, strategy == virtkit.EvictionStrategyExternal,
		strategy == virtkit.EvictionStrategyLiveMigrateIfPossible && vmi.IsMigratable():
		if !dryRun {
			if err := r.mark(ctx, vmi, node); err != nil {
				return nil, err
			}
		}
		return nil, tooManyRequests(fmt.Sprintf("Eviction triggered evacuation of VMI \"%s/%s\"", vmi.Namespace, vmi.Name))
	}
	if !dryRun {
		msg := fmt.Sprintf("evictionStrategy %s: shut down by the eviction of its launcher pod on node %s", strategy, node)
		if err := r.update(ctx, vmi, func(v *virtkit.VirtualMachineInstance) bool {
			return virtkit.SetCondition(&v.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstanceEvictionRequested,
				Status: virtkit.ConditionTrue, Reason: virtkit.EvictionRequestedReason, Message: msg}, metav1.NewTime(r.clock.Now()))
		}); err != nil {
			return nil, err
		}
		if err := r.st.Delete(ctx, vmi, store.DeleteOptions{}); err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, apiError(err, r.pods.groupResource(), name)
		}
	}
	return evicted(), nil
}

// strategy is the VMI's eviction strategy, else the cluster's.
func (r *evictionREST) strategy(ctx context.Context, vmi *virtkit.VirtualMachineInstance) (virtkit.EvictionStrategy, error) {
	if s := vmi.Spec.EvictionStrategy; s != nil && *s != "" {
		return *s, nil
	}
	kv := &virtkit.KubeVirt{}
	err := r.st.Get(ctx, store.Key{Namespace: virtkit.DefaultKubeVirtNamespace, Name: virtkit.DefaultKubeVirtName}, kv)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", apiError(err, schema.GroupResource{Group: virtkit.GroupName, Resource: "kubevirts"}, virtkit.DefaultKubeVirtName)
	}
	return kv.Spec.Configuration.ClusterEvictionStrategy(), nil
}

// mark sets the VMI's status.evacuationNodeName to node; a VMI marked
// already, or moved, is left alone.
func (r *evictionREST) mark(ctx context.Context, vmi *virtkit.VirtualMachineInstance, node string) error {
	return r.update(ctx, vmi, func(v *virtkit.VirtualMachineInstance) bool {
		if v.Status.EvacuationNodeName != "" || v.Status.NodeName != node {
			return false
		}
		v.Status.EvacuationNodeName = node
		return true
	})
}

// update writes the VMI's status when change changes it, re-reading the
// VMI on conflicts.
func (r *evictionREST) update(ctx context.Context, vmi *virtkit.VirtualMachineInstance, change func(*virtkit.VirtualMachineInstance) bool) error {
	for range 10 {
		if !change(vmi) {
			return nil
		}
		err := r.st.UpdateStatus(ctx, vmi)
		if !errors.Is(err, store.ErrConflict) {
			return apiError(err, r.pods.groupResource(), "")
		}
		if err := r.st.Get(ctx, store.KeyOf(vmi), vmi); err != nil {
			return apiError(err, r.pods.groupResource(), "")
		}
	}
	return apierrors.NewConflict(r.pods.groupResource(), vmi.Name, errors.New("the VMI kept changing; retry"))
}

// tooManyRequests is the refusal kubectl drain retries.
func tooManyRequests(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests,
		Message: msg,
	}}
}

func evicted() *metav1.Status {
	return &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusCreated}
}
