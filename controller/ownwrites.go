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
//
// A write's event can reach the watch before the write has returned to the
// reconciler and been remembered: the store hands the event to its watchers
// as it commits, and which of the two goroutines then runs first is the Go
// scheduler's choice. Taken as someone else's, the event would wake the
// reconciler once more, and the version remembered later would swallow a
// later delivery instead, so whether a reconcile ran again (and when a
// failing write was retried: at once, or after the key's backoff) would
// differ from run to run of one seeded scenario. An event for an object
// with one of the reconciler's writes under way therefore waits for that
// write to end before it is judged.
type ownWrites struct {
	mu sync.Mutex
	rv map[ownKey][]string
	// inflight counts the writes under way per object (a create without
	// a name yet counts under its kind and namespace, name ""); ended is
	// signalled, with mu, whenever one ends.
	inflight map[ownKey]int
	ended    *sync.Cond
	waiting  int // events waiting for a write to end (for tests)
}

type ownKey struct {
	kind string
	key  store.Key
}

// ownWritesPerKey bounds what is remembered per object: a reconcile writes
// an object at most a few times.
const ownWritesPerKey = 4

func newOwnWrites() *ownWrites {
	o := &ownWrites{rv: map[ownKey][]string{}, inflight: map[ownKey]int{}}
	o.ended = sync.NewCond(&o.mu)
	return o
}

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
// forgets that version. A write of the object under way is waited for
// first: the event may be its own, delivered before the write returned.
func (o *ownWrites) own(obj virtkit.Object) bool {
	rv := obj.GetResourceVersion()
	k := ownKeyOf(obj)
	unnamed := ownKey{kind: k.kind, key: store.Key{Namespace: k.key.Namespace}}
	o.mu.Lock()
	defer o.mu.Unlock()
	for {
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
		if o.inflight[k] == 0 && o.inflight[unnamed] == 0 {
			return false
		}
		o.waiting++
		o.ended.Wait()
		o.waiting--
	}
}

// begin counts a write of obj under way; the returned func ends it, after
// the write's outcome has been remembered (wrote).
func (o *ownWrites) begin(obj virtkit.Object) func() {
	k := ownKeyOf(obj)
	o.mu.Lock()
	o.inflight[k]++
	o.mu.Unlock()
	return func() {
		o.mu.Lock()
		if o.inflight[k]--; o.inflight[k] <= 0 {
			delete(o.inflight, k)
		}
		o.mu.Unlock()
		o.ended.Broadcast()
	}
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
		// Mapped as the event arrives, before own may wait for a write
		// under way: next may read what the reconciler keeps (the VMI
		// controller's placements), which the reconciler goes on changing
		// once its write has returned.
		reqs := next(ctx, obj)
		if o.own(obj) {
			return nil
		}
		return reqs
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
	defer s.own.begin(obj)()
	if err := s.Store.Create(ctx, obj); err != nil {
		return err
	}
	s.wrote(obj)
	return nil
}

func (s recordingStore) Update(ctx context.Context, obj virtkit.Object) error {
	defer s.own.begin(obj)()
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
	defer s.own.begin(obj)()
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
	defer s.own.begin(obj)()
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
