package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// informer is one kind of a SharedCache: one list+watch of the store, an
// indexer holding the latest state of every object, a short history and
// the cache's watchers of that kind.
type informer struct {
	c       *SharedCache
	newList func() virtkit.ObjectList
	indexer cache.Indexer
	synced  chan struct{} // closed after the first list

	mu      sync.Mutex
	rv      string         // the version the indexer reflects
	history []historyEvent // the latest events, oldest first
	subs    map[*subscriber]struct{}
	// watched is the latest state each object had in the store's stream
	// (assumed writes aside): what selector transitions compare with.
	watched map[string]virtkit.Object
}

type historyEvent struct {
	ev  store.Event
	old virtkit.Object // the state before ev (nil for Added)
}

func newInformer(c *SharedCache, newList func() virtkit.ObjectList) *informer {
	return &informer{
		c: c, newList: newList, synced: make(chan struct{}),
		indexer: cache.NewIndexer(cacheKey, cache.Indexers{
			IndexNamespace: cache.MetaNamespaceIndexFunc,
			IndexNode:      nodeIndex,
			IndexOwner:     ownerIndex,
			IndexLabel:     labelIndex,
		}),
		subs: map[*subscriber]struct{}{}, watched: map[string]virtkit.Object{},
	}
}

func cacheKey(obj any) (string, error) {
	o, ok := obj.(virtkit.Object)
	if !ok {
		return "", fmt.Errorf("%T is not a virtkit.Object", obj)
	}
	return store.KeyOf(o).String(), nil
}

func nodeIndex(obj any) ([]string, error) {
	if v, ok := obj.(*virtkit.VirtualMachineInstance); ok && v.Status.NodeName != "" {
		return []string{v.Status.NodeName}, nil
	}
	return nil, nil
}

func ownerIndex(obj any) ([]string, error) {
	o, ok := obj.(virtkit.Object)
	if !ok {
		return nil, nil
	}
	if ref := controllerOf(o); ref != nil {
		return []string{o.GetNamespace() + "/" + ref.Name}, nil
	}
	return nil, nil
}

func labelIndex(obj any) ([]string, error) {
	o, ok := obj.(virtkit.Object)
	if !ok || len(o.GetLabels()) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(o.GetLabels()))
	for k, v := range o.GetLabels() {
		out = append(out, k+"="+v)
	}
	return out, nil
}

// run keeps the informer current until ctx ends: list, watch from the
// list's version, list again when the watch expires or breaks.
func (i *informer) run(ctx context.Context) {
	retry := relistDelay()
	defer i.closeAll()
	for ctx.Err() == nil {
		rv, err := i.relist(ctx)
		if err != nil {
			i.c.log.Warn("list failed", "err", err)
			if !sleepCtx(ctx, i.c.clock, retry.next()) {
				return
			}
			continue
		}
		err = i.watch(ctx, rv)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, store.ErrExpired) || err == nil:
			retry.reset()
		default:
			i.c.log.Warn("watch failed, relisting", "err", err)
			if !sleepCtx(ctx, i.c.clock, retry.next()) {
				return
			}
		}
	}
}

// relist replaces the indexer's contents with a fresh list. Watchers of
// the cache cannot follow the jump: they get store.ErrExpired and list
// again (from the cache).
func (i *informer) relist(ctx context.Context) (string, error) {
	list := i.newList()
	if err := i.c.st.List(ctx, list, store.ListOptions{}); err != nil {
		return "", err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return "", fmt.Errorf("extract list items: %w", err)
	}
	objs := make([]any, 0, len(items))
	for _, it := range items {
		objs = append(objs, it)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if err := i.indexer.Replace(objs, list.GetResourceVersion()); err != nil {
		return "", err
	}
	i.rv = list.GetResourceVersion()
	i.history = nil
	i.watched = make(map[string]virtkit.Object, len(items))
	for _, it := range items {
		if o, ok := it.(virtkit.Object); ok {
			i.watched[store.KeyOf(o).String()] = o
		}
	}
	for s := range i.subs {
		s.expire()
		delete(i.subs, s)
	}
	select {
	case <-i.synced:
	default:
		close(i.synced)
	}
	return i.rv, nil
}

func (i *informer) watch(ctx context.Context, rv string) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := i.c.st.Watch(wctx, i.newList(), store.WatchOptions{ResourceVersion: rv, ReadOnly: true})
	if err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			if ev.Type == store.Error {
				if ev.Err == nil {
					return errors.New("watch error event without an error")
				}
				return ev.Err
			}
			if ev.Object != nil {
				i.apply(ev)
			}
		}
	}
}

