package kubestorage

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

var emptyGVK = schema.GroupVersionKind{}

// resultBuffer is how many events a watch holds for a consumer that is
// not reading; they are still delivered after Stop.
const resultBuffer = 100

// readinessTimeout bounds ReadinessCheck's probe of the store.
const readinessTimeout = 5 * time.Second

// Watch implements storage.Interface over the store's Watch, with the
// etcd3 storage's resourceVersion semantics: "" and "0" start with the
// current state as Added events (unless SendInitialEvents is false), a
// version N delivers every change after N (with SendInitialEvents, the
// state at N first). With SendInitialEvents and AllowWatchBookmarks, a
// bookmark annotated k8s.io/initial-events-end follows the initial events.
// Field selectors are applied here: an object that stops matching is
// Deleted, one that starts matching Added. No progress bookmarks are sent.
func (s *Storage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	sc, err := s.listScope(key, opts.Recursive)
	if err != nil {
		return nil, err
	}
	rev, err := s.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	initialEvents := (opts.SendInitialEvents == nil && rev == 0) || (opts.SendInitialEvents != nil && *opts.SendInitialEvents)
	bookmark := opts.SendInitialEvents != nil && *opts.SendInitialEvents && opts.Predicate.AllowWatchBookmarks
	pred := opts.Predicate
	if pred.Empty() {
		pred = storage.Everything
	}
	sel := labelSelector(pred)

	w := &watcher{s: s, scope: sc, pred: pred, result: make(chan watch.Event, resultBuffer)}
	if ctx.Err() != nil {
		// Canceled before it started: a watch that has ended.
		w.cancel = func() {}
		close(w.result)
		return w, nil
	}
	// Objects matching the predicate at the start: the initial events, and
	// (with a predicate) what the watcher knows to be matching.
	var initial []virtkit.Object
	from := rev
	tracked := !pred.Empty()
	if initialEvents || tracked {
		// Initial events show the current state (resourceVersion is then
		// a lower bound); a watch from a version starts from the state
		// at that version.
		at := int64(rev)
		if initialEvents {
			at = 0
		}
		objs, listRV, err := s.snapshot(ctx, sc, sel, at)
		if errors.Is(err, store.ErrInvalid) && at > 0 {
			// A future version: the watch waits for it; what matches
			// now is what matches then unless it changes meanwhile,
			// which the watch then reports.
			objs, listRV, err = s.snapshot(ctx, sc, sel, 0)
			listRV = max(listRV, int64(rev))
		}
		if errors.Is(err, store.ErrExpired) {
			return w.expired(err), nil
		}
		if err != nil {
			return nil, s.listErr(ctx, err, at, "", sc.keyPrefix)
		}
		if initialEvents && uint64(listRV) < rev {
			return nil, storage.NewTooLargeResourceVersionError(rev, uint64(listRV), 0)
		}
		from = uint64(listRV)
		if tracked {
			w.matching = map[store.Key]virtkit.Object{}
		}
		for _, obj := range objs {
			ok, err := pred.Matches(obj)
			if err != nil || !ok {
				continue
			}
			if tracked {
				w.matching[store.KeyOf(obj)] = obj.DeepCopyObject().(virtkit.Object)
			}
			if initialEvents {
				initial = append(initial, obj)
			}
		}
	} else if rev == 0 {
		cur, err := s.current(ctx)
		if err != nil {
			return nil, err
		}
		from = cur
	}
	wctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	events, err := s.backend.Watch(wctx, s.newList(), store.WatchOptions{
		Namespace:       sc.namespace,
		ResourceVersion: strconv.FormatUint(from, 10),
	})
	if err != nil {
		cancel()
		if errors.Is(err, store.ErrExpired) {
			return w.expired(err), nil
		}
		return nil, storageErr(key, err)
	}
	go w.run(wctx, initial, from, bookmark, events)
	// The watch is set up: a request waiting for that (API priority and
	// fairness) may go on.
	utilflowcontrol.WatchInitialized(ctx)
	return w, nil
}

