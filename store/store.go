package store

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
)

// Sentinel errors. Stores wrap them with the kind and key
// ("VirtualMachine default/vm1: object already exists"); match with errors.Is.
var (
	// ErrNotFound: no object with that key.
	ErrNotFound = errors.New("object not found")
	// ErrConflict: the resourceVersion (or a delete precondition) does not
	// match the stored object. Re-read and retry.
	ErrConflict = errors.New("object has been modified; re-read and retry")
	// ErrAlreadyExists: Create of a key that exists.
	ErrAlreadyExists = errors.New("object already exists")
	// ErrExpired: a watch cannot be served from the requested resourceVersion
	// (history compacted) or the watcher fell too far behind. Relist and
	// watch again from the list's resourceVersion.
	ErrExpired = errors.New("resource version expired; relist")
	// ErrInvalid: the object or option is malformed (no name, a namespace on
	// a cluster-scoped kind, a resourceVersion on Create, ...). The message
	// names the field.
	ErrInvalid = errors.New("invalid")
	// ErrUnknownKind: the Go type of the object or list is not registered
	// with the store.
	ErrUnknownKind = errors.New("kind not registered with the store")
	// ErrCorrupt: the bytes stored at a key are not a valid object of its
	// kind (undecodable, another kind or apiVersion, a name or namespace
	// that does not match the key, larger than the store's bound). Get,
	// Update and Delete of such a key fail with a [*CorruptError]; List and
	// Watch skip it. Repair it in the backend (rewrite or delete the key).
	ErrCorrupt = errors.New("stored object is corrupt")
)

// Key names an object within its kind. Namespace is empty for cluster-scoped
// kinds.
type Key struct {
	Namespace, Name string
}

