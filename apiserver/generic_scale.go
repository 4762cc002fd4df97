package apiserver

import (
	"context"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/virtkit/virtkit"
)

// scaleREST is the scale subresource of VirtualMachineInstanceReplicaSets:
// an autoscaling/v1 Scale over spec.replicas (kubectl scale vmirs). A
// write goes through the replica set's own strategy: the admission chain
// judges the replica set it makes.
type scaleREST struct {
	store *registry.Store
	kind  *genericKind
}

var (
	_ rest.Patcher                  = (*scaleREST)(nil)
	_ rest.GroupVersionKindProvider = (*scaleREST)(nil)
)

func (r *scaleREST) New() runtime.Object { return &autoscalingv1.Scale{} }

func (r *scaleREST) Destroy() {}

// GroupVersionKind is autoscaling/v1 Scale, whatever the group.
func (r *scaleREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return autoscalingv1.SchemeGroupVersion.WithKind("Scale")
}

func (r *scaleREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.store.Get(ctx, name, options)
	if err != nil {
		return nil, err
	}
	rs, ok := obj.(*virtkit.VirtualMachineInstanceReplicaSet)
	if !ok {
		return nil, apierrors.NewInternalError(errNotVirtkitObject(obj))
	}
	return scaleOf(rs), nil
}

func (r *scaleREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	info := scaleUpdate{name: name, kind: r.kind, inner: objInfo}
	validate := func(ctx context.Context, obj, old runtime.Object) error {
		n, ok1 := obj.(*virtkit.VirtualMachineInstanceReplicaSet)
		o, ok2 := old.(*virtkit.VirtualMachineInstanceReplicaSet)
		if !ok1 || !ok2 {
			return apierrors.NewInternalError(errNotVirtkitObject(obj))
		}
		return updateValidation(ctx, scaleOf(n), scaleOf(o))
	}
	obj, _, err := r.store.Update(ctx, name, info, rest.ValidateAllObjectFunc, validate, false, options)
	if err != nil {
		return nil, false, err
	}
	rs, ok := obj.(*virtkit.VirtualMachineInstanceReplicaSet)
	if !ok {
		return nil, false, apierrors.NewInternalError(errNotVirtkitObject(obj))
	}
	return scaleOf(rs), false, nil
}

func (r *scaleREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return rest.NewDefaultTableConvertor(r.kind.gvk.GroupVersion().WithResource(r.kind.plural+"/scale").GroupResource()).
		ConvertToTable(ctx, object, tableOptions)
}

// scaleUpdate turns the update of a Scale into the update of its replica
// set: the client's Scale (or patch of it) is applied to the Scale of the
// stored replica set, whose spec.replicas takes the result.
type scaleUpdate struct {
	name  string
	kind  *genericKind
	inner rest.UpdatedObjectInfo
}

func (u scaleUpdate) Preconditions() *metav1.Preconditions { return u.inner.Preconditions() }

func (u scaleUpdate) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	old, ok := oldObj.(*virtkit.VirtualMachineInstanceReplicaSet)
	if !ok {
		return nil, apierrors.NewNotFound(u.kind.gvk.GroupVersion().WithResource(u.kind.plural).GroupResource(), u.name)
	}
	obj, err := u.inner.UpdatedObject(ctx, scaleOf(old))
	if err != nil {
		return nil, err
	}
	scale, ok := obj.(*autoscalingv1.Scale)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected an autoscaling/v1 Scale, got %T", obj))
	}
	if scale.Spec.Replicas < 0 {
		return nil, apierrors.NewInvalid(u.kind.gvk.GroupKind(), u.name, field.ErrorList{
			field.Invalid(field.NewPath("spec", "replicas"), scale.Spec.Replicas, "must be greater than or equal to 0")})
	}
	next := old.DeepCopy()
	replicas := scale.Spec.Replicas
	next.Spec.Replicas = &replicas
	if scale.ResourceVersion != "" {
		// The client's resourceVersion is a precondition, as on the
		// replica set itself.
		next.ResourceVersion = scale.ResourceVersion
	}
	return next, nil
}

// scaleOf is the autoscaling/v1 Scale of rs: its desired replicas (1 when
// unset), its replicas and its label selector.
func scaleOf(rs *virtkit.VirtualMachineInstanceReplicaSet) *autoscalingv1.Scale {
	var want int32 = 1
	if rs.Spec.Replicas != nil {
		want = *rs.Spec.Replicas
	}
	selector := rs.Status.LabelSelector
	if selector == "" && rs.Spec.Selector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector); err == nil {
			selector = sel.String()
		}
	}
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{
			Name: rs.Name, Namespace: rs.Namespace, UID: rs.UID, ResourceVersion: rs.ResourceVersion,
			CreationTimestamp: rs.CreationTimestamp,
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: want},
		Status: autoscalingv1.ScaleStatus{Replicas: rs.Status.Replicas, Selector: selector},
	}
}
