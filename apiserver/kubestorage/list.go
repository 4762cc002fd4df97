package kubestorage

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// scope is what a list or watch key covers: a namespace ("" all), or
// nothing at all (a prefix no object key can be under).
type scope struct {
	namespace string
	// name, for a non-recursive key, is the one object's name.
	name  string
	empty bool
	// keyPrefix is the storage key every covered object's key starts with.
	keyPrefix string
}

// listScope parses a list or watch key.
func (s *Storage) listScope(key string, recursive bool) (scope, error) {
	if !recursive {
		k, ok, err := s.objectKey(key)
		var invalid *storage.StorageError
		if errors.As(err, &invalid) && invalid.Code == storage.ErrCodeInvalidObj {
			// No object can sit at such a key: the list is empty.
			return scope{empty: true, keyPrefix: key}, nil
		}
		if err != nil {
			return scope{}, err
		}
		if !ok {
			return scope{empty: true, keyPrefix: key}, nil
		}
		return scope{namespace: k.Namespace, name: k.Name, keyPrefix: s.keyString(k)}, nil
	}
	rest, err := s.trim(key)
	if err != nil {
		return scope{}, err
	}
	if rest == "" {
		return scope{keyPrefix: s.prefix + "/"}, nil
	}
	if s.kind.ClusterScoped || strings.Contains(rest, "/") {
		return scope{empty: true, keyPrefix: s.prefix + "/" + rest + "/"}, nil
	}
	return scope{namespace: rest, keyPrefix: s.prefix + "/" + rest + "/"}, nil
}

func (sc scope) covers(obj virtkit.Object) bool {
	if sc.empty {
		return false
	}
	return (sc.namespace == "" || obj.GetNamespace() == sc.namespace) && (sc.name == "" || obj.GetName() == sc.name)
}

// newList returns an empty list of the kind.
func (s *Storage) newList() virtkit.ObjectList {
	return reflect.New(reflect.TypeOf(s.kind.List).Elem()).Interface().(virtkit.ObjectList)
}

// labelSelector is the predicate's label selector as a store filter (nil
// for everything).
func labelSelector(p storage.SelectionPredicate) labels.Selector {
	if p.Label == nil || p.Label.Empty() {
		return nil
	}
	return p.Label
}

// snapshot reads the objects the scope covers, matching sel, at rev (0:
// now), sorted by key, and the resourceVersion read at.
func (s *Storage) snapshot(ctx context.Context, sc scope, sel labels.Selector, rev int64) ([]virtkit.Object, int64, error) {
	list := s.newList()
	opts := store.ListOptions{Namespace: sc.namespace, LabelSelector: sel}
	var err error
	if rev > 0 {
		err = s.backend.ListAt(ctx, list, opts, fmt.Sprint(rev))
	} else {
		err = s.backend.List(ctx, list, opts)
	}
	if err != nil {
		return nil, 0, err
	}
	listRV, err := parseRV(list.GetResourceVersion())
	if err != nil {
		return nil, 0, fmt.Errorf("%s list: resourceVersion %q: %w", s.kind.Name, list.GetResourceVersion(), err)
	}
	if listRV == 0 {
		return nil, 0, fmt.Errorf("%s list: %w: the store is at resourceVersion 0, which Kubernetes reads as \"any version\"; "+
			"create the memory store with store.Options.StartResourceVersion 1", s.kind.Name, ErrBackend)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, 0, err
	}
	out := make([]virtkit.Object, 0, len(items))
	for _, it := range items {
		obj, ok := it.(virtkit.Object)
		if ok && sc.covers(obj) {
			out = append(out, obj)
		}
	}
	return out, listRV, nil
}

