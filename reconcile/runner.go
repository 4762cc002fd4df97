package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/workqueue"
	utilclock "k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/internal/clockctx"
	"github.com/virtkit/virtkit/store"
)

// ErrAlreadyStarted is returned by [Controller.Start] when called twice.
var ErrAlreadyStarted = errors.New("controller already started")

// errInvalidOptions wraps every configuration error of this package; it
// matches virtkit.ErrInvalidOptions.
var errInvalidOptions = virtkit.InvalidOptions("controller")

// WatchLister is the part of a store the runner needs. store.Store
// satisfies it.
type WatchLister interface {
	List(ctx context.Context, list virtkit.ObjectList, opts store.ListOptions) error
	Watch(ctx context.Context, list virtkit.ObjectList, opts store.WatchOptions) (<-chan store.Event, error)
}

// MapFunc turns a changed object into the requests to reconcile. It must
// not modify obj; it may read the store (bounded by ctx), for example to
// find the objects that depend on a Node.
type MapFunc func(ctx context.Context, obj virtkit.Object) []Request

// ObjectKey is the MapFunc that enqueues the object itself.
func ObjectKey(_ context.Context, obj virtkit.Object) []Request {
	return []Request{{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
}

// ControllerOwner returns a MapFunc that enqueues the object's controller
// owner if that owner is of the given kind (e.g. a VMI's VirtualMachine).
// Objects without such an owner map to nothing.
func ControllerOwner(kind string) MapFunc {
	return func(_ context.Context, obj virtkit.Object) []Request {
		for _, ref := range obj.GetOwnerReferences() {
			if ref.Controller != nil && *ref.Controller && ref.Kind == kind {
				return []Request{{Namespace: obj.GetNamespace(), Name: ref.Name}}
			}
		}
		return nil
	}
}

// Watch is one stream of objects that feeds the queue.
type Watch struct {
	// NewList returns an empty list of the kind to watch, for example
	// func() virtkit.ObjectList { return &virtkit.VirtualMachineList{} }.
	NewList func() virtkit.ObjectList
	// Namespace restricts the watch to one namespace; empty means all.
	Namespace string
	// LabelSelector restricts the watch; nil means everything.
	LabelSelector labels.Selector
	// Map turns an object into requests; nil means [ObjectKey].
	Map MapFunc
}

// Options configures a [Controller]. The zero value is usable.
type Options struct {
	// Name labels logs and [Stats]; default "controller".
	Name string
	// MaxConcurrentReconciles is the number of workers; default 1. Workers
	// parallelise across keys only: the work queue never hands out a key
	// that is still being reconciled.
	MaxConcurrentReconciles int
	// ResyncPeriod re-lists every watched kind and enqueues everything at
	// this interval, so state missed for any reason is looked at again.
	// Zero means 10 minutes; negative disables resyncs.
	ResyncPeriod time.Duration
	// ReconcileTimeout bounds one Reconcile call; zero means no bound
	// beyond the context given to Start.
	ReconcileTimeout time.Duration
	// RateLimiter decides the delay before retrying a failed request.
	// Default: [DefaultRateLimiter].
	RateLimiter workqueue.TypedRateLimiter[Request]
	// OnTerminalError is called once for each reconcile that returns a
	// [TerminalError], to record it on the object (an event or condition).
	// Nil means the error is only logged and counted.
	OnTerminalError func(ctx context.Context, req Request, err error)
	// Clock times requeues (RequeueAfter, EnqueueAfter, retry backoff),
	// resyncs and relist retries; nil is the real clock. A virtual clock
	// (k8s.io/utils/clock/testing, sim.VirtualClock) makes them wait for
	// the test to advance it.
	Clock utilclock.WithTicker
	// Logger receives the runner's logs; nil discards them.
	Logger *slog.Logger
}

// Controller runs one Reconciler: it watches one or more kinds in a store,
// maps every change to requests, de-duplicates them in a rate-limited work
// queue, and calls the Reconciler from a bounded pool of workers.
//
// At most one Reconcile per Request runs at a time: client-go's work queue
// does not hand out an item that is being processed, and an item added
// while it is processed is handed out again once, after Done. Many events
// for one key collapse into one reconcile.
type Controller struct {
	name    string
	source  WatchLister
	rec     Reconciler
	watches []Watch
	opts    Options
	log     *slog.Logger
	stats   *stats
	queue   workqueue.TypedRateLimitingInterface[Request]
	started atomic.Bool
}

// New returns a controller that feeds rec from the given watches of source.
// It watches and reconciles nothing until [Controller.Start]; the work
// queue exists from here on (so Enqueue works before Start) and its
// goroutines end when Start returns.
func New(source WatchLister, rec Reconciler, opts Options, watches ...Watch) (*Controller, error) {
	if source == nil {
		return nil, fmt.Errorf("%w: source: required", errInvalidOptions)
	}
	if rec == nil {
		return nil, fmt.Errorf("%w: reconciler: required", errInvalidOptions)
	}
	if len(watches) == 0 {
		return nil, fmt.Errorf("%w: watches: at least one required", errInvalidOptions)
	}
	for i, w := range watches {
		if w.NewList == nil {
			return nil, fmt.Errorf("%w: watches[%d].NewList: required", errInvalidOptions, i)
		}
	}
	if opts.MaxConcurrentReconciles < 0 {
		return nil, fmt.Errorf("%w: MaxConcurrentReconciles: must not be negative, got %d", errInvalidOptions, opts.MaxConcurrentReconciles)
	}
	if opts.Name == "" {
		opts.Name = "controller"
	}
	if opts.MaxConcurrentReconciles == 0 {
		opts.MaxConcurrentReconciles = 1
	}
	if opts.ResyncPeriod == 0 {
		opts.ResyncPeriod = 10 * time.Minute
	}
	if opts.RateLimiter == nil {
		opts.RateLimiter = DefaultRateLimiter()
	}
	if opts.Clock == nil {
		opts.Clock = utilclock.RealClock{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st := &stats{name: opts.Name}
	c := &Controller{
		name:    opts.Name,
		source:  source,
		rec:     rec,
		watches: watches,
		opts:    opts,
		log:     log.With("controller", opts.Name),
		stats:   st,
	}
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(opts.RateLimiter,
		workqueue.TypedRateLimitingQueueConfig[Request]{Name: opts.Name, MetricsProvider: st, Clock: opts.Clock})
	return c, nil
}

// DefaultRateLimiter is the retry limiter used when Options.RateLimiter is
// nil: per-key exponential backoff from 5 ms, doubling per consecutive
// failure, capped at 5 min. A success resets the key.
func DefaultRateLimiter() workqueue.TypedRateLimiter[Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[Request](5*time.Millisecond, 5*time.Minute)
}

// Name is Options.Name.
func (c *Controller) Name() string { return c.name }

// Stats returns a snapshot of the controller's numbers. It is safe to call
// at any time from any goroutine.
func (c *Controller) Stats() Stats { return c.stats.snapshot() }

// Enqueue asks for a reconcile of req, de-duplicated with any pending one.
// It is safe to call before Start and from inside a Reconcile.
func (c *Controller) Enqueue(req Request) { c.queue.Add(req) }

// EnqueueAfter asks for a reconcile of req after d.
func (c *Controller) EnqueueAfter(req Request, d time.Duration) { c.queue.AddAfter(req, d) }

// Start runs the watches and workers until ctx is done, then stops taking
// work, waits for running reconciles to return, and returns nil. It can be
// called once.
func (c *Controller) Start(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return fmt.Errorf("controller %q: %w", c.name, ErrAlreadyStarted)
	}
	c.log.Debug("starting", "workers", c.opts.MaxConcurrentReconciles, "watches", len(c.watches))
	if u, ok := c.source.(cacheUser); ok {
		// A shared cache runs while a controller using it runs.
		u.acquire()
		defer u.release()
	}

	var wg sync.WaitGroup
	for _, w := range c.watches {
		wg.Go(func() { c.runWatch(ctx, w) })
	}
	for range c.opts.MaxConcurrentReconciles {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	c.log.Debug("stopped")
	return nil
}

// processNext handles one request; it returns false once the queue is shut
// down.
func (c *Controller) processNext(ctx context.Context) bool {
	req, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(req)
	if ctx.Err() != nil {
		return false
	}

	c.stats.active.Inc()
	start := time.Now()
	res, err := c.reconcile(ctx, req)
	c.stats.observeReconcile(time.Since(start))
	c.stats.active.Dec()
	c.stats.reconciles.Inc()

	switch {
	case err == nil:
		c.queue.Forget(req)
		if res.RequeueAfter > 0 {
			c.stats.requeues.Inc()
			c.queue.AddAfter(req, res.RequeueAfter)
		}
	case IsTerminal(err):
		c.stats.terminal.Inc()
		c.queue.Forget(req)
		c.log.Warn("reconcile failed permanently", "request", req.String(), "err", err)
		if c.opts.OnTerminalError != nil {
			c.opts.OnTerminalError(ctx, req, err)
		}
	case ctx.Err() != nil:
		// Shutting down: the error is most likely the cancellation itself.
		return false
	default:
		c.stats.errs.Inc()
		if res.RequeueAfter > 0 {
			c.log.Warn("reconcile returned both an error and RequeueAfter; the error wins",
				"request", req.String(), "requeueAfter", res.RequeueAfter)
		}
		c.log.Info("reconcile failed, will retry", "request", req.String(), "err", err,
			"attempt", c.queue.NumRequeues(req)+1)
		c.queue.AddRateLimited(req)
	}
	return true
}

func (c *Controller) reconcile(ctx context.Context, req Request) (res Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			c.log.Error("reconciler panicked", "request", req.String(), "panic", v)
			err = &panicError{value: v}
		}
	}()
	if c.opts.ReconcileTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = clockctx.WithTimeout(ctx, c.opts.Clock, c.opts.ReconcileTimeout)
		defer cancel()
	}
	return c.rec.Reconcile(ctx, req)
}

// runWatch keeps one watch alive: list (enqueue everything), watch from the
// list's resourceVersion, and on expiry or a broken stream list again.
func (c *Controller) runWatch(ctx context.Context, w Watch) {
	mapFn := w.Map
	if mapFn == nil {
		mapFn = ObjectKey
	}
	retry := newRetryDelay(100*time.Millisecond, 30*time.Second)
	for ctx.Err() == nil {
		rv, err := c.listAndEnqueue(ctx, w, mapFn)
		if err != nil {
			c.log.Warn("list failed", "err", err)
			if !sleepCtx(ctx, c.opts.Clock, retry.next()) {
				return
			}
			continue
		}
		err = c.watchFrom(ctx, w, mapFn, rv)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, store.ErrExpired):
			c.log.Debug("watch expired, relisting", "resourceVersion", rv)
			retry.reset()
		case err != nil:
			c.log.Warn("watch failed, relisting", "err", err)
			if !sleepCtx(ctx, c.opts.Clock, retry.next()) {
				return
			}
		default:
			retry.reset()
		}
	}
}

