package virtkit

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Sentinel errors. Errors returned by this package wrap one of them, so
// callers branch with errors.Is.
var (
	// ErrUnknownKind: the apiVersion/kind is not one virtkit implements.
	ErrUnknownKind = errors.New("unknown kind")
	// ErrUnknownField: a manifest sets a field virtkit does not implement.
	ErrUnknownField = errors.New("unknown field")
	// ErrInvalidManifest: a manifest is not well-formed YAML/JSON or a value
	// has the wrong type.
	ErrInvalidManifest = errors.New("invalid manifest")
	// ErrNotSupported: a feature is understood but not implemented.
	ErrNotSupported = errors.New("not supported")
	// ErrRunStrategy: spec.running and spec.runStrategy are both set.
	ErrRunStrategy = errors.New("running and runStrategy are mutually exclusive")
)

func unknownKindError(gvk schema.GroupVersionKind) error {
	return fmt.Errorf("apiVersion %q kind %q: %w", gvk.GroupVersion().String(), gvk.Kind, ErrUnknownKind)
}