// String returns "namespace/name", or "name" when Namespace is empty.
func (k Key) String() string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// KeyOf returns the key of obj.
func KeyOf(obj metav1.Object) Key {
	return Key{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// ListOptions restricts List.
type ListOptions struct {
	// Namespace limits the list to one namespace; "" lists all namespaces.
	// Ignored for cluster-scoped kinds.
	Namespace string
	// LabelSelector keeps objects whose labels match; nil keeps everything.
	LabelSelector labels.Selector
}

// WatchOptions restricts and positions a Watch.
type WatchOptions struct {
	// Namespace limits events to one namespace; "" means all namespaces.
	Namespace string
	// LabelSelector keeps objects whose labels match; nil keeps everything.
	// An object whose labels stop matching is reported as Deleted, one that
	// starts matching as Added.
	LabelSelector labels.Selector
	// ResourceVersion "" starts at the current state; otherwise the watch
	// delivers every change after that version (typically a List's
	// ResourceVersion). Too old a version fails with ErrExpired.
	ResourceVersion string
	// SendInitialEvents delivers an Added event for every existing matching
	// object first, then changes. ResourceVersion must then be "".
	SendInitialEvents bool
	// ReadOnly promises that the caller never modifies an event's Object
	// (nor anything it points to). A store may then hand one object per
	// change to every read-only watcher of the process instead of a copy
	// each; a caller that must change an event's object copies it first.
	// Stores that do not share objects ignore it.
	ReadOnly bool
}

// DeleteOptions conditions a Delete.
type DeleteOptions struct {
	// Preconditions, when set, must match the stored object's UID and/or
	// ResourceVersion, else Delete fails with ErrConflict.
	Preconditions *metav1.Preconditions
	// PropagationPolicy says what happens to the object's dependents (the
	// objects whose metadata.ownerReferences name it), as in Kubernetes:
	// Orphan puts the "orphan" finalizer on the object, Foreground the
	// "foregroundDeletion" finalizer, and a garbage collector orphans or
	// deletes the dependents and then removes the finalizer; Background
	// (and nil) deletes the object at once (after its other finalizers) and
	// leaves the dependents to the garbage collector. A store only keeps the
	// finalizers; without a garbage collector running, an object deleted
	// with Orphan or Foreground stays until they are removed.
	PropagationPolicy *metav1.DeletionPropagation
}

// EventType says what happened to the object of an Event.
type EventType string

// Event types.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	// Error is the last event of a watch; Event.Err says why. When it wraps
	// ErrExpired the caller must relist and watch again.
	Error EventType = "ERROR"
)

// Event is one change delivered by Watch. Object is the caller's own deep
// copy, unless the watch is [WatchOptions.ReadOnly]: then it may be shared
// with other read-only watchers and must not be modified. For Deleted, Object is the last state with the resourceVersion of the
// deletion, so a watch can resume after it.
type Event struct {
	Type   EventType
	Object virtkit.Object
	Err    error
}

// Store keeps virtkit objects with Kubernetes API semantics: optimistic
// concurrency on resourceVersion, generation bumped on spec changes, a
// status subresource, graceful deletion with finalizers and resumable watches.
//
// The kind is taken from the Go type of obj or list, which must be registered
// (ErrUnknownKind otherwise). Stored objects carry apiVersion and kind from
// the registration, whatever the caller's TypeMeta held (a TypeMeta that
// contradicts the Go type is ErrInvalid). Objects go in and come out as deep copies: the
// store never keeps or returns memory the caller can mutate. All methods are
// safe for concurrent use and honour ctx.
type Store interface {
	// Get fills obj (a pointer of the kind) with the object at key.
	// ErrNotFound if there is none; ErrInvalid for a malformed key (no
	// name, '/' in it, a namespace on a cluster-scoped kind or none on a
	// namespaced one).
	Get(ctx context.Context, key Key, obj virtkit.Object) error

	// List fills list's Items with the matching objects, sorted by key, and
	// sets the list's resourceVersion to the store's version at that moment,
	// from which a Watch can continue without missing a change.
	List(ctx context.Context, list virtkit.ObjectList, opts ListOptions) error

	// Create stores a new object. It sets uid, resourceVersion, generation 1
	// and creationTimestamp (and the name from generateName when the name is
	// empty) and updates obj in place. The status given is kept.
	// ErrAlreadyExists if the key is taken; ErrInvalid for a missing name,
	// a set resourceVersion or a wrong namespace.
	Create(ctx context.Context, obj virtkit.Object) error

	// Update writes spec and metadata; the stored status is kept. obj's
	// resourceVersion must equal the stored one, else ErrConflict. The
	// generation is incremented when anything outside metadata and status
	// changed. uid, creationTimestamp, deletionTimestamp and generation cannot
	// be changed by the caller. Finalizers may be removed (not added once
	// deletion started); an object marked for deletion whose last finalizer is
	// removed is deleted. An update that changes nothing writes nothing and
	// keeps the resourceVersion. obj is updated in place.
	Update(ctx context.Context, obj virtkit.Object) error

	// UpdateStatus writes only the status; spec and metadata of the stored
	// object are kept. The resourceVersion must match, else ErrConflict.
	// obj is updated in place. ErrInvalid for a kind without a Status field.
	UpdateStatus(ctx context.Context, obj virtkit.Object) error

	// Delete removes the object at obj's key, gracefully: if it has
	// finalizers, it only gets a deletionTimestamp (again: a no-op) and is
	// removed when an Update drops the last finalizer. obj is filled with the
	// resulting (or last) state. ErrNotFound if there is none; ErrConflict if
	// a precondition does not hold.
	Delete(ctx context.Context, obj virtkit.Object, opts DeleteOptions) error

	// Watch streams changes of list's kind. The channel closes when ctx ends
	// or after an Error event. A watcher that falls too far behind gets an
	// Error event wrapping ErrExpired. Watch itself returns an error wrapping
	// ErrExpired when opts.ResourceVersion is older than the store's history.
	// Events are delivered in resourceVersion order.
	Watch(ctx context.Context, list virtkit.ObjectList, opts WatchOptions) (<-chan Event, error)
}

// Compacter is implemented by stores whose watch history can be discarded on
// demand (the memory store drops its event history, the etcd store compacts
// the etcd keyspace). After Compact, a Watch from any earlier resourceVersion
// fails with ErrExpired.
type Compacter interface {
	Compact(ctx context.Context) error
}
