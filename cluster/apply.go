package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/admission"
	"github.com/virtkit/virtkit/store"
)

// ErrInvalidObject wraps validation and admission failures from [Apply];
// the message lists every field error with its path, and [FieldErrors]
// returns them.
var ErrInvalidObject = errors.New("invalid object")

// invalidObjectError is ErrInvalidObject with the field errors behind it.
type invalidObjectError struct{ errs field.ErrorList }

func invalid(errs field.ErrorList) error { return &invalidObjectError{errs: errs} }

func (e *invalidObjectError) Error() string {
	return ErrInvalidObject.Error() + ": " + e.errs.ToAggregate().Error()
}

func (e *invalidObjectError) Unwrap() error { return ErrInvalidObject }

// FieldErrors returns the field errors (path, type, value) of every object
// that [Apply] refused as invalid in err, in order; nil when there are none.
func FieldErrors(err error) field.ErrorList {
	var out field.ErrorList
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *invalidObjectError:
			out = append(out, e.errs...)
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}

// applyAttempts bounds how often an update that lost a resourceVersion race
// is retried; between attempts Apply waits a jittered, doubling delay
// (applyBaseDelay, 2x, 4x, ... capped at applyMaxDelay).
const (
	applyAttempts  = 10
	applyBaseDelay = 5 * time.Millisecond
	applyMaxDelay  = 500 * time.Millisecond
)

// Apply defaults, validates, admits and stores objects, kubectl-apply
// style, on behalf of a user: a new object is created without the status
// it may carry; an existing one gets the new spec, labels and annotations
// (its status is kept). Every object goes through [admission.New]'s chain
// (instance type inference, defaults, validation, admission, instance type
// checks); admission ([virtkit.AdmitCreate], [virtkit.AdmitUpdate])
// refuses reserved labels and, for a VMI or a migration, any change of
// spec. An object that fails does not stop the
// others: every object is attempted, and the returned error joins one error
// per failed object (each naming its kind and key once). An update that
// loses a race with another writer is retried with jittered backoff.
func Apply(ctx context.Context, st store.Store, objs ...virtkit.Object) error {
	return ApplyWithDefaults(ctx, st, virtkit.DefaultOptions{}, objs...)
}

// ApplyWithDefaults is [Apply] with the given object defaults in place of
// KubeVirt's stock ones (a cluster's configuration, e.g. a masquerade pod
// network interface). defaults.NewUUID is ignored on updates: a VMI keeps
// its firmware UUID.
func ApplyWithDefaults(ctx context.Context, st store.Store, defaults virtkit.DefaultOptions, objs ...virtkit.Object) error {
	return applyAll(ctx, st, defaults, false, objs...)
}

// applyAll applies objs; virtual retries a lost race after a yield instead
// of a real timer, which a virtual-time cluster's Settle cannot see.
func applyAll(ctx context.Context, st store.Store, defaults virtkit.DefaultOptions, virtual bool, objs ...virtkit.Object) error {
	var errs []error
	for _, obj := range objs {
		if err := applyOneWith(ctx, st, defaults, virtual, obj); err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	return errors.Join(errs...)
}

// ApplyOne applies a single object as [Apply] does and returns its error
// prefixed once with its kind and key. obj is defaulted and admitted in
// place (a created object also gets its uid and resourceVersion).
func ApplyOne(ctx context.Context, st store.Store, obj virtkit.Object) error {
	return applyOneWith(ctx, st, virtkit.DefaultOptions{}, false, obj)
}

func applyOneWith(ctx context.Context, st store.Store, defaults virtkit.DefaultOptions, virtual bool, obj virtkit.Object) error {
	gvk, _ := virtkit.GVKOf(obj)
	if obj.GetNamespace() == "" && virtkit.IsNamespaced(gvk) {
		obj.SetNamespace("default")
	}
	prefix := fmt.Sprintf("%s %s", gvk.Kind, store.KeyOf(obj))
	chain := admission.New(admission.Options{Defaults: defaults, Lookup: st})
	if err := applyOne(ctx, st, chain, virtual, obj); err != nil {
		// Store errors already name the kind and key; do not repeat them.
		if strings.HasPrefix(err.Error(), prefix) {
			return err
		}
		return fmt.Errorf("%s: %w", prefix, err)
	}
	return nil
}

// applyOne admits obj as a create and stores it; when obj is refused as a
// create but exists, or exists already, it is admitted and stored as an
// update of the stored object instead (what a create may not carry, a
// reserved label, an update may keep unchanged).
func applyOne(ctx context.Context, st store.Store, chain *admission.Chain, virtual bool, obj virtkit.Object) error {
	// An update is admitted afresh against the stored object (a VMI keeps
	// its generated firmware UUID), so keep what the user gave.
	given := obj.DeepCopyObject().(virtkit.Object)
	var err error
	if aerr := chain.Admit(ctx, admission.AttributesFor(admission.Create, obj, nil)); aerr != nil {
		errs := admission.FieldErrors(aerr)
		if errs == nil {
			return aerr
		}
		cur := obj.DeepCopyObject().(virtkit.Object)
		if err := st.Get(ctx, store.KeyOf(obj), cur); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return invalid(errs)
			}
			return err
		}
	} else if err = st.Create(ctx, obj); !errors.Is(err, store.ErrAlreadyExists) {
		return err
	}
	delay := applyBaseDelay
	for attempt := range applyAttempts {
		if attempt > 0 && virtual {
			// The re-read is the wait; yield to the writer that won.
			if err := ctx.Err(); err != nil {
				return err
			}
			runtime.Gosched()
		} else if attempt > 0 {
			t := time.NewTimer(delay/2 + rand.N(delay/2+1))
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
			delay = min(2*delay, applyMaxDelay)
		}
		cur := obj.DeepCopyObject().(virtkit.Object)
		if err := st.Get(ctx, store.KeyOf(obj), cur); err != nil {
			return err
		}
		next := given.DeepCopyObject().(virtkit.Object)
		if aerr := chain.Admit(ctx, admission.AttributesFor(admission.Update, next, cur)); aerr != nil {
			if errs := admission.FieldErrors(aerr); errs != nil {
				return invalid(errs)
			}
			return aerr
		}
		next.SetResourceVersion(cur.GetResourceVersion())
		next.SetUID(cur.GetUID())
		next.SetCreationTimestamp(cur.GetCreationTimestamp())
		next.SetFinalizers(cur.GetFinalizers())
		next.SetOwnerReferences(cur.GetOwnerReferences())
		err = st.Update(ctx, next)
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("%w (gave up after %d attempts)", err, applyAttempts)
}
