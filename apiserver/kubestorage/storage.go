package kubestorage

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// ErrBackend is wrapped by New when the backend or the resource does not
// fit: a store without [store.Raw] or Scheme, a type not registered with
// the store, a malformed resource prefix.
var ErrBackend = errors.New("kubestorage: unusable backend")

// Backend is what the storage needs of a store: the Store contract for
// reads and watches, Raw for writes that apply no semantics of their own,
// and its kind registry. *store.Memory and *etcd.Store are Backends.
type Backend interface {
	store.Store
	store.Raw
	Scheme() *store.Scheme
}

// Storage is a k8s.io/apiserver storage.Interface for one resource (one
// store kind) over a virtkit store. Keys are
// "<resourcePrefix>/<namespace>/<name>" for namespaced kinds and
// "<resourcePrefix>/<name>" for cluster-scoped ones, as registry.Store's
// default key functions build them. It is safe for concurrent use.
type Storage struct {
	backend Backend
	kind    store.Kind
	// prefix is the resource prefix, with a leading and without a
	// trailing '/'.
	prefix      string
	newFunc     func() runtime.Object
	newListFunc func() runtime.Object
	versioner   storage.Versioner
}

var _ storage.Interface = (*Storage)(nil)

// New returns the storage of the kind whose Go type newFunc returns, under
// resourcePrefix (e.g. "/virtualmachines"). newListFunc must return the
// kind's list type. It fails with an error wrapping ErrBackend when the
// type is not registered with the backend.
func New(backend Backend, resourcePrefix string, newFunc, newListFunc func() runtime.Object) (*Storage, error) {
	if backend == nil || reflect.ValueOf(backend).IsNil() {
		return nil, fmt.Errorf("backend: %w: nil", ErrBackend)
	}
	if newFunc == nil || newListFunc == nil {
		return nil, fmt.Errorf("newFunc/newListFunc: %w: required", ErrBackend)
	}
	prefix := "/" + strings.Trim(resourcePrefix, "/")
	if prefix == "/" {
		return nil, fmt.Errorf("resourcePrefix: %w: %q names no resource", ErrBackend, resourcePrefix)
	}
	kind, err := backend.Scheme().KindOf(newFunc())
	if err != nil {
		return nil, fmt.Errorf("newFunc: %w: %w", ErrBackend, err)
	}
	list, ok := newListFunc().(virtkit.ObjectList)
	if !ok {
		return nil, fmt.Errorf("newListFunc: %w: %T is not a list", ErrBackend, newListFunc())
	}
	if lk, err := backend.Scheme().ListKind(list); err != nil || lk.Name != kind.Name {
		return nil, fmt.Errorf("newListFunc: %w: %T is not the list of kind %s", ErrBackend, list, kind.Name)
	}
	return &Storage{
		backend:     backend,
		kind:        kind,
		prefix:      prefix,
		newFunc:     newFunc,
		newListFunc: newListFunc,
		versioner:   storage.APIObjectVersioner{},
	}, nil
}

// Kind returns the store kind the storage serves.
func (s *Storage) Kind() store.Kind { return s.kind }

// Versioner implements storage.Interface.
func (s *Storage) Versioner() storage.Versioner { return s.versioner }

// objectKey parses the key of one object. ok is false for a well-formed key
// that cannot name an object of the kind (a namespaced kind's key without
// a namespace): nothing is stored there.
func (s *Storage) objectKey(key string) (k store.Key, ok bool, err error) {
	rest, err := s.trim(key)
	if err != nil {
		return store.Key{}, false, err
	}
	parts := strings.Split(rest, "/")
	switch {
	case s.kind.ClusterScoped && len(parts) == 1 && parts[0] != "":
		return store.Key{Name: parts[0]}, true, nil
	case !s.kind.ClusterScoped && len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return store.Key{Namespace: parts[0], Name: parts[1]}, true, nil
	case !s.kind.ClusterScoped && len(parts) == 1 && parts[0] != "":
		return store.Key{}, false, nil
	}
	return store.Key{}, false, storage.NewInvalidObjError(key, fmt.Sprintf("not a key of kind %s under %s", s.kind.Name, s.prefix))
}

