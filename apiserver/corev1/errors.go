package corev1

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/virtkit/virtkit/store"
)

// ErrNotSupported is wrapped by the errors of calls this package does not
// implement (writes of a read-only view); they reach clients as 405
// MethodNotSupported or 422 naming the field.
var ErrNotSupported = errors.New("not supported")

// errTerminating answers the delete of a namespace being deleted.
var errTerminating = errors.New("the system is ensuring all content is removed from this namespace; upon completion, this namespace will automatically be purged by the system")

func errFieldLabel(kind, label string) error {
	return fmt.Errorf("field label not supported for %s: %s", kind, label)
}

// apiError turns a store error about the object called name of resource
// into the API status error a client expects.
func apiError(err error, resource schema.GroupResource, name string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return apierrors.NewNotFound(resource, name)
	case errors.Is(err, store.ErrConflict):
		return apierrors.NewConflict(resource, name, err)
	case errors.Is(err, store.ErrAlreadyExists):
		return apierrors.NewAlreadyExists(resource, name)
	case errors.Is(err, store.ErrExpired):
		return apierrors.NewResourceExpired(err.Error())
	case errors.Is(err, store.ErrInvalid):
		return apierrors.NewBadRequest(err.Error())
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return apierrors.NewInternalError(err)
}

func errPrecondition(field, want, have string) error {
	return fmt.Errorf("%w: precondition failed: %s in precondition: %s, %s in object meta: %s", store.ErrConflict, field, want, field, have)
}
