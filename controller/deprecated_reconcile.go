package controller

import (
	"context"

	"k8s.io/client-go/util/workqueue"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// The reconcile framework (runner, shared cache) moved to package
// reconcile; these names keep code written against earlier releases
// compiling.

type (
	// Deprecated: use reconcile.Request.
	Request = reconcile.Request
	// Deprecated: use reconcile.Result.
	Result = reconcile.Result
	// Deprecated: use reconcile.Reconciler.
	Reconciler = reconcile.Reconciler
	// Deprecated: use reconcile.ReconcilerFunc.
	ReconcilerFunc = reconcile.ReconcilerFunc
	// Deprecated: use reconcile.WatchLister.
	WatchLister = reconcile.WatchLister
	// Deprecated: use reconcile.MapFunc.
	MapFunc = reconcile.MapFunc
	// Deprecated: use reconcile.Watch.
	Watch = reconcile.Watch
	// Deprecated: use reconcile.Options.
	Options = reconcile.Options
	// Deprecated: use reconcile.Controller.
	Controller = reconcile.Controller
	// Deprecated: use reconcile.SharedCacheOptions.
	SharedCacheOptions = reconcile.SharedCacheOptions
	// Deprecated: use reconcile.SharedCache.
	SharedCache = reconcile.SharedCache
	// Deprecated: use reconcile.Histogram.
	Histogram = reconcile.Histogram
	// Deprecated: use reconcile.Stats.
	Stats = reconcile.Stats
	// Deprecated: use reconcile.StatsSource.
	StatsSource = reconcile.StatsSource
)

// Index names of a shared cache.
const (
	// Deprecated: use reconcile.IndexNamespace.
	IndexNamespace = reconcile.IndexNamespace
	// Deprecated: use reconcile.IndexNode.
	IndexNode = reconcile.IndexNode
	// Deprecated: use reconcile.IndexOwner.
	IndexOwner = reconcile.IndexOwner
	// Deprecated: use reconcile.IndexLabel.
	IndexLabel = reconcile.IndexLabel
)

// The framework's sentinel errors: the same values, so errors.Is matches
// either name.
var (
	// Deprecated: use reconcile.ErrAlreadyStarted.
	ErrAlreadyStarted = reconcile.ErrAlreadyStarted
	// Deprecated: use virtkit.ErrInvalidOptions.
	ErrInvalidOptions = virtkit.ErrInvalidOptions
	// Deprecated: use reconcile.ErrCacheStopped.
	ErrCacheStopped = reconcile.ErrCacheStopped
)

// TerminalError returns reconcile.TerminalError(err).
//
// Deprecated: use reconcile.TerminalError.
func TerminalError(err error) error { return reconcile.TerminalError(err) }

// IsTerminal returns reconcile.IsTerminal(err).
//
// Deprecated: use reconcile.IsTerminal.
func IsTerminal(err error) bool { return reconcile.IsTerminal(err) }

// New returns reconcile.New(source, rec, opts, watches...).
//
// Deprecated: use reconcile.New.
func New(source reconcile.WatchLister, rec reconcile.Reconciler, opts reconcile.Options, watches ...reconcile.Watch) (*reconcile.Controller, error) {
	return reconcile.New(source, rec, opts, watches...)
}

// DefaultRateLimiter returns reconcile.DefaultRateLimiter().
//
// Deprecated: use reconcile.DefaultRateLimiter.
func DefaultRateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return reconcile.DefaultRateLimiter()
}

// ObjectKey returns reconcile.ObjectKey(ctx, obj).
//
// Deprecated: use reconcile.ObjectKey.
func ObjectKey(ctx context.Context, obj virtkit.Object) []reconcile.Request {
	return reconcile.ObjectKey(ctx, obj)
}

// ControllerOwner returns reconcile.ControllerOwner(kind).
//
// Deprecated: use reconcile.ControllerOwner.
func ControllerOwner(kind string) reconcile.MapFunc { return reconcile.ControllerOwner(kind) }

// NewSharedCache returns reconcile.NewSharedCache(st, opts).
//
// Deprecated: use reconcile.NewSharedCache.
func NewSharedCache(st store.Store, opts reconcile.SharedCacheOptions) (*reconcile.SharedCache, error) {
	return reconcile.NewSharedCache(st, opts)
}

// LatencyBuckets returns reconcile.LatencyBuckets().
//
// Deprecated: use reconcile.LatencyBuckets.
func LatencyBuckets() []float64 { return reconcile.LatencyBuckets() }
