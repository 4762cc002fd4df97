package admission

import (
	"errors"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ErrInvalid is wrapped by every error of a [Chain] that refuses an object
// for its fields; [FieldErrors] returns them.
var ErrInvalid = errors.New("invalid object")

// InvalidError is [ErrInvalid] with the field errors behind it.
type InvalidError struct {
	Errs field.ErrorList
}

// Invalid returns an [InvalidError] for errs, or nil when there are none.
func Invalid(errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return &InvalidError{Errs: errs}
}

func (e *InvalidError) Error() string {
	return ErrInvalid.Error() + ": " + e.Errs.ToAggregate().Error()
}

// Unwrap returns [ErrInvalid].
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// FieldErrors returns the field errors of an [InvalidError] in err's
// chain; nil when there is none.
func FieldErrors(err error) field.ErrorList {
	var ie *InvalidError
	if errors.As(err, &ie) {
		return ie.Errs
	}
	return nil
}
