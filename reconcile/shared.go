package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	utilclock "k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// Index names of a [SharedCache].
const (
	// IndexNamespace: the object's namespace.
	IndexNamespace = cache.NamespaceIndex
	// IndexNode: a VMI's status.nodeName (VMIs only).
	IndexNode = "node"
	// IndexOwner: "namespace/name" of the object's controller owner.
	IndexOwner = "owner"
	// IndexLabel: one "key=value" entry per label.
	IndexLabel = "label"
)

// ErrCacheStopped is returned by a [SharedCache] read that cannot be served
// because the cache is not running (any more).
var ErrCacheStopped = errors.New("shared cache not running")

// SharedCacheOptions configure a [SharedCache]. The zero value works.
type SharedCacheOptions struct {
	// WatchBuffer is how many events one watcher of the cache may be
	// behind before it gets an Error event wrapping store.ErrExpired (and
	// relists, from the cache); 0 means store.DefaultWatchBuffer.
	WatchBuffer int
	// History is how many events per kind are kept for watches resuming
	// from an older resourceVersion; 0 means 1024.
	History int
	// Clock times relist retries; nil is the real clock.
	Clock utilclock.WithTicker
	// Logger receives the cache's logs; nil discards them.
	Logger *slog.Logger
}

// SharedCache is a process's one watch per kind: it lists and watches
// each kind of the store once (on first use), keeps every object in a
// client-go indexer (indexes by namespace, node, owner and label), and
// serves List, Watch and Get from there. Every controller of a process can
// use it as its [WatchLister]: N controllers watching a kind cost one store
// watch, one decoding of each event (on etcd) and one copy, not N.
//
// Watch events and [SharedCache.ByIndex] results are shared, read-only
// objects; Get and List return deep copies. Reads wait until the kind has
// been listed once. The cache follows the store: a reconciler's own write
// shows in it once its watch event arrives, so a read right after a write
// may be stale (a write based on it fails with store.ErrConflict and is
// retried, as with any concurrent writer).
type SharedCache struct {
	st    store.Store
	opts  SharedCacheOptions
	log   *slog.Logger
	clock utilclock.WithTicker

	mu    sync.Mutex
	users int       // running Starts and controllers using the cache
	run   *cacheRun // nil while nobody uses the cache
	ready chan struct{}
}

// cacheRun is one period during which the cache runs: its informers end
// with it.
type cacheRun struct {
	ctx    context.Context
	cancel context.CancelFunc
	kinds  map[reflect.Type]*informer
	wg     sync.WaitGroup
}

var _ WatchLister = (*SharedCache)(nil)