// cacheUser is a source that runs only while it has users ([SharedCache]).
type cacheUser interface {
	acquire()
	release()
}

// sharedLister is a source that can list without copies and tell the
// version of what it listed ([SharedCache]).
type sharedLister interface {
	listSharedAt(ctx context.Context, list virtkit.ObjectList, namespace string) ([]virtkit.Object, string, error)
}

func (c *Controller) listAndEnqueue(ctx context.Context, w Watch, mapFn MapFunc) (string, error) {
	if sl, ok := c.source.(sharedLister); ok {
		// MapFuncs only read: no copies of the whole kind.
		objs, rv, err := sl.listSharedAt(ctx, w.NewList(), w.Namespace)
		if err != nil {
			return "", err
		}
		c.stats.relists.Inc()
		for _, obj := range objs {
			if store.Matches(obj, "", w.LabelSelector) {
				c.enqueue(ctx, obj, mapFn)
			}
		}
		return rv, nil
	}
	list := w.NewList()
	if err := c.source.List(ctx, list, store.ListOptions{Namespace: w.Namespace, LabelSelector: w.LabelSelector}); err != nil {
		return "", err
	}
	c.stats.relists.Inc()
	items, err := meta.ExtractList(list)
	if err != nil {
		return "", fmt.Errorf("extract list items: %w", err)
	}
	for _, item := range items {
		obj, ok := item.(virtkit.Object)
		if !ok {
			return "", fmt.Errorf("list item %T is not a virtkit.Object", item)
		}
		c.enqueue(ctx, obj, mapFn)
	}
	return list.GetResourceVersion(), nil
}

