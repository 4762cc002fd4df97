package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// ErrInvalidObject wraps validation failures from [Apply]; the message
// lists every field error with its path.
var ErrInvalidObject = errors.New("invalid object")

// Apply defaults, validates and stores objects, kubectl-apply style: a new
// object is created; an existing one gets the new spec, labels and
// annotations (its status is kept). It stops at the first failure; objects
// before it stay applied.
func Apply(ctx context.Context, st store.Store, objs ...virtkit.Object) error {
	for _, obj := range objs {
		gvk, _ := virtkit.GVKOf(obj)
		if obj.GetNamespace() == "" && virtkit.IsNamespaced(gvk) {
			obj.SetNamespace("default")
		}
		virtkit.SetDefaults(obj)
		if errs := virtkit.Validate(obj); len(errs) > 0 {
			return fmt.Errorf("%s %s: %w: %v", gvk.Kind, store.KeyOf(obj), ErrInvalidObject, errs.ToAggregate())
		}
		if err := applyOne(ctx, st, obj); err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, store.KeyOf(obj), err)
		}
	}
	return nil
}

func applyOne(ctx context.Context, st store.Store, obj virtkit.Object) error {
	err := st.Create(ctx, obj)
	if !errors.Is(err, store.ErrAlreadyExists) {
		return err
	}
	for range 10 {
		cur := obj.DeepCopyObject().(virtkit.Object)
		if err := st.Get(ctx, store.KeyOf(obj), cur); err != nil {
			return err
		}
		next := obj.DeepCopyObject().(virtkit.Object)
		next.SetResourceVersion(cur.GetResourceVersion())
		next.SetUID(cur.GetUID())
		next.SetCreationTimestamp(cur.GetCreationTimestamp())
		next.SetFinalizers(cur.GetFinalizers())
		next.SetOwnerReferences(cur.GetOwnerReferences())
		err = st.Update(ctx, next)
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return err
}