// watcher is one Watch: it translates store events into watch events.
type watcher struct {
	s      *Storage
	scope  scope
	pred   storage.SelectionPredicate
	result chan watch.Event
	cancel context.CancelFunc
	// matching, with a predicate, holds the objects the watcher has
	// reported as matching (by key), so that a change can be told apart
	// as Added, Modified or Deleted.
	matching map[store.Key]virtkit.Object
	stopOnce sync.Once
}

// expired ends the watch, before it started, with an Error event saying
// 410 Gone, as the etcd3 storage reports a version it has compacted.
func (w *watcher) expired(err error) *watcher {
	w.cancel = func() {}
	w.result <- watch.Event{Type: watch.Error, Object: &apierrors.NewResourceExpired(err.Error()).ErrStatus}
	close(w.result)
	return w
}

// Stop implements watch.Interface.
func (w *watcher) Stop() { w.stopOnce.Do(w.cancel) }

// ResultChan implements watch.Interface.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

func (w *watcher) send(ctx context.Context, ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

func (w *watcher) run(ctx context.Context, initial []virtkit.Object, from uint64, bookmark bool, events <-chan store.Event) {
	defer close(w.result)
	defer w.cancel()
	for _, obj := range initial {
		if !w.send(ctx, watch.Event{Type: watch.Added, Object: w.out(obj)}) {
			return
		}
	}
	if bookmark {
		mark := w.s.newFunc()
		if err := w.s.versioner.UpdateObject(mark, from); err == nil && storage.AnnotateInitialEventsEndBookmark(mark) == nil {
			if !w.send(ctx, watch.Event{Type: watch.Bookmark, Object: mark}) {
				return
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ev.Type == store.Error {
				var status runtime.Object
				if errors.Is(ev.Err, store.ErrExpired) {
					e := apierrors.NewResourceExpired(ev.Err.Error())
					status = &e.ErrStatus
				} else {
					e := apierrors.NewInternalError(ev.Err)
					status = &e.ErrStatus
				}
				w.send(ctx, watch.Event{Type: watch.Error, Object: status})
				return
			}
			out, ok := w.translate(ev)
			if !ok {
				continue
			}
			if !w.send(ctx, out) {
				return
			}
		}
	}
}

// out prepares an object for delivery: without TypeMeta, like every
// object the storage returns.
func (w *watcher) out(obj virtkit.Object) runtime.Object {
	obj.GetObjectKind().SetGroupVersionKind(emptyGVK)
	return obj
}

// translate maps a store event to the watch event this watcher delivers.
func (w *watcher) translate(ev store.Event) (watch.Event, bool) {
	obj := ev.Object
	if obj == nil || !w.scope.covers(obj) {
		return watch.Event{}, false
	}
	if w.matching == nil {
		switch ev.Type {
		case store.Added:
			return watch.Event{Type: watch.Added, Object: w.out(obj)}, true
		case store.Modified:
			return watch.Event{Type: watch.Modified, Object: w.out(obj)}, true
		case store.Deleted:
			return watch.Event{Type: watch.Deleted, Object: w.out(obj)}, true
		}
		return watch.Event{}, false
	}
	key := store.KeyOf(obj)
	prev, was := w.matching[key]
	if ev.Type == store.Deleted {
		if !was {
			return watch.Event{}, false
		}
		delete(w.matching, key)
		return watch.Event{Type: watch.Deleted, Object: w.out(obj)}, true
	}
	now, err := w.pred.Matches(obj)
	if err != nil {
		now = false
	}
	switch {
	case now && was:
		w.matching[key] = obj.DeepCopyObject().(virtkit.Object)
		return watch.Event{Type: watch.Modified, Object: w.out(obj)}, true
	case now:
		w.matching[key] = obj.DeepCopyObject().(virtkit.Object)
		return watch.Event{Type: watch.Added, Object: w.out(obj)}, true
	case was:
		// Stopped matching: the last matching state, at this version.
		delete(w.matching, key)
		last := prev.DeepCopyObject().(virtkit.Object)
		last.SetResourceVersion(obj.GetResourceVersion())
		return watch.Event{Type: watch.Deleted, Object: w.out(last)}, true
	}
	return watch.Event{}, false
}
