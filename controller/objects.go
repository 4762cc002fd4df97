package controller

// Helpers the reconcilers share for the objects they read and write: keys,
// optional reads, finalizers, owner references and conflict retries.

import (
	"context"
	"errors"
	"runtime"
	"slices"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// keyOf returns the store key of a request.
func keyOf(req reconcile.Request) store.Key {
	return store.Key{Namespace: req.Namespace, Name: req.Name}
}

// getOptional reads obj; found=false (and no error) when it does not exist.
func getOptional(ctx context.Context, st store.Store, key store.Key, obj virtkit.Object) (found bool, err error) {
	err = st.Get(ctx, key, obj)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func hasFinalizer(obj metav1.Object, f string) bool {
	return slices.Contains(obj.GetFinalizers(), f)
}

// removeFinalizers drops the given finalizers and reports whether any was
// present.
func removeFinalizers(obj metav1.Object, fs ...string) bool {
	cur := obj.GetFinalizers()
	out := slices.DeleteFunc(slices.Clone(cur), func(f string) bool { return slices.Contains(fs, f) })
	if len(out) == len(cur) {
		return false
	}
	if len(out) == 0 {
		out = nil
	}
	obj.SetFinalizers(out)
	return true
}

func addFinalizer(obj metav1.Object, f string) bool {
	if hasFinalizer(obj, f) {
		return false
	}
	obj.SetFinalizers(append(obj.GetFinalizers(), f))
	return true
}

// controllerOf returns the controller owner reference, or nil.
func controllerOf(obj metav1.Object) *metav1.OwnerReference {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return &ref
		}
	}
	return nil
}

func newControllerRef(owner metav1.Object, kind string) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{
		APIVersion:         virtkit.APIVersion,
		Kind:               kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         &yes,
		BlockOwnerDeletion: &yes,
	}
}

// retryOnConflict runs fn until it does not fail with store.ErrConflict,
// at most 10 times; fn must re-read what it writes. Between attempts it
// only yields to the writer that won (its re-read is the wait): a real
// timer here would hide a user action from a virtual-time cluster's Settle
// and let it land at a different virtual instant on every run.
func retryOnConflict(ctx context.Context, fn func() error) error {
	var err error
	for range 10 {
		if err = fn(); !errors.Is(err, store.ErrConflict) {
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		runtime.Gosched()
	}
	return err
}

// Watches of the built-in reconcilers, for New.
func vmiList() virtkit.ObjectList  { return &virtkit.VirtualMachineInstanceList{} }
func vmList() virtkit.ObjectList   { return &virtkit.VirtualMachineList{} }
func nodeList() virtkit.ObjectList { return &virtkit.NodeList{} }
func rsList() virtkit.ObjectList   { return &virtkit.VirtualMachineInstanceReplicaSetList{} }
