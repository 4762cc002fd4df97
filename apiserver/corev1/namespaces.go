package corev1

import (
	"context"
	"errors"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// namespaceNameLabel is the label kube-apiserver puts on every namespace:
// its name, so label selectors can pick namespaces by name.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// namespaces is the namespaces resource.
func namespaces() storedKind {
	return storedKind{
		resource: "namespaces", singular: "namespace",
		newObj:  func() runtime.Object { return &corev1.Namespace{} },
		newList: func() runtime.Object { return &corev1.NamespaceList{} },
		fields: func(obj runtime.Object) fields.Set {
			return fields.Set{"status.phase": string(obj.(*corev1.Namespace).Status.Phase)}
		},
		strategy: strategy{
			prepareCreate: func(obj runtime.Object) {
				ns := obj.(*corev1.Namespace)
				ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
				if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
					ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
				}
				if !slices.Contains(ns.Finalizers, virtkit.NamespaceFinalizer) {
					ns.Finalizers = append(ns.Finalizers, virtkit.NamespaceFinalizer)
				}
				setNameLabel(ns)
			},
			prepareUpdate: func(obj, old runtime.Object) {
				ns, o := obj.(*corev1.Namespace), old.(*corev1.Namespace)
				ns.Spec.Finalizers = o.Spec.Finalizers
				ns.Status = o.Status
				keepStoreFinalizer(ns, o)
				setNameLabel(ns)
			},
			validate: func(obj runtime.Object) field.ErrorList { return ValidateNamespace(obj.(*corev1.Namespace)) },
			validateUpdate: func(obj, old runtime.Object) field.ErrorList {
				ns := obj.(*corev1.Namespace)
				errs := apimachineryvalidation.ValidateObjectMetaUpdate(&ns.ObjectMeta, &old.(*corev1.Namespace).ObjectMeta, metadataPath)
				return append(errs, ValidateNamespace(ns)...)
			},
		},
	}
}

func setNameLabel(ns *corev1.Namespace) {
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[namespaceNameLabel] = ns.Name
}

// keepStoreFinalizer keeps the store's copy of the "kubernetes" finalizer
// in metadata.finalizers while spec.finalizers is not empty: it is what
// holds a deleted namespace until its content is gone.
func keepStoreFinalizer(ns, old *corev1.Namespace) {
	has := slices.Contains(ns.Finalizers, virtkit.NamespaceFinalizer)
	switch {
	case len(ns.Spec.Finalizers) == 0 && has:
		ns.Finalizers = slices.DeleteFunc(slices.Clone(ns.Finalizers), func(f string) bool { return f == virtkit.NamespaceFinalizer })
		if len(ns.Finalizers) == 0 {
			ns.Finalizers = nil
		}
	case len(ns.Spec.Finalizers) > 0 && !has && slices.Contains(old.Finalizers, virtkit.NamespaceFinalizer):
		ns.Finalizers = append(ns.Finalizers, virtkit.NamespaceFinalizer)
	}
}