// GetList implements storage.Interface. Lists are read at the store's
// current resourceVersion, or at the one a continue token or an Exact
// match names (a page of a list is consistent with its first page).
func (s *Storage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	sc, err := s.listScope(key, opts.Recursive)
	if err != nil {
		return err
	}
	if _, err := meta.GetItemsPtr(listObj); err != nil {
		return err
	}
	withRev, continueKey, err := storage.ValidateListOptions(sc.keyPrefix, s.versioner, opts)
	if err != nil {
		return err
	}
	pred := opts.Predicate
	objs, rev, err := s.snapshot(ctx, sc, labelSelector(pred), withRev)
	if err != nil {
		return s.listErr(ctx, err, withRev, continueKey, sc.keyPrefix)
	}
	if withRev == 0 {
		if err := s.validateMinimumRV(opts.ResourceVersion, uint64(rev)); err != nil {
			return err
		}
	}
	var (
		items   []runtime.Object
		lastKey string
		hasMore bool
		count   int64
	)
	paging := pred.Limit > 0
	for _, obj := range objs {
		k := s.keyString(store.KeyOf(obj))
		if continueKey != "" && k < continueKey {
			continue
		}
		count++
		if hasMore {
			continue // counting what remains
		}
		if paging && int64(len(items)) >= pred.Limit {
			hasMore = true
			continue
		}
		lastKey = k
		ok, err := pred.Matches(obj)
		if err != nil {
			return err
		}
		if ok {
			obj.GetObjectKind().SetGroupVersionKind(emptyGVK)
			items = append(items, obj)
		}
	}
	if err := meta.SetList(listObj, items); err != nil {
		return err
	}
	cont, remaining, err := storage.PrepareContinueToken(lastKey, sc.keyPrefix, rev, count, hasMore, opts)
	if err != nil {
		return err
	}
	return s.versioner.UpdateList(listObj, uint64(rev), cont, remaining)
}

// validateMinimumRV enforces a not-older-than resourceVersion on what was
// read at actual.
func (s *Storage) validateMinimumRV(minimum string, actual uint64) error {
	if minimum == "" {
		return nil
	}
	want, err := s.versioner.ParseResourceVersion(minimum)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err))
	}
	if want > actual {
		return storage.NewTooLargeResourceVersionError(want, actual, 0)
	}
	return nil
}

// Messages of the expired errors, as the etcd3 storage words them.
const (
	expiredMsg            = "The resourceVersion for the provided list is too old."
	inconsistentContinues = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
		"objects that were created, modified, or deleted between the time the first chunk was returned and now may " +
		"show up in the list."
)

func expiredErr(err error) error {
	return apierrors.NewResourceExpired(fmt.Sprintf("%s (%v)", expiredMsg, err))
}

// listErr translates a failed list read at withRev: too new a version is
// "too large", too old an expired one (with a token to continue at the
// current version when paging).
func (s *Storage) listErr(ctx context.Context, err error, withRev int64, continueKey, keyPrefix string) error {
	switch {
	case errors.Is(err, store.ErrInvalid) && withRev > 0:
		cur, cerr := s.current(ctx)
		if cerr != nil {
			cur = 0
		}
		if uint64(withRev) > cur {
			return storage.NewTooLargeResourceVersionError(uint64(withRev), cur, 0)
		}
	case errors.Is(err, store.ErrExpired) && continueKey != "":
		token, terr := storage.EncodeContinue(continueKey, keyPrefix, -1)
		if terr != nil {
			return apierrors.NewResourceExpired(expiredMsg)
		}
		status := apierrors.NewResourceExpired(inconsistentContinues)
		status.ErrStatus.ListMeta.Continue = token
		return status
	case errors.Is(err, store.ErrExpired):
		return apierrors.NewResourceExpired(expiredMsg)
	}
	return storageErr(keyPrefix, err)
}

// Stats implements storage.Interface: the number of objects of the kind.
func (s *Storage) Stats(ctx context.Context) (storage.Stats, error) {
	objs, _, err := s.snapshot(ctx, scope{keyPrefix: s.prefix + "/"}, nil, 0)
	if err != nil {
		return storage.Stats{}, err
	}
	return storage.Stats{ObjectCount: int64(len(objs))}, nil
}

// ReadinessCheck implements storage.Interface: the store answers.
func (s *Storage) ReadinessCheck() error {
	ctx, cancel := context.WithTimeout(context.Background(), readinessTimeout)
	defer cancel()
	if _, err := s.backend.ResourceVersion(ctx); err != nil {
		return fmt.Errorf("%w: %w", storage.ErrStorageNotReady, err)
	}
	return nil
}

// RequestWatchProgress implements storage.Interface. Watches here do not
// send progress notifications; there is nothing to request.
func (s *Storage) RequestWatchProgress(context.Context) error { return nil }

// GetCurrentResourceVersion implements storage.Interface.
func (s *Storage) GetCurrentResourceVersion(ctx context.Context) (uint64, error) {
	return s.current(ctx)
}

// EnableResourceSizeEstimation implements storage.Interface; sizes are not
// estimated (Stats reports no average size).
func (s *Storage) EnableResourceSizeEstimation(storage.KeysFunc) error { return nil }

// CompactRevision implements storage.Interface: compactions are not
// observed, so 0.
func (s *Storage) CompactRevision() int64 { return 0 }
