package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilptr "k8s.io/utils/ptr"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// SystemNamespaces are the namespaces kube-apiserver creates at start.
//
// Deprecated: use virtkit.SystemNamespaces.
func SystemNamespaces() []string { return virtkit.SystemNamespaces() }

// NewNamespace returns an Active namespace of that name carrying
// [virtkit.NamespaceFinalizer] in spec.finalizers and metadata.finalizers.
func NewNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: virtkit.KindNamespace},
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{virtkit.NamespaceFinalizer}},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
}

// EnsureNamespaces creates the named namespaces ([NewNamespace]) that do
// not exist yet; existing ones are left as they are.
func EnsureNamespaces(ctx context.Context, st store.Store, names ...string) error {
	for _, name := range names {
		err := st.Create(ctx, NewNamespace(name))
		if err != nil && !errors.Is(err, store.ErrAlreadyExists) {
			return fmt.Errorf("namespace %s: %w", name, err)
		}
	}
	return nil
}

// namespaceRecheck is how soon a terminating namespace is looked at again
// while objects in it are still going (their own finalizers hold them).
const namespaceRecheck = 2 * time.Second

// NamespaceReconciler deletes the content of a namespace being deleted, as
// Kubernetes' namespace controller does: for a namespace with a
// deletionTimestamp it sets status.phase Terminating, deletes every object
// of every namespaced kind the store knows in it (in the background; their
// own finalizers run as usual), and once none is left removes
// [virtkit.NamespaceFinalizer] from spec.finalizers and metadata.finalizers, which
// lets the store remove the namespace. Other finalizers in spec.finalizers
// are left to their owners; the namespace goes when all are gone.
//
// Requests name the namespace (cluster-scoped: no request namespace).
type NamespaceReconciler struct {
	o     ReconcilerOptions
	kinds []namespacedKind
}

type namespacedKind struct {
	gvk     string
	newList func() virtkit.ObjectList
}

// NewNamespaceReconciler returns a namespace controller over o.Store.
func NewNamespaceReconciler(o ReconcilerOptions) (*NamespaceReconciler, error) {
	o, err := o.withDefaults("namespace")
	if err != nil {
		return nil, err
	}
	r := &NamespaceReconciler{o: o}
	for _, gvk := range virtkit.KnownKinds() {
		if !virtkit.IsNamespaced(gvk) {
			continue
		}
		if _, err := virtkit.NewObjectList(gvk); err != nil {
			continue
		}
		r.kinds = append(r.kinds, namespacedKind{gvk: gvk.String(), newList: func() virtkit.ObjectList {
			l, _ := virtkit.NewObjectList(gvk)
			return l
		}})
	}
	return r, nil
}

// Watches returns the namespaces being deleted.
func (r *NamespaceReconciler) Watches() []reconcile.Watch {
	return []reconcile.Watch{{
		NewList: func() virtkit.ObjectList { return &corev1.NamespaceList{} },
		Map: func(_ context.Context, obj virtkit.Object) []reconcile.Request {
			if obj.GetDeletionTimestamp() == nil {
				return nil
			}
			return []reconcile.Request{{Name: obj.GetName()}}
		},
	}}
}

// Reconcile implements Reconciler.
func (r *NamespaceReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ns := &corev1.Namespace{}
	found, err := getOptional(ctx, r.o.Store, store.Key{Name: req.Name}, ns)
	if err != nil || !found || ns.DeletionTimestamp == nil {
		return reconcile.Result{}, err
	}
	if ns.Status.Phase != corev1.NamespaceTerminating {
		ns.Status.Phase = corev1.NamespaceTerminating
		if err := r.o.Store.UpdateStatus(ctx, ns); err != nil {
			return reconcile.Result{}, ignoreNotFound(err)
		}
	}
	left, err := r.deleteContent(ctx, ns.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	if left > 0 {
		return reconcile.Result{RequeueAfter: namespaceRecheck}, nil
	}
	return reconcile.Result{}, ignoreNotFound(retryOnConflict(ctx, func() error {
		cur := &corev1.Namespace{}
		if err := r.o.Store.Get(ctx, store.Key{Name: req.Name}, cur); err != nil {
			return err
		}
		if cur.UID != ns.UID {
			return nil
		}
		spec := slices.DeleteFunc(slices.Clone(cur.Spec.Finalizers), func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
		changedSpec := len(spec) != len(cur.Spec.Finalizers)
		if changedSpec {
			if len(spec) == 0 {
				spec = nil
			}
			cur.Spec.Finalizers = spec
		}
		// The store finalizer goes with the last spec finalizer.
		changedMeta := len(spec) == 0 && removeFinalizers(cur, virtkit.NamespaceFinalizer)
		if !changedSpec && !changedMeta {
			return nil
		}
		return r.o.Store.Update(ctx, cur)
	}))
}

// deleteContent deletes every object in namespace and returns how many
// are still there (held by their finalizers).
func (r *NamespaceReconciler) deleteContent(ctx context.Context, namespace string) (int, error) {
	left := 0
	var errs []error
	for _, k := range r.kinds {
		list := k.newList()
		if err := r.o.Store.List(ctx, list, store.ListOptions{Namespace: namespace}); err != nil {
			return 0, fmt.Errorf("namespace %s: list %s: %w", namespace, k.gvk, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return 0, fmt.Errorf("namespace %s: %s: %w", namespace, k.gvk, err)
		}
		for _, item := range items {
			obj, ok := item.(virtkit.Object)
			if !ok {
				continue
			}
			if obj.GetDeletionTimestamp() != nil {
				left++ // its finalizers hold it
				continue
			}
			err := r.o.Store.Delete(ctx, obj, store.DeleteOptions{Preconditions: &metav1.Preconditions{UID: utilptr.To(obj.GetUID())}})
			switch {
			case errors.Is(err, store.ErrNotFound):
			case errors.Is(err, store.ErrConflict):
				left++ // replaced meanwhile: the next pass deletes it
			case err != nil:
				errs = append(errs, fmt.Errorf("namespace %s: delete %s %s: %w", namespace, k.gvk, obj.GetName(), err))
			case len(obj.GetFinalizers()) > 0:
				left++
			}
		}
	}
	return left, errors.Join(errs...)
}