// namespaceStatus is the namespaces/status strategy: only status changes,
// and the phase says whether the namespace is being deleted.
func namespaceStatus(s strategy) strategy {
	s.prepareUpdate = func(obj, old runtime.Object) {
		ns, o := obj.(*corev1.Namespace), old.(*corev1.Namespace)
		ns.Spec = o.Spec
		ns.Finalizers = o.Finalizers
	}
	s.validateUpdate = func(obj, old runtime.Object) field.ErrorList {
		ns := obj.(*corev1.Namespace)
		errs := apimachineryvalidation.ValidateObjectMetaUpdate(&ns.ObjectMeta, &old.(*corev1.Namespace).ObjectMeta, metadataPath)
		phase := field.NewPath("status", "phase")
		switch {
		case ns.DeletionTimestamp == nil && ns.Status.Phase != corev1.NamespaceActive:
			errs = append(errs, field.Invalid(phase, ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty"))
		case ns.DeletionTimestamp != nil && ns.Status.Phase != corev1.NamespaceTerminating:
			errs = append(errs, field.Invalid(phase, ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"))
		}
		return errs
	}
	return s
}

// namespaceFinalize is the namespaces/finalize strategy: only
// spec.finalizers changes; emptying it releases the namespace.
func namespaceFinalize(s strategy) strategy {
	s.prepareUpdate = func(obj, old runtime.Object) {
		ns, o := obj.(*corev1.Namespace), old.(*corev1.Namespace)
		finalizers := ns.Spec.Finalizers
		meta := ns.ObjectMeta
		*ns = *o.DeepCopy()
		ns.ObjectMeta.ResourceVersion = meta.ResourceVersion
		ns.Spec.Finalizers = finalizers
		keepStoreFinalizer(ns, o)
	}
	s.validateUpdate = func(obj, _ runtime.Object) field.ErrorList {
		return validateNamespaceFinalizers(obj.(*corev1.Namespace))
	}
	return s
}

// namespaceREST serves namespaces: reads and writes through the
// registry.Store, deletion through the store, whose graceful deletion
// keeps a namespace with finalizers until the namespace controller has
// deleted its content.
type namespaceREST struct {
	*registry.Store
	st    store.Store
	clock clock.PassiveClock
	table
}

var (
	_ rest.StandardStorage      = (*namespaceREST)(nil)
	_ rest.ShortNamesProvider   = (*namespaceREST)(nil)
	_ rest.SingularNameProvider = (*namespaceREST)(nil)
	_ rest.Patcher              = (*subresourceREST)(nil)
)

func newNamespaceREST(getter generic.RESTOptionsGetter, typer runtime.ObjectTyper, st store.Store, clk clock.PassiveClock) (*namespaceREST, *subresourceREST, *subresourceREST, error) {
	k := namespaces()
	s, err := newRegistryStore(getter, typer, clk, k)
	if err != nil {
		return nil, nil, nil, err
	}
	t := table{clock: clk, columns: []column{nameColumn(),
		{def: metav1.TableColumnDefinition{Name: "Status", Type: "string"}, cell: func(obj runtime.Object, _ time.Time) any {
			return string(obj.(*corev1.Namespace).Status.Phase)
		}},
		ageColumn()}}
	s.TableConvertor = t
	status, finalize := *s, *s
	status.UpdateStrategy = namespaceStatus(s.UpdateStrategy.(strategy))
	finalize.UpdateStrategy = namespaceFinalize(s.UpdateStrategy.(strategy))
	return &namespaceREST{Store: s, st: st, clock: clk, table: t}, &subresourceREST{store: &status}, &subresourceREST{store: &finalize}, nil
}

// ShortNames implements rest.ShortNamesProvider.
func (r *namespaceREST) ShortNames() []string { return []string{"ns"} }

// ConvertToTable implements rest.TableConvertor.
func (r *namespaceREST) ConvertToTable(ctx context.Context, obj, opts runtime.Object) (*metav1.Table, error) {
	return r.table.ConvertToTable(ctx, obj, opts)
}

// Delete marks the namespace for deletion in the store and sets it
// Terminating. A namespace with finalizers (every namespace created
// through this API or by controller.EnsureNamespaces) stays until the
// namespace controller has deleted its content and removed the
// "kubernetes" finalizer. A second delete is a conflict, as in
// kube-apiserver.
func (r *namespaceREST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	gr := r.DefaultQualifiedResource
	ns := &corev1.Namespace{}
	if err := r.st.Get(ctx, store.Key{Name: name}, ns); err != nil {
		return nil, false, apiError(err, gr, name)
	}
	if options == nil {
		options = &metav1.DeleteOptions{}
	}
	if p := options.Preconditions; p != nil {
		if p.UID != nil && *p.UID != ns.UID {
			return nil, false, apierrors.NewConflict(gr, name, errPrecondition("UID", string(*p.UID), string(ns.UID)))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != ns.ResourceVersion {
			return nil, false, apierrors.NewConflict(gr, name, errPrecondition("ResourceVersion", *p.ResourceVersion, ns.ResourceVersion))
		}
	}
	if ns.DeletionTimestamp != nil && len(ns.Finalizers) > 0 {
		// As kube-apiserver answers a second delete.
		return nil, false, apierrors.NewConflict(gr, name, errTerminating)
	}
	if deleteValidation != nil {
		if err := deleteValidation(ctx, ns); err != nil {
			return nil, false, err
		}
	}
	if len(options.DryRun) > 0 {
		return ns, false, nil
	}
	opts := store.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &ns.UID}, PropagationPolicy: options.PropagationPolicy}
	if err := r.st.Delete(ctx, ns, opts); err != nil {
		return nil, false, apiError(err, gr, name)
	}
	if ns.DeletionTimestamp != nil && len(ns.Finalizers) > 0 {
		// Terminating before the answer, so NamespaceLifecycle refuses
		// new objects in it from now on (the controller would set it too).
		return r.terminating(ctx, ns)
	}
	return ns, true, nil
}

// terminating sets a namespace being deleted Terminating.
func (r *namespaceREST) terminating(ctx context.Context, ns *corev1.Namespace) (runtime.Object, bool, error) {
	for range 10 {
		if ns.Status.Phase == corev1.NamespaceTerminating {
			return ns, false, nil
		}
		ns.Status.Phase = corev1.NamespaceTerminating
		err := r.st.UpdateStatus(ctx, ns)
		if err == nil {
			return ns, false, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return nil, false, apiError(err, r.DefaultQualifiedResource, ns.Name)
		}
		if err := r.st.Get(ctx, store.Key{Name: ns.Name}, ns); err != nil {
			return nil, false, apiError(err, r.DefaultQualifiedResource, ns.Name)
		}
	}
	return nil, false, apierrors.NewConflict(r.DefaultQualifiedResource, ns.Name, errors.New("the namespace kept changing; retry"))
}

// DeleteCollection is refused: kube-apiserver does not delete namespaces
// by collection either.
func (r *namespaceREST) DeleteCollection(context.Context, rest.ValidateObjectFunc, *metav1.DeleteOptions, *metainternalversion.ListOptions) (runtime.Object, error) {
	return nil, apierrors.NewMethodNotSupported(r.DefaultQualifiedResource, "deletecollection")
}

// Watch implements rest.Watcher through the registry.Store.
func (r *namespaceREST) Watch(ctx context.Context, options *metainternalversion.ListOptions) (watch.Interface, error) {
	return r.Store.Watch(ctx, options)
}

// subresourceREST serves namespaces/status and namespaces/finalize: get
// and update through a copy of the namespaces registry.Store with the
// subresource's update strategy.
type subresourceREST struct {
	store *registry.Store
}

// New implements rest.Storage.
func (r *subresourceREST) New() runtime.Object { return &corev1.Namespace{} }

// Destroy implements rest.Storage; the main resource owns the storage.
func (r *subresourceREST) Destroy() {}

// Get implements rest.Getter.
func (r *subresourceREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update implements rest.Updater; a subresource never creates.
func (r *subresourceREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}
