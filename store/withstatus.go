package store

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/virtkit/virtkit"
)

// StatusWriter is implemented by stores that can write an object's
// metadata, spec and status in one revision (one watch event), where Update
// and UpdateStatus take two. Controllers use it through [UpdateWithStatus]
// so that a hand-off that changes both (a finalizer and the first status, a
// node label and the placement) costs one write.
type StatusWriter interface {
	// UpdateWithStatus writes obj's spec, mutable metadata and status with
	// Update's rules (resourceVersion must match, else ErrConflict;
	// generation+1 when the spec changed; no finalizer added to an object
	// being deleted). Writing nothing new keeps the resourceVersion. obj is
	// updated in place. ErrInvalid for a kind without a Status field.
	UpdateWithStatus(ctx context.Context, obj virtkit.Object) error
}

// UpdateWithStatus writes obj's metadata, spec and status: in one write
// when st is a [StatusWriter], else as an Update followed by an
// UpdateStatus (the status obj carried survives the Update). obj is updated
// in place. A conflict on the second write of the fallback is returned as
// is: the caller re-reads and retries, as after any conflict.
func UpdateWithStatus(ctx context.Context, st Store, obj virtkit.Object) error {
	if w, ok := st.(StatusWriter); ok {
		return w.UpdateWithStatus(ctx, obj)
	}
	status, ok := statusOf(obj)
	if !ok {
		return fmt.Errorf("%T %s: %w: status: kind has no Status field", obj, KeyOf(obj), ErrInvalid)
	}
	if err := st.Update(ctx, obj); err != nil {
		return err
	}
	setStatus(obj, status)
	return st.UpdateStatus(ctx, obj)
}

// statusOf returns a deep copy of obj's Status field.
func statusOf(obj virtkit.Object) (reflect.Value, bool) {
	v := reflect.ValueOf(obj.DeepCopyObject())
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	f := v.Elem().FieldByName("Status")
	return f, f.IsValid()
}

func setStatus(obj virtkit.Object, status reflect.Value) {
	reflect.ValueOf(obj).Elem().FieldByName("Status").Set(status)
}

// PrepareUpdateWithStatus returns the object to store for UpdateWithStatus
// of stored with obj: PrepareUpdate's result with obj's status. The result
// may share memory with stored: both must be treated as immutable.
func (s *Scheme) PrepareUpdateWithStatus(stored, obj virtkit.Object) (virtkit.Object, WriteOp, error) {
	info, err := s.info(obj)
	if err != nil {
		return nil, WriteNone, err
	}
	if info.status < 0 {
		return nil, WriteNone, fmt.Errorf("%s %s: %w: status: kind has no Status field", info.Name, KeyOf(obj), ErrInvalid)
	}
	next, op, err := s.PrepareUpdate(stored, obj)
	if err != nil || op == WriteRemove {
		return next, op, err
	}
	status := reflect.ValueOf(obj.DeepCopyObject()).Elem().Field(info.status)
	sv := reflect.ValueOf(stored).Elem()
	if equality.Semantic.DeepEqual(sv.Field(info.status).Interface(), status.Interface()) {
		return next, op, nil // only metadata or spec (or nothing) changed
	}
	if op == WriteNone {
		// next is stored itself: copy it shallowly before setting status.
		cp := reflect.New(sv.Type())
		cp.Elem().Set(sv)
		next = cp.Interface().(virtkit.Object)
	}
	reflect.ValueOf(next).Elem().Field(info.status).Set(status)
	return next, WritePut, nil
}
