package controller

import (
	"fmt"
	"log/slog"
	"math/rand/v2"

	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilclock "k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/scheduler"
	"github.com/virtkit/virtkit/store"
)

// ReconcilerOptions configure the built-in reconcilers. Store is required;
// the zero value of everything else is the default.
type ReconcilerOptions struct {
	Store store.Store
	// Scheduler places VMIs (VMI reconciler only); nil = scheduler.New with
	// the same clock.
	Scheduler scheduler.Scheduler
	// Clock is the reconcilers' time (timestamps, grace periods, the
	// default scheduler's heartbeat freshness); nil is the real clock.
	Clock utilclock.PassiveClock
	// IntN draws the start-failure backoff jitter in [0, n); nil =
	// math/rand/v2.IntN. Tests pass a deterministic one.
	IntN func(n int) int
	// Defaults fill the VMIs the VM and ReplicaSet reconcilers create, as
	// KubeVirt's mutating webhook does on VMI creation (SetDefaults is
	// idempotent, so templates defaulted earlier stay as they are).
	Defaults virtkit.DefaultOptions
	// DefaultEvictionStrategy applies to VMIs without
	// spec.evictionStrategy while the store holds no KubeVirt object;
	// empty means None. Once there is one, its
	// spec.configuration.evictionStrategy (KubeVirt's cluster-wide
	// evictionStrategy), read at each eviction, applies instead
	// (cluster.New writes this option into it). Eviction reconciler only.
	DefaultEvictionStrategy virtkit.EvictionStrategy
	// Logger receives logs; nil discards them.
	Logger *slog.Logger
	// Events records Kubernetes-style events about reconciled objects
	// (KubeVirt's reasons); nil records none.
	Events events.EventRecorder
	// TracerProvider traces VM starts and migrations (see tracing.go);
	// nil traces nothing.
	TracerProvider trace.TracerProvider
	// Cache, when set, serves reads the reconcilers do not modify (the VM
	// reconciler's VMI, placement's nodes) from a process-wide cache
	// without copying, and learns of their own writes at once. Writes
	// always go to Store. Nil reads everything from Store.
	Cache *reconcile.SharedCache
}

func (o ReconcilerOptions) withDefaults(name string) (ReconcilerOptions, error) {
	if o.Store == nil {
		return o, fmt.Errorf("%w: %s: Store: required", errInvalidOptions, name)
	}
	if o.Clock == nil {
		o.Clock = utilclock.RealClock{}
	}
	if o.IntN == nil {
		o.IntN = rand.IntN
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Logger = o.Logger.With("reconciler", name)
	if o.Scheduler == nil {
		o.Scheduler = scheduler.New(scheduler.Options{Clock: o.Clock})
	}
	return o, nil
}

func (o ReconcilerOptions) now() metav1.Time { return metav1.NewTime(o.Clock.Now()) }

// errInvalidOptions wraps every configuration error of this package; it
// matches virtkit.ErrInvalidOptions.
var errInvalidOptions = virtkit.InvalidOptions("controller")