// NewSharedCache returns a cache over st. Nothing is listed or watched
// until the cache runs ([SharedCache.Start], or a [Controller] using it as
// its source) and a kind is first asked for.
func NewSharedCache(st store.Store, opts SharedCacheOptions) (*SharedCache, error) {
	if st == nil {
		return nil, fmt.Errorf("%w: shared cache: store: required", errInvalidOptions)
	}
	if opts.WatchBuffer < 0 || opts.History < 0 {
		return nil, fmt.Errorf("%w: shared cache: WatchBuffer and History must not be negative", errInvalidOptions)
	}
	if opts.WatchBuffer == 0 {
		opts.WatchBuffer = store.DefaultWatchBuffer
	}
	if opts.History == 0 {
		opts.History = 1024
	}
	if opts.Clock == nil {
		opts.Clock = utilclock.RealClock{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &SharedCache{st: st, opts: opts, log: log.With("component", "shared-cache"), clock: opts.Clock,
		ready: make(chan struct{})}, nil
}

// Start keeps the cache running until ctx ends, then returns nil (after
// the watches stopped, if it was the last user). The cache runs while at
// least one Start, or one [Controller] that uses it as its source, runs;
// Start may be called any number of times, also concurrently.
func (c *SharedCache) Start(ctx context.Context) error {
	c.acquire()
	defer c.release()
	<-ctx.Done()
	return nil
}

// acquire marks one more user; the first starts a run.
func (c *SharedCache) acquire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users++
	if c.run == nil {
		ctx, cancel := context.WithCancel(context.Background())
		c.run = &cacheRun{ctx: ctx, cancel: cancel, kinds: map[reflect.Type]*informer{}}
		close(c.ready)
	}
}

// release drops one user; the last ends the run and waits for its
// informers.
func (c *SharedCache) release() {
	c.mu.Lock()
	c.users--
	if c.users > 0 {
		c.mu.Unlock()
		return
	}
	r := c.run
	c.run = nil
	c.ready = make(chan struct{})
	c.mu.Unlock()
	if r != nil {
		r.cancel()
		r.wg.Wait()
	}
}

// informerFor returns the running informer of list's kind, starting it on
// first use. It waits (bounded by ctx) for the cache to run.
func (c *SharedCache) informerFor(ctx context.Context, list virtkit.ObjectList) (*informer, *cacheRun, error) {
	t := reflect.TypeOf(list)
	for {
		c.mu.Lock()
		r, ready := c.run, c.ready
		if r != nil {
			inf, ok := r.kinds[t]
			if !ok {
				newList := func() virtkit.ObjectList { return reflect.New(t.Elem()).Interface().(virtkit.ObjectList) }
				inf = newInformer(c, newList)
				r.kinds[t] = inf
				r.wg.Go(func() { inf.run(r.ctx) })
			}
			c.mu.Unlock()
			return inf, r, nil
		}
		c.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// synced returns the informer of list's kind once it has listed.
func (c *SharedCache) synced(ctx context.Context, list virtkit.ObjectList) (*informer, error) {
	inf, r, err := c.informerFor(ctx, list)
	if err != nil {
		return nil, err
	}
	select {
	case <-inf.synced:
		return inf, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-r.ctx.Done():
		return nil, ErrCacheStopped
	}
}

// List implements [WatchLister]: the cached objects of list's kind that
// match opts, deep copies sorted by key, and the resourceVersion a Watch
// of the cache can continue from.
func (c *SharedCache) List(ctx context.Context, list virtkit.ObjectList, opts store.ListOptions) error {
	inf, err := c.synced(ctx, list)
	if err != nil {
		return err
	}
	objs, rv := inf.list(opts.Namespace)
	items := make([]runtime.Object, 0, len(objs))
	for _, o := range objs {
		if store.Matches(o, "", opts.LabelSelector) {
			items = append(items, o.DeepCopyObject())
		}
	}
	if err := meta.SetList(list, items); err != nil {
		return fmt.Errorf("shared cache: %w", err)
	}
	list.SetResourceVersion(rv)
	return nil
}

// Get fills obj with a deep copy of the cached object at key; an error
// wrapping store.ErrNotFound when the cache has none.
func (c *SharedCache) Get(ctx context.Context, key store.Key, obj virtkit.Object) error {
	list := listFor(obj)
	if list == nil {
		return fmt.Errorf("shared cache: %T: %w", obj, store.ErrUnknownKind)
	}
	inf, err := c.synced(ctx, list)
	if err != nil {
		return err
	}
	cached, ok := inf.get(key)
	if !ok {
		return fmt.Errorf("%T %s: %w", obj, key, store.ErrNotFound)
	}
	store.Into(obj, cached.DeepCopyObject().(virtkit.Object))
	return nil
}

// GetShared returns the cached object at key itself, which the caller must
// not modify (copy it first), or false.
func (c *SharedCache) GetShared(ctx context.Context, list virtkit.ObjectList, key store.Key) (virtkit.Object, bool, error) {
	inf, err := c.synced(ctx, list)
	if err != nil {
		return nil, false, err
	}
	obj, ok := inf.get(key)
	return obj, ok, nil
}

// ByIndex returns the cached objects of list's kind whose index name
// (IndexNode, IndexOwner, IndexLabel, IndexNamespace) has value, sorted by
// key. They are shared: the caller must not modify them.
func (c *SharedCache) ByIndex(ctx context.Context, list virtkit.ObjectList, index, value string) ([]virtkit.Object, error) {
	inf, err := c.synced(ctx, list)
	if err != nil {
		return nil, err
	}
	items, err := inf.indexer.ByIndex(index, value)
	if err != nil {
		return nil, fmt.Errorf("shared cache: %w", err)
	}
	return sortedObjects(items), nil
}

// Watch implements [WatchLister]: the changes of list's kind after
// opts.ResourceVersion (a List of this cache's), filtered by namespace and
// label selector. Objects are shared unless the watch is not ReadOnly.
// A resourceVersion the cache no longer has fails with store.ErrExpired.
func (c *SharedCache) Watch(ctx context.Context, list virtkit.ObjectList, opts store.WatchOptions) (<-chan store.Event, error) {
	if opts.SendInitialEvents {
		return nil, fmt.Errorf("shared cache: watch: sendInitialEvents: %w", virtkit.ErrNotSupported)
	}
	inf, err := c.synced(ctx, list)
	if err != nil {
		return nil, err
	}
	return inf.subscribe(ctx, opts)
}

// listFor returns an empty list of obj's kind (nil for a foreign type).
func listFor(obj virtkit.Object) virtkit.ObjectList {
	gvk, ok := virtkit.GVKOf(obj)
	if !ok {
		return nil
	}
	l, err := virtkit.NewObjectList(gvk)
	if err != nil {
		return nil
	}
	return l
}

func sortedObjects(items []any) []virtkit.Object {
	out := make([]virtkit.Object, 0, len(items))
	for _, it := range items {
		if o, ok := it.(virtkit.Object); ok {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GetNamespace() != out[j].GetNamespace() {
			return out[i].GetNamespace() < out[j].GetNamespace()
		}
		return out[i].GetName() < out[j].GetName()
	})
	return out
}

// relistDelay bounds the pause before an informer lists again after a
// failure.
func relistDelay() *retryDelay { return newRetryDelay(100*time.Millisecond, 30*time.Second) }

// Assume puts a copy of obj, the result of one of the process's own
// successful writes, into the cache unless the cache already holds that
// version or a newer one, so a read right after a write sees it before
// its watch event arrives (the event, when it comes, carries the same
// state). Kinds the cache does not watch yet, and resourceVersions that
// are not numbers, are ignored.
func (c *SharedCache) Assume(obj virtkit.Object) {
	list := listFor(obj)
	if list == nil {
		return
	}
	c.mu.Lock()
	var inf *informer
	if c.run != nil {
		inf = c.run.kinds[reflect.TypeOf(list)]
	}
	c.mu.Unlock()
	if inf == nil {
		return
	}
	inf.assume(obj.DeepCopyObject().(virtkit.Object))
}

// ListShared returns every cached object of list's kind in namespace (""
// = all), sorted by key. They are shared: the caller must not modify them.
func (c *SharedCache) ListShared(ctx context.Context, list virtkit.ObjectList, namespace string) ([]virtkit.Object, error) {
	inf, err := c.synced(ctx, list)
	if err != nil {
		return nil, err
	}
	objs, _ := inf.list(namespace)
	return objs, nil
}

// listSharedAt is ListShared with the resourceVersion the objects reflect,
// for the runner's lists.
func (c *SharedCache) listSharedAt(ctx context.Context, list virtkit.ObjectList, namespace string) ([]virtkit.Object, string, error) {
	inf, err := c.synced(ctx, list)
	if err != nil {
		return nil, "", err
	}
	objs, rv := inf.list(namespace)
	return objs, rv, nil
}
