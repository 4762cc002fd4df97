package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"

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
	// spec.evictionStrategy (KubeVirt's cluster-wide evictionStrategy);
	// empty means None. Eviction reconciler only.
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

// keyOf returns the store key of a request.
func keyOf(req reconcile.Request) store.Key {
	return store.Key{Namespace: req.Namespace, Name: req.Name}
}

// getOptional reads obj; found=false (and no error) when it does not exist.
func getOptional(ctx context.Context, st store.Store, key store.Key, obj virtkit.Object) (found bool, err error) {
	err = st.Get(ctx, key, obj)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func hasFinalizer(obj metav1.Object, f string) bool {
	return slices.Contains(obj.GetFinalizers(), f)
}

// removeFinalizers drops the given finalizers and reports whether any was
// present.
func removeFinalizers(obj metav1.Object, fs ...string) bool {
	cur := obj.GetFinalizers()
	out := slices.DeleteFunc(slices.Clone(cur), func(f string) bool { return slices.Contains(fs, f) })
	if len(out) == len(cur) {
		return false
	}
	if len(out) == 0 {
		out = nil
	}
	obj.SetFinalizers(out)
	return true
}

func addFinalizer(obj metav1.Object, f string) bool {
	if hasFinalizer(obj, f) {
		return false
	}
	obj.SetFinalizers(append(obj.GetFinalizers(), f))
	return true
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

func newControllerRef(owner metav1.Object, kind string) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{
		APIVersion:         virtkit.APIVersion,
		Kind:               kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         &yes,
		BlockOwnerDeletion: &yes,
	}
}

// retryOnConflict runs fn until it does not fail with store.ErrConflict,
// at most 10 times; fn must re-read what it writes. Between attempts it
// only yields to the writer that won (its re-read is the wait): a real
// timer here would hide a user action from a virtual-time cluster's Settle
// and let it land at a different virtual instant on every run.
func retryOnConflict(ctx context.Context, fn func() error) error {
	var err error
	for range 10 {
		if err = fn(); !errors.Is(err, store.ErrConflict) {
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		runtime.Gosched()
	}
	return err
}

// Watches of the built-in reconcilers, for New.
func vmiList() virtkit.ObjectList  { return &virtkit.VirtualMachineInstanceList{} }
func vmList() virtkit.ObjectList   { return &virtkit.VirtualMachineList{} }
func nodeList() virtkit.ObjectList { return &virtkit.NodeList{} }
func rsList() virtkit.ObjectList   { return &virtkit.VirtualMachineInstanceReplicaSetList{} }

// errInvalidOptions wraps every configuration error of this package; it
// matches virtkit.ErrInvalidOptions.
var errInvalidOptions = virtkit.InvalidOptions("controller")
