package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// installTimeout bounds installing the common catalogue in New, which
// takes no context.
const installTimeout = time.Minute

// installCommonInstancetypes puts KubeVirt's common instance types and
// preferences in st, as KubeVirt's operator deploys them: missing ones
// are created, changed ones brought back to the embedded version. The
// embedded objects are valid (the root package's tests check each), so
// they are stored without Apply's admission.
func installCommonInstancetypes(st store.Store) error {
	objs, err := virtkit.CommonInstancetypes()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	for _, o := range objs {
		if err := installOne(ctx, st, o); err != nil {
			return fmt.Errorf("installing the common instancetypes: %s %s: %w",
				o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
	return nil
}

func installOne(ctx context.Context, st store.Store, o virtkit.Object) error {
	virtkit.SetDefaults(o)
	for range applyAttempts {
		err := st.Create(ctx, o.DeepCopyObject().(virtkit.Object))
		if !errors.Is(err, store.ErrAlreadyExists) {
			return err
		}
		cur := o.DeepCopyObject().(virtkit.Object)
		if err := st.Get(ctx, store.KeyOf(o), cur); errors.Is(err, store.ErrNotFound) {
			continue // deleted in between: create again
		} else if err != nil {
			return err
		}
		if catalogueSpecEqual(cur, o) && maps.Equal(cur.GetLabels(), o.GetLabels()) {
			return nil
		}
		upd := o.DeepCopyObject().(virtkit.Object)
		upd.SetResourceVersion(cur.GetResourceVersion())
		upd.SetUID(cur.GetUID())
		if err := st.Update(ctx, upd); !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("gave up after %d conflicting writes", applyAttempts)
}

// catalogueSpecEqual compares the specs of two catalogue objects of the
// same kind.
func catalogueSpecEqual(a, b virtkit.Object) bool {
	spec := func(o virtkit.Object) any {
		switch t := o.(type) {
		case *virtkit.VirtualMachineClusterInstancetype:
			return t.Spec
		case *virtkit.VirtualMachineClusterPreference:
			return t.Spec
		}
		return nil
	}
	return reflect.DeepEqual(spec(a), spec(b))
}
