package controller

import (
	"context"
	"sync"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// ownWrites remembers the resourceVersions a reconciler's own writes
// produced, so the watch event of such a write does not wake the
// reconciler only to re-read what it just wrote. A reconcile that writes
// either goes on from what it wrote or ends (an error retries it), so the
// state its write produced has been reconciled already. Each remembered
// version is skipped once (the first delivery of it, by watch or relist);
// later deliveries, a periodic resync say, enqueue the object as usual.
type ownWrites struct {
	mu sync.Mutex
	rv map[ownKey][]string
}

type ownKey struct {
	kind string
	key  store.Key
}

// ownWritesPerKey bounds what is remembered per object: a reconcile writes
// an object at most a few times.
const ownWritesPerKey = 4

func newOwnWrites() *ownWrites { return &ownWrites{rv: map[ownKey][]string{}} }

func ownKeyOf(obj virtkit.Object) ownKey {
	k := ownKey{key: store.KeyOf(obj)}
	if gvk, ok := virtkit.GVKOf(obj); ok {
		k.kind = gvk.Kind
	}
	return k
}

// wrote records the resourceVersion a successful write of obj produced.
func (o *ownWrites) wrote(obj virtkit.Object) {
	rv := obj.GetResourceVersion()
	if rv == "" {
		return
	}
	k := ownKeyOf(obj)
	if obj.GetDeletionTimestamp() != nil && len(obj.GetFinalizers()) == 0 {
		// The write removed the object (its last finalizer went). Its
		// Deleted event is news: the reconciler may have to act on the
		// absence (a VM creates its next VMI only once the last is gone).
		o.forget(k.kind, k.key)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	list := o.rv[k]
	if len(list) >= ownWritesPerKey {
		list = list[1:]
	}
	o.rv[k] = append(list, rv)
}

// own reports whether obj is exactly what one of our writes produced, and
// forgets that version.
func (o *ownWrites) own(obj virtkit.Object) bool {
	rv := obj.GetResourceVersion()
	k := ownKeyOf(obj)
	o.mu.Lock()
	defer o.mu.Unlock()
	list := o.rv[k]
	for i, v := range list {
		if v != rv {
			continue
		}
		if len(list) == 1 {
			delete(o.rv, k)
		} else {
			o.rv[k] = append(list[:i:i], list[i+1:]...)
		}
		return true
	}
	return false
}

// forget drops what is remembered of an object (it is gone).
func (o *ownWrites) forget(kind string, key store.Key) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.rv, ownKey{kind: kind, key: key})
}

// skipOwn wraps a MapFunc: events carrying our own writes map to nothing.
func (o *ownWrites) skipOwn(next reconcile.MapFunc) reconcile.MapFunc {
	if next == nil {
		next = reconcile.ObjectKey
	}
	return func(ctx context.Context, obj virtkit.Object) []reconcile.Request {
		if o.own(obj) {
			return nil
		}
		return next(ctx, obj)
	}
}

// recordingStore records the writes made through it in an ownWrites.
type recordingStore struct {
	store.Store
	own   *ownWrites
	cache *reconcile.SharedCache // nil: none to tell
}

// wrote records a successful write that produced a new version.
func (s recordingStore) wrote(obj virtkit.Object) {
	s.own.wrote(obj)
	if s.cache != nil {
		s.cache.Assume(obj)
	}
}

func (s recordingStore) Create(ctx context.Context, obj virtkit.Object) error {
	if err := s.Store.Create(ctx, obj); err != nil {
		return err
	}
	s.wrote(obj)
	return nil
}

func (s recordingStore) Update(ctx context.Context, obj virtkit.Object) error {
	rv := obj.GetResourceVersion()
	if err := s.Store.Update(ctx, obj); err != nil {
		return err
	}
	if obj.GetResourceVersion() != rv {
		s.wrote(obj)
	}
	return nil
}

func (s recordingStore) UpdateStatus(ctx context.Context, obj virtkit.Object) error {
	rv := obj.GetResourceVersion()
	if err := s.Store.UpdateStatus(ctx, obj); err != nil {
		return err
	}
	if obj.GetResourceVersion() != rv {
		s.wrote(obj)
	}
	return nil
}

// UpdateWithStatus implements store.StatusWriter (one write when the
// wrapped store is one, else two).
func (s recordingStore) UpdateWithStatus(ctx context.Context, obj virtkit.Object) error {
	rv := obj.GetResourceVersion()
	if _, ok := s.Store.(store.StatusWriter); !ok {
		// Two writes through this wrapper, each recorded.
		return store.UpdateWithStatus(ctx, recordingOnly{s}, obj)
	}
	if err := store.UpdateWithStatus(ctx, s.Store, obj); err != nil {
		return err
	}
	if obj.GetResourceVersion() != rv {
		s.wrote(obj)
	}
	return nil
}

// recordingOnly hides recordingStore's StatusWriter.
type recordingOnly struct{ store.Store }