// apply records one store event and hands it to the watchers.
func (i *informer) apply(ev store.Event) {
	i.mu.Lock()
	defer i.mu.Unlock()
	key := store.KeyOf(ev.Object).String()
	old := i.watched[key]
	var err error
	if ev.Type == store.Deleted {
		delete(i.watched, key)
		err = i.indexer.Delete(ev.Object)
	} else {
		i.watched[key] = ev.Object
		err = i.indexer.Update(ev.Object)
	}
	if err != nil {
		i.c.log.Warn("index update failed", "key", key, "err", err)
	}
	i.rv = ev.Object.GetResourceVersion()
	h := historyEvent{ev: ev, old: old}
	i.history = append(i.history, h)
	if n := i.c.opts.History; len(i.history) >= 2*n {
		// Keep the latest n (amortised: a copy every n events).
		i.history = append(i.history[:0:0], i.history[len(i.history)-n:]...)
	}
	for s := range i.subs {
		if !s.push(h) {
			delete(i.subs, s)
		}
	}
}

func (i *informer) get(key store.Key) (virtkit.Object, bool) {
	o, ok, _ := i.indexer.GetByKey(key.String())
	if !ok {
		return nil, false
	}
	return o.(virtkit.Object), true
}

// list returns the shared objects in namespace ("" = all), sorted, and
// the version they reflect.
func (i *informer) list(namespace string) ([]virtkit.Object, string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	var items []any
	if namespace == "" {
		items = i.indexer.List()
	} else {
		items, _ = i.indexer.ByIndex(IndexNamespace, namespace)
	}
	return sortedObjects(items), i.rv
}

// subscribe adds a watcher that receives every change after opts'
// resourceVersion.
func (i *informer) subscribe(ctx context.Context, opts store.WatchOptions) (<-chan store.Event, error) {
	s := &subscriber{namespace: opts.Namespace, selector: opts.LabelSelector, readOnly: opts.ReadOnly,
		limit: i.c.opts.WatchBuffer, wake: make(chan struct{}, 1)}
	i.mu.Lock()
	switch {
	case opts.ResourceVersion == "" || opts.ResourceVersion == i.rv:
	default:
		at := -1
		for j, h := range i.history {
			if h.ev.Object.GetResourceVersion() == opts.ResourceVersion {
				at = j
				break
			}
		}
		if at < 0 {
			rv := i.rv
			i.mu.Unlock()
			return nil, fmt.Errorf("shared cache: watch from resourceVersion %q (cache at %q): %w", opts.ResourceVersion, rv, store.ErrExpired)
		}
		for _, h := range i.history[at+1:] {
			s.push(h)
		}
	}
	i.subs[s] = struct{}{}
	i.mu.Unlock()

	out := make(chan store.Event)
	go func() {
		defer close(out)
		defer i.unsubscribe(s)
		s.serve(ctx, out)
	}()
	return out, nil
}

func (i *informer) unsubscribe(s *subscriber) {
	i.mu.Lock()
	defer i.mu.Unlock()
	delete(i.subs, s)
}

