package store

import (
	"context"

	"github.com/virtkit/virtkit"
)

// Raw is implemented by stores that can also write objects exactly as
// given, for a caller that applies the Kubernetes metadata rules itself
// (such as a generic Kubernetes API server's registry, which sets uid,
// generation, creationTimestamp, deletionTimestamp and finalizers before it
// writes). None of Store's semantics apply: no uid or generation is set,
// status is not kept, finalizers are not looked at. A Raw write only checks
// the key (as Store does) and the resourceVersion, stamps apiVersion and kind
// from the registration (as every stored object carries them) and sets the
// new resourceVersion; it is a compare-and-swap on resourceVersion.
//
// Raw writes are ordinary writes for everyone else: they get a
// resourceVersion from the same sequence, appear in List and Get, and are
// delivered to every Watch, so a Store user and a Raw user work on the same
// data. The memory and etcd stores implement it.
type Raw interface {
	// CreateRaw stores obj as given. Its resourceVersion must be empty
	// (ErrInvalid otherwise) and its name set; ErrAlreadyExists if the key
	// is taken. obj is updated in place with the new resourceVersion.
	CreateRaw(ctx context.Context, obj virtkit.Object) error

	// ReplaceRaw stores obj as given at its key if the stored object's
	// resourceVersion equals obj's; ErrConflict otherwise, ErrNotFound if
	// there is none. obj is updated in place with the new resourceVersion.
	ReplaceRaw(ctx context.Context, obj virtkit.Object) error

	// DeleteRaw removes the object at obj's key if the stored object's
	// resourceVersion equals obj's (an empty resourceVersion deletes
	// whatever is stored); ErrConflict otherwise, ErrNotFound if there is
	// none. Finalizers are not looked at. obj is filled with the last state,
	// carrying the resourceVersion of the deletion (as the Deleted event).
	DeleteRaw(ctx context.Context, obj virtkit.Object) error

	// ListAt fills list like Store.List (sorted by key, filtered by opts),
	// but as the store was at resourceVersion, which must not be newer than
	// the store's (ErrInvalid otherwise). It fails with an error wrapping
	// ErrExpired when that version is older than the history the store
	// keeps. The list's resourceVersion is set to resourceVersion. It lets
	// a caller read a large list in pages that are consistent with each
	// other.
	ListAt(ctx context.Context, list virtkit.ObjectList, opts ListOptions, resourceVersion string) error

	// ResourceVersion returns the store's current resourceVersion: that of
	// its latest write, of any kind.
	ResourceVersion(ctx context.Context) (string, error)
}

// PrepareRaw validates obj for a Raw write and returns a deep copy with
// apiVersion and kind set from the registration, its kind and its key.
// Store implementations use it so that Raw writes check what Store writes
// check.
func (s *Scheme) PrepareRaw(obj virtkit.Object) (virtkit.Object, Kind, Key, error) {
	kind, key, err := s.ObjectKey(obj, false)
	if err != nil {
		return nil, kind, key, err
	}
	next := obj.DeepCopyObject().(virtkit.Object)
	setTypeMeta(kind, next)
	return next, kind, key, nil
}
