package apiserver

import (
	"context"
	"reflect"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/admission"
)

// kindStrategy is the create, update and delete strategy of one of
// virtkit's kinds in the generic server. Creates and updates run
// virtkit's admission chain (the one cluster.Apply runs: defaults,
// validation, admission rules); its mutating steps run in Validate and
// ValidateUpdate, which may fail, where a strategy's Prepare hooks may not, and the object they change is the one stored. An update
// through the main resource keeps the stored status; the status strategy
// (status true) writes the status only.
type kindStrategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	kind   *genericKind
	chain  *admission.Chain
	status bool
}

var (
	_ rest.RESTCreateStrategy  = kindStrategy{}
	_ rest.RESTUpdateStrategy  = kindStrategy{}
	_ rest.RESTDeleteStrategy  = kindStrategy{}
	_ rest.ResetFieldsStrategy = kindStrategy{}
)

func (s kindStrategy) NamespaceScoped() bool { return s.kind.namespaced }

// PrepareForCreate starts the object at generation 1 and, for a kind with
// a status subresource, without the status a client sent: as the
// apiextensions server does for a custom resource whose CRD enables the
// status subresource, a create writes no status. (KubeVirt's
// VirtualMachineInstance has no status subresource; its mutating webhook
// sets the phase of a new VMI to Pending, so a client cannot choose where
// or in what phase a VMI starts there either.) A Node keeps its status: the
// node agent registers its Node with it, as the kubelet does.
func (s kindStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	if s.kind.hasStatus && s.kind.gvk.Kind != virtkit.KindNode {
		st := reflect.ValueOf(obj).Elem().FieldByName("Status")
		st.Set(reflect.Zero(st.Type()))
	}
	if m, err := meta.Accessor(obj); err == nil {
		m.SetGeneration(1)
	}
}

// PrepareForUpdate keeps the stored status (main resource) or everything
// but the status (status subresource), and the generation: the main
// resource's ValidateUpdate moves it once defaults are applied.
func (s kindStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	old = old.DeepCopyObject()
	nv, ov := reflect.ValueOf(obj).Elem(), reflect.ValueOf(old).Elem()
	if s.status {
		for i := range nv.NumField() {
			switch nv.Type().Field(i).Name {
			case "TypeMeta", "ObjectMeta", "Status":
			default:
				nv.Field(i).Set(ov.Field(i))
			}
		}
		nm, err1 := meta.Accessor(obj)
		om, err2 := meta.Accessor(old)
		if err1 == nil && err2 == nil {
			metav1.ResetObjectMetaForStatus(nm, om)
		}
		return
	}
	if s.kind.hasStatus {
		nv.FieldByName("Status").Set(ov.FieldByName("Status"))
	}
	if nm, err := meta.Accessor(obj); err == nil {
		if om, err := meta.Accessor(old); err == nil {
			nm.SetGeneration(om.GetGeneration())
		}
	}
}

// specChanged reports whether obj and old differ in anything but their
// type, metadata and status: what moves the generation, as the store's
// own updates count it.
func specChanged(obj, old runtime.Object) bool {
	nv, ov := reflect.ValueOf(obj).Elem(), reflect.ValueOf(old).Elem()
	for i := range nv.NumField() {
		switch nv.Type().Field(i).Name {
		case "TypeMeta", "ObjectMeta", "Status":
			continue
		}
		if !apiequality.Semantic.DeepEqual(nv.Field(i).Interface(), ov.Field(i).Interface()) {
			return true
		}
	}
	return false
}

// admit runs the chain for op on obj (old: the stored object of an
// update), as the request's user.
func (s kindStrategy) admit(ctx context.Context, op admission.Operation, obj, old runtime.Object) field.ErrorList {
	vo, ok := obj.(virtkit.Object)
	if !ok {
		return field.ErrorList{field.InternalError(nil, errNotVirtkitObject(obj))}
	}
	var vold virtkit.Object
	if old != nil {
		vold, _ = old.(virtkit.Object)
	}
	a := admission.AttributesFor(op, vo, vold)
	if u, ok := request.UserFrom(ctx); ok {
		a.User = admission.UserInfo{Name: u.GetName(), Groups: u.GetGroups()}
	}
	if s.chain == nil {
		return nil
	}
	err := s.chain.Admit(ctx, a)
	if err == nil {
		return nil
	}
	if errs := admission.FieldErrors(err); errs != nil {
		return errs
	}
	return field.ErrorList{field.InternalError(nil, err)}
}

// Validate runs the admission chain of a create.
func (s kindStrategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return s.admit(ctx, admission.Create, obj, nil)
}

// ValidateUpdate runs the admission chain of an update (main resource),
// then moves the generation if the defaulted object's spec changed. The
// status subresource's checks (who may place a VMI, which node writes
// what) are the status REST's, as they answer 403 Forbidden.
func (s kindStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	if s.status {
		return nil
	}
	if errs := s.admit(ctx, admission.Update, obj, old); len(errs) > 0 {
		return errs
	}
	if specChanged(obj, old) {
		nm, err1 := meta.Accessor(obj)
		om, err2 := meta.Accessor(old)
		if err1 == nil && err2 == nil {
			nm.SetGeneration(om.GetGeneration() + 1)
		}
	}
	return nil
}

func (kindStrategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (kindStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (kindStrategy) Canonicalize(runtime.Object) {}

func (kindStrategy) AllowCreateOnUpdate(context.Context) bool { return false }

// AllowUnconditionalUpdate is false: an update names the resourceVersion
// it replaces.
func (kindStrategy) AllowUnconditionalUpdate(context.Context) bool { return false }

// GetResetFields tells server-side apply which fields a write through
// this strategy leaves alone: the status through the main resource, the
// spec through the status subresource.
func (s kindStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	reset := "status"
	if s.status {
		reset = "spec"
	}
	if !s.kind.hasStatus {
		return nil
	}
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(s.kind.gvk.GroupVersion().String()): fieldpath.NewSet(fieldpath.MakePathOrDie(reset)),
	}
}