// trim checks key (as the etcd3 storage does: no "." or ".." segments)
// and returns it without the resource prefix and the surrounding '/'.
func (s *Storage) trim(key string) (string, error) {
	if _, err := storage.PrepareKey(s.prefix, key, false); err != nil {
		return "", err
	}
	if key != s.prefix && !strings.HasPrefix(key, s.prefix+"/") {
		return "", storage.NewInvalidObjError(key, fmt.Sprintf("key is not under the resource prefix %s", s.prefix))
	}
	return strings.Trim(strings.TrimPrefix(key, s.prefix), "/"), nil
}

// keyString is the storage key of a store key.
func (s *Storage) keyString(k store.Key) string {
	if k.Namespace == "" {
		return s.prefix + "/" + k.Name
	}
	return s.prefix + "/" + k.Namespace + "/" + k.Name
}

// object checks that obj is of the kind and sits at key.
func (s *Storage) object(key string, k store.Key, obj runtime.Object) (virtkit.Object, error) {
	vo, ok := obj.(virtkit.Object)
	if !ok || reflect.TypeOf(obj) != reflect.TypeOf(s.kind.Object) {
		return nil, storage.NewInvalidObjError(key, fmt.Sprintf("object is a %T, want %T", obj, s.kind.Object))
	}
	if vo.GetName() != k.Name || vo.GetNamespace() != k.Namespace {
		return nil, storage.NewInvalidObjError(key, fmt.Sprintf("object %s does not sit at this key", store.KeyOf(vo)))
	}
	return vo, nil
}

// output copies obj into out (a pointer of the kind) without TypeMeta, as
// objects come out of a Kubernetes storage: the API server sets apiVersion
// and kind when it encodes.
func output(out runtime.Object, obj virtkit.Object) error {
	dst, ok := out.(virtkit.Object)
	if !ok || reflect.TypeOf(out) != reflect.TypeOf(obj) {
		return fmt.Errorf("output: %T, want %T", out, obj)
	}
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	store.Into(dst, obj)
	return nil
}

func parseRV(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	return strconv.ParseInt(rv, 10, 64)
}

// storageErr translates a store error for key into the storage package's
// errors (which registry.Store turns into API status errors).
func storageErr(key string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return storage.NewKeyNotFoundError(key, 0)
	case errors.Is(err, store.ErrAlreadyExists):
		return storage.NewKeyExistsError(key, 0)
	case errors.Is(err, store.ErrConflict):
		return storage.NewResourceVersionConflictsError(key, 0)
	case errors.Is(err, store.ErrCorrupt):
		return storage.NewCorruptObjError(key, err)
	case errors.Is(err, store.ErrInvalid), errors.Is(err, store.ErrUnknownKind):
		return storage.NewInvalidObjError(key, err.Error())
	case errors.Is(err, store.ErrExpired):
		return expiredErr(err)
	}
	return err
}

// Create implements storage.Interface. A ttl other than 0 is refused: the
// stores keep objects until deleted.
func (s *Storage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	if ttl != 0 {
		return storage.NewInvalidObjError(key, fmt.Sprintf("ttl: %d: objects with a time to live are not supported", ttl))
	}
	k, ok, err := s.objectKey(key)
	if err != nil {
		return err
	}
	if !ok {
		return storage.NewInvalidObjError(key, fmt.Sprintf("kind %s is namespaced: the key needs a namespace", s.kind.Name))
	}
	if version, err := s.versioner.ObjectResourceVersion(obj); err == nil && version != 0 {
		return storage.ErrResourceVersionSetOnCreate
	}
	vo, err := s.object(key, k, obj)
	if err != nil {
		return err
	}
	// The write goes through out when it can hold the object: a shallow
	// copy of obj, whose nested data the store only reads (it stores a
	// deep copy and writes that copy's own copy back into out); obj is left
	// as it was. Without out, a deep copy of obj.
	var next virtkit.Object
	if dst, ok := out.(virtkit.Object); ok && reflect.TypeOf(out) == reflect.TypeOf(obj) {
		store.Into(dst, vo)
		next = dst
	} else {
		next = vo.DeepCopyObject().(virtkit.Object)
	}
	// The store stamps apiVersion and kind from the kind's registration,
	// whatever version the server's objects carry.
	next.GetObjectKind().SetGroupVersionKind(emptyGVK)
	if err := s.versioner.PrepareObjectForStorage(next); err != nil {
		return fmt.Errorf("PrepareObjectForStorage failed: %w", err)
	}
	if err := s.backend.CreateRaw(ctx, next); err != nil {
		return storageErr(key, err)
	}
	if next == out {
		next.GetObjectKind().SetGroupVersionKind(emptyGVK)
		return nil
	}
	if out != nil {
		return output(out, next)
	}
	return nil
}

