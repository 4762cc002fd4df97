package validate

import (
	"context"
	"errors"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// instancetypeResolver holds the instance types and preferences a
// validate run knows: KubeVirt's common catalogue, then those of the
// given files (which replace a catalogue object of the same kind and
// name), and the DataVolumes of the files (whose labels a VM's
// inferFromVolume reads).
type instancetypeResolver struct {
	st store.Store
}

func newInstancetypeResolver(ctx context.Context, streams []decoded, common bool) (*instancetypeResolver, error) {
	st := store.NewMemory()
	r := &instancetypeResolver{st: st}
	var objs []virtkit.Object
	if common {
		catalogue, err := virtkit.CommonInstancetypes()
		if err != nil {
			return r, err
		}
		objs = catalogue
	}
	for _, s := range streams {
		for _, o := range s.objs {
			switch o.(type) {
			case *virtkit.VirtualMachineInstancetype, *virtkit.VirtualMachineClusterInstancetype,
				*virtkit.VirtualMachinePreference, *virtkit.VirtualMachineClusterPreference,
				*virtkit.DataVolume:
				objs = append(objs, o.DeepCopyObject().(virtkit.Object))
			}
		}
	}
	for _, o := range objs {
		if virtkit.IsNamespaced(o.GetObjectKind().GroupVersionKind()) && o.GetNamespace() == "" {
			o.SetNamespace("default")
		}
		virtkit.SetDefaults(o)
		err := st.Create(ctx, o)
		if errors.Is(err, store.ErrAlreadyExists) {
			cur := o.DeepCopyObject().(virtkit.Object)
			if err = st.Get(ctx, store.KeyOf(o), cur); err == nil {
				o.SetResourceVersion(cur.GetResourceVersion())
				err = st.Update(ctx, o)
			}
		}
		if _, dv := o.(*virtkit.DataVolume); err != nil && !dv {
			return r, err
		}
	}
	return r, nil
}

// lookup is what the admission chain reads instance types, preferences
// and DataVolumes from.
func (r *instancetypeResolver) lookup() store.Store { return r.st }