// watchFrom consumes one watch until it ends. It returns an error wrapping
// store.ErrExpired when the store asks for a relist, nil when the stream
// just closed, and resyncs (list + enqueue everything) on the way.
func (c *Controller) watchFrom(ctx context.Context, w Watch, mapFn MapFunc, rv string) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := c.source.Watch(wctx, w.NewList(), store.WatchOptions{
		Namespace: w.Namespace, LabelSelector: w.LabelSelector, ResourceVersion: rv,
		// MapFuncs must not modify what they are given: share event objects.
		ReadOnly: true,
	})
	if err != nil {
		return err
	}
	var resync <-chan time.Time
	if c.opts.ResyncPeriod > 0 {
		t := c.opts.Clock.NewTicker(c.opts.ResyncPeriod)
		defer t.Stop()
		resync = t.C()
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-resync:
			if _, err := c.listAndEnqueue(ctx, w, mapFn); err != nil {
				c.log.Warn("resync list failed", "err", err)
			}
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
				c.enqueue(ctx, ev.Object, mapFn)
			}
		}
	}
}

func (c *Controller) enqueue(ctx context.Context, obj virtkit.Object, mapFn MapFunc) {
	for _, req := range mapFn(ctx, obj) {
		c.queue.Add(req)
	}
}

func sleepCtx(ctx context.Context, clk utilclock.Clock, d time.Duration) bool {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// retryDelay doubles from min to max.
type retryDelay struct {
	min, max, cur time.Duration
}

func newRetryDelay(lo, hi time.Duration) *retryDelay { return &retryDelay{min: lo, max: hi} }

func (r *retryDelay) next() time.Duration {
	if r.cur == 0 {
		r.cur = r.min
	} else {
		r.cur = min(2*r.cur, r.max)
	}
	return r.cur
}

func (r *retryDelay) reset() { r.cur = 0 }