// Get implements storage.Interface. The object is read from the store's
// current state, which satisfies every resourceVersion not newer than it.
func (s *Storage) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	k, ok, err := s.objectKey(key)
	if err != nil {
		return err
	}
	if err := s.checkMinimumRV(ctx, opts.ResourceVersion); err != nil {
		return err
	}
	obj := s.kind.New()
	if ok {
		err = s.backend.Get(ctx, k, obj)
	} else {
		err = fmt.Errorf("%s: %w", key, store.ErrNotFound)
	}
	if errors.Is(err, store.ErrNotFound) && opts.IgnoreNotFound {
		return runtime.SetZeroValue(objPtr)
	}
	if err != nil {
		return storageErr(key, err)
	}
	return output(objPtr, obj)
}

// current returns the store's current resourceVersion.
func (s *Storage) current(ctx context.Context) (uint64, error) {
	rv, err := s.backend.ResourceVersion(ctx)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(rv, 10, 64)
}

// checkMinimumRV fails with a "too large resource version" error when rv
// (a not-older-than bound) is newer than the store.
func (s *Storage) checkMinimumRV(ctx context.Context, rv string) error {
	if rv == "" || rv == "0" {
		return nil
	}
	want, err := s.versioner.ParseResourceVersion(rv)
	if err != nil {
		return err
	}
	cur, err := s.current(ctx)
	if err != nil {
		return err
	}
	if want > cur {
		return storage.NewTooLargeResourceVersionError(want, cur, 0)
	}
	return nil
}