// closeAll ends every watcher when the informer stops.
func (i *informer) closeAll() {
	i.mu.Lock()
	defer i.mu.Unlock()
	for s := range i.subs {
		s.stop()
		delete(i.subs, s)
	}
}

// subscriber is one Watch of the cache. The informer queues under its lock
// and never blocks; the subscriber's goroutine delivers.
type subscriber struct {
	namespace string
	selector  labels.Selector
	readOnly  bool
	limit     int
	wake      chan struct{}

	mu      sync.Mutex
	queue   []store.Event
	expired bool
	stopped bool
}

// push filters h for this watcher and queues it; false when the watcher
// fell too far behind and has been expired.
func (s *subscriber) push(h historyEvent) bool {
	ev, ok := s.translate(h)
	if !ok {
		return true
	}
	s.mu.Lock()
	full := len(s.queue) >= s.limit
	if full {
		s.expired = true
	} else {
		s.queue = append(s.queue, ev)
	}
	s.mu.Unlock()
	s.signal()
	return !full
}

func (s *subscriber) expire() {
	s.mu.Lock()
	s.expired = true
	s.mu.Unlock()
	s.signal()
}

func (s *subscriber) stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.signal()
}

func (s *subscriber) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// translate applies the namespace and label filters: an object whose
// labels stop matching is Deleted for this watcher, one that starts
// matching Added.
func (s *subscriber) translate(h historyEvent) (store.Event, bool) {
	obj := h.ev.Object
	if s.namespace != "" && obj.GetNamespace() != s.namespace {
		return store.Event{}, false
	}
	ev := h.ev
	if s.selector != nil && !s.selector.Empty() {
		now := s.selector.Matches(labels.Set(obj.GetLabels()))
		before := h.old != nil && s.selector.Matches(labels.Set(h.old.GetLabels()))
		switch {
		case ev.Type == store.Deleted && !before && !now:
			return store.Event{}, false
		case ev.Type == store.Deleted:
		case now && !before:
			ev.Type = store.Added
		case !now && before:
			ev.Type = store.Deleted
		case !now:
			return store.Event{}, false
		}
	}
	return ev, true
}

func (s *subscriber) serve(ctx context.Context, out chan<- store.Event) {
	for {
		s.mu.Lock()
		batch, expired, stopped := s.queue, s.expired, s.stopped
		s.queue = nil
		s.mu.Unlock()
		for _, ev := range batch {
			if !s.readOnly {
				ev.Object = ev.Object.DeepCopyObject().(virtkit.Object)
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
		if expired {
			select {
			case out <- store.Event{Type: store.Error, Err: fmt.Errorf("shared cache watcher fell behind: %w", store.ErrExpired)}:
			case <-ctx.Done():
			}
			return
		}
		if stopped {
			return
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return
		}
	}
}

// assume stores obj (the caller's copy) if it is newer than what the
// indexer holds.
func (i *informer) assume(obj virtkit.Object) {
	rv, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	if err != nil {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if seen, err := strconv.ParseUint(i.rv, 10, 64); err == nil && rv <= seen {
		// The stream has delivered this write already, and whatever
		// followed it: the indexer knows better (the object may since
		// have been deleted, and no later event would take it out again).
		return
	}
	cur, ok, _ := i.indexer.GetByKey(store.KeyOf(obj).String())
	if ok {
		have, err := strconv.ParseUint(cur.(virtkit.Object).GetResourceVersion(), 10, 64)
		if err != nil || have >= rv {
			return
		}
	}
	if obj.GetDeletionTimestamp() != nil && len(obj.GetFinalizers()) == 0 {
		// The write removed the object (its last finalizer went). Never
		// put it back: its Deleted event may have been handled already,
		// and no later event would take it out again.
		if ok {
			_ = i.indexer.Delete(cur)
		}
		return
	}
	if err := i.indexer.Update(obj); err != nil {
		i.c.log.Warn("assume failed", "key", store.KeyOf(obj).String(), "err", err)
	}
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
