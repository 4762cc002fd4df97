package apiserver

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/utils/clock"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/admission"
	"github.com/virtkit/virtkit/printers"
)

// errNotVirtkitObject is the internal error of an object that is not one
// of virtkit's (a bug: every registry.Store here makes virtkit objects).
func errNotVirtkitObject(obj runtime.Object) error {
	return fmt.Errorf("%T is not a virtkit object", obj)
}

// kindREST is a kind's registry.Store with its short names and categories
// (kubectl get vm, kubectl get all).
type kindREST struct {
	*registry.Store
	shortNames, categories []string
}

var (
	_ rest.ShortNamesProvider = (*kindREST)(nil)
	_ rest.CategoriesProvider = (*kindREST)(nil)
)

func (r *kindREST) ShortNames() []string { return r.shortNames }

func (r *kindREST) Categories() []string { return r.categories }

// newKindStorage returns the storage of a kind: "<plural>", and, when it
// has a status, "<plural>/status"; a VirtualMachineInstanceReplicaSet has
// "<plural>/scale" too.
func newKindStorage(k *genericKind, scheme *runtime.Scheme, getter generic.RESTOptionsGetter, chain *admission.Chain, clk clock.PassiveClock) (map[string]rest.Storage, error) {
	gr := k.gvk.GroupVersion().WithResource(k.plural).GroupResource()
	main := kindStrategy{ObjectTyper: scheme, NameGenerator: names.SimpleNameGenerator, kind: k, chain: chain}
	s := &registry.Store{
		NewFunc:                   k.newObj,
		NewListFunc:               k.newList,
		DefaultQualifiedResource:  gr,
		SingularQualifiedResource: schema.GroupResource{Group: gr.Group, Resource: k.singular},
		CreateStrategy:            main,
		UpdateStrategy:            main,
		DeleteStrategy:            main,
		ResetFieldsStrategy:       main,
		TableConvertor:            tableConvertor{cols: printers.Columns(k.gvk.Kind), clock: clk},
	}
	attrs := func(obj runtime.Object) (labels.Set, fields.Set, error) {
		vo, ok := obj.(virtkit.Object)
		if !ok {
			return nil, nil, errNotVirtkitObject(obj)
		}
		return labels.Set(vo.GetLabels()), fields.Set(k.fieldSet(vo)), nil
	}
	s.PredicateFunc = func(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
		return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: attrs}
	}
	if err := s.CompleteWithOptions(&generic.StoreOptions{RESTOptions: getter, AttrFunc: attrs}); err != nil {
		return nil, fmt.Errorf("%s: %w", gr, err)
	}
	out := map[string]rest.Storage{k.plural: &kindREST{Store: s, shortNames: k.shortNames, categories: k.categories}}
	if k.hasStatus {
		st := *s
		status := main
		status.status = true
		st.UpdateStrategy, st.ResetFieldsStrategy = status, status
		st.CreateStrategy, st.DeleteStrategy = nil, nil
		out[k.plural+"/status"] = &statusREST{store: &st, kind: k}
	}
	if k.gvk.Kind == virtkit.KindVirtualMachineInstanceReplicaSet {
		out[k.plural+"/scale"] = &scaleREST{store: s, kind: k}
	}
	return out, nil
}

// statusREST is the status subresource: get, and update or patch of the
// status alone. A node agent writes only the status of the VMIs on its
// node and of its Node; a VMI's placement is the control plane's
// (admitStatus).
type statusREST struct {
	store *registry.Store
	kind  *genericKind
}

var (
	_ rest.Patcher             = (*statusREST)(nil)
	_ rest.ResetFieldsStrategy = (*statusREST)(nil)
	_ rest.TableConvertor      = (*statusREST)(nil)
)

func (r *statusREST) New() runtime.Object { return r.store.New() }

func (r *statusREST) Destroy() {}

func (r *statusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

func (r *statusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	check := func(ctx context.Context, obj, old runtime.Object) error {
		next, ok1 := obj.(virtkit.Object)
		cur, ok2 := old.(virtkit.Object)
		if !ok1 || !ok2 {
			return errNotVirtkitObject(obj)
		}
		if err := admitStatus(r.kind, userOf(ctx), next, cur); err != nil {
			return err
		}
		return updateValidation(ctx, obj, old)
	}
	// Status updates never create: forceAllowCreate is false.
	return r.store.Update(ctx, name, objInfo, createValidation, check, false, options)
}

func (r *statusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

func (r *statusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}

// tableConvertor renders a kind's objects with its printer columns (those
// of KubeVirt's and CDI's CRDs).
type tableConvertor struct {
	cols  []printers.Column
	clock clock.PassiveClock
}

func (t tableConvertor) ConvertToTable(_ context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	var objs []virtkit.Object
	add := func(o runtime.Object) error {
		vo, ok := o.(virtkit.Object)
		if !ok {
			return errNotVirtkitObject(o)
		}
		objs = append(objs, vo)
		return nil
	}
	if meta.IsListType(object) {
		if err := meta.EachListItem(object, add); err != nil {
			return nil, err
		}
	} else if err := add(object); err != nil {
		return nil, err
	}
	noHeaders := false
	if opts, ok := tableOptions.(*metav1.TableOptions); ok && opts != nil {
		noHeaders = opts.NoHeaders
	}
	tab := printers.NewTable(t.cols, objs, printers.TableOptions{Now: t.clock.Now(), NoHeaders: noHeaders, Include: printers.IncludeObject})
	if m, err := meta.ListAccessor(object); err == nil {
		tab.ResourceVersion = m.GetResourceVersion()
		tab.Continue = m.GetContinue()
		tab.RemainingItemCount = m.GetRemainingItemCount()
	} else if m, err := meta.Accessor(object); err == nil {
		tab.ResourceVersion = m.GetResourceVersion()
	}
	return tab, nil
}