// read returns the current object at k (from the suggestion when it is
// given and not stale is not known: callers retry on conflict).
func (s *Storage) read(ctx context.Context, k store.Key) (virtkit.Object, error) {
	obj := s.kind.New()
	if err := s.backend.Get(ctx, k, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// suggested returns a copy of the cached object, if it is of the kind.
func (s *Storage) suggested(cached runtime.Object) virtkit.Object {
	if cached == nil || reflect.TypeOf(cached) != reflect.TypeOf(s.kind.Object) || reflect.ValueOf(cached).IsNil() {
		return nil
	}
	return cached.DeepCopyObject().(virtkit.Object)
}

// Delete implements storage.Interface: preconditions and validateDeletion
// are checked against the current object, which is then removed if it has
// not changed meanwhile (else it is read again and checked again).
func (s *Storage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	if opts.ExpectTransformOrDecodeError {
		return storage.NewInvalidObjError(key, "expectTransformOrDecodeError: unsafe deletion of corrupt objects is not supported; repair the key in the backend")
	}
	k, ok, err := s.objectKey(key)
	if err != nil {
		return err
	}
	if !ok {
		return storage.NewKeyNotFoundError(key, 0)
	}
	cur := s.suggested(cachedExistingObject)
	fromCache := cur != nil
	if cur == nil {
		if cur, err = s.read(ctx, k); err != nil {
			return storageErr(key, err)
		}
	}
	// refresh replaces a cached state that failed a check with the
	// current one; the check's error stands when nothing changed.
	refresh := func(checkErr error) error {
		cachedRV := cur.GetResourceVersion()
		fresh, err := s.read(ctx, k)
		if err != nil {
			return storageErr(key, err)
		}
		cur, fromCache = fresh, false
		if fresh.GetResourceVersion() == cachedRV {
			return checkErr
		}
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if preconditions != nil {
			if err := preconditions.Check(key, cur); err != nil {
				if !fromCache {
					return err
				}
				if err := refresh(err); err != nil {
					return err
				}
				continue
			}
		}
		if err := validateDeletion(ctx, cur); err != nil {
			if !fromCache {
				return err
			}
			if err := refresh(err); err != nil {
				return err
			}
			continue
		}
		last := cur.DeepCopyObject().(virtkit.Object)
		err := s.backend.DeleteRaw(ctx, last)
		switch {
		case err == nil:
			if out != nil {
				return output(out, last)
			}
			return nil
		case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound) && fromCache:
			if cur, err = s.read(ctx, k); err != nil {
				return storageErr(key, err)
			}
			fromCache = false
			continue
		}
		return storageErr(key, err)
	}
}

// GuaranteedUpdate implements storage.Interface.
func (s *Storage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	k, ok, err := s.objectKey(key)
	if err != nil {
		return err
	}
	if !ok && !ignoreNotFound {
		return storage.NewKeyNotFoundError(key, 0)
	}
	cur := s.suggested(cachedExistingObject)
	fromCache := cur != nil
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		exists := true
		if cur == nil {
			if ok {
				cur, err = s.read(ctx, k)
			} else {
				err = store.ErrNotFound
			}
			switch {
			case errors.Is(err, store.ErrNotFound) && ignoreNotFound:
				cur, exists = s.kind.New(), false
			case err != nil:
				return storageErr(key, err)
			}
		}
		// A cached state that fails a check is replaced by the current
		// one; the check's error stands when nothing changed.
		retry := func(checkErr error) error {
			if !fromCache {
				return checkErr
			}
			cachedRV := cur.GetResourceVersion()
			fresh, err := s.read(ctx, k)
			if err != nil {
				return storageErr(key, err)
			}
			cur, fromCache = fresh, false
			if fresh.GetResourceVersion() == cachedRV {
				return checkErr
			}
			return nil
		}
		if preconditions != nil && exists {
			if err := preconditions.Check(key, cur); err != nil {
				if err := retry(err); err != nil {
					return err
				}
				continue
			}
		}
		rv, _ := s.versioner.ObjectResourceVersion(cur)
		input := cur.DeepCopyObject()
		ret, _, err := tryUpdate(input, storage.ResponseMeta{ResourceVersion: rv})
		if err != nil {
			if err := retry(err); err != nil {
				return err
			}
			continue
		}
		next, isObj := ret.(virtkit.Object)
		if !isObj || reflect.TypeOf(ret) != reflect.TypeOf(s.kind.Object) {
			return storage.NewInvalidObjError(key, fmt.Sprintf("tryUpdate returned a %T, want %T", ret, s.kind.Object))
		}
		next = next.DeepCopyObject().(virtkit.Object)
		next.GetObjectKind().SetGroupVersionKind(emptyGVK)
		if exists && unchanged(cur, next) {
			if fromCache {
				// The suggestion may be stale: confirm against the store.
				cur, fromCache = nil, false
				continue
			}
			return output(destination, cur)
		}
		if exists && (next.GetName() != k.Name || next.GetNamespace() != k.Namespace) {
			return storage.NewInvalidObjError(key, fmt.Sprintf("tryUpdate moved the object to %s", store.KeyOf(next)))
		}
		if exists {
			next.SetResourceVersion(cur.GetResourceVersion())
			err = s.backend.ReplaceRaw(ctx, next)
		} else {
			if _, err := s.object(key, k, next); err != nil {
				return err
			}
			next.SetResourceVersion("")
			err = s.backend.CreateRaw(ctx, next)
		}
		switch {
		case err == nil:
			return output(destination, next)
		case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrAlreadyExists):
			cur, fromCache = nil, false
			continue
		}
		return storageErr(key, err)
	}
}

// unchanged reports whether next holds what cur does, resourceVersion and
// type aside (nil and empty slices and maps alike, as they serialize
// alike): then GuaranteedUpdate writes nothing. It compares in place,
// without copies or encoding; both are the caller's own objects, whose
// resourceVersion and type are restored.
func unchanged(cur, next virtkit.Object) bool {
	rvCur, rvNext := cur.GetResourceVersion(), next.GetResourceVersion()
	gvkCur, gvkNext := cur.GetObjectKind().GroupVersionKind(), next.GetObjectKind().GroupVersionKind()
	defer func() {
		cur.SetResourceVersion(rvCur)
		next.SetResourceVersion(rvNext)
		cur.GetObjectKind().SetGroupVersionKind(gvkCur)
		next.GetObjectKind().SetGroupVersionKind(gvkNext)
	}()
	next.SetResourceVersion(rvCur)
	next.GetObjectKind().SetGroupVersionKind(gvkCur)
	return sameContent.DeepEqual(cur, next)
}

// sameContent compares objects field by field, treating nil and empty
// slices and maps as equal, and times by their instant: what encodes the
// same.
var sameContent = conversion.EqualitiesOrDie(
	func(a, b metav1.Time) bool { return a.Equal(&b) },
	func(a, b resource.Quantity) bool { return a.Equal(b) && a.String() == b.String() },
)
