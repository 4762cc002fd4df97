package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/store"
)

// Backend writes to a store's backend behind the store's back, as another
// tool would (etcdctl put, a restore, a bad migration script). Only stores
// whose backend can hold bytes the store did not write have one; the
// memory store holds only objects it built itself and so cannot hold a
// corrupt value.
type Backend interface {
	// PutRaw stores data, unchecked, as the value of key of kind.
	PutRaw(ctx context.Context, kind string, key store.Key, data []byte) error
	// DeleteRaw removes key of kind, whatever its value.
	DeleteRaw(ctx context.Context, kind string, key store.Key) error
	// StorageKey is the backend's own name of key of kind (what
	// CorruptError.StorageKey must name).
	StorageKey(kind string, key store.Key) string
}

// Corrupt values the suite writes: each is a defect a store must detect.
var corruptValues = []struct {
	name   string
	data   string
	reason store.CorruptReason
}{
	{"not JSON", `not json{`, store.CorruptJSON},
	{"truncated", `{"apiVersion":"test.virtkit.io/v1","kind":"Widget","metadata":{"name":"p"`, store.CorruptJSON},
	{"wrong field type", `{"kind":"Widget","metadata":{"name":"p","namespace":"ns"},"spec":{"size":"big"}}`, store.CorruptJSON},
	{"JSON null", `null`, store.CorruptKey},
	{"another kind", `{"apiVersion":"test.virtkit.io/v1","kind":"Gadget","metadata":{"name":"p","namespace":"ns"}}`, store.CorruptKind},
	{"another apiVersion", `{"apiVersion":"test.virtkit.io/v2","kind":"Widget","metadata":{"name":"p","namespace":"ns"}}`, store.CorruptKind},
	{"another name", `{"apiVersion":"test.virtkit.io/v1","kind":"Widget","metadata":{"name":"q","namespace":"ns"}}`, store.CorruptKey},
	{"another namespace", `{"apiVersion":"test.virtkit.io/v1","kind":"Widget","metadata":{"name":"p","namespace":"other"}}`, store.CorruptKey},
}

// validRaw is a valid Widget ns/p as another tool would write it.
const validRaw = `{"apiVersion":"test.virtkit.io/v1","kind":"Widget","metadata":{"name":"p","namespace":"ns","uid":"u-p"},"spec":{"size":7}}`

// RunCorrupt runs the suite for stores whose backend can hold values the
// store cannot decode: a corrupt value costs only itself. List and Watch
// skip it and go on, Get, Update and Delete of its key fail with a
// *store.CorruptError (wrapping store.ErrCorrupt) that names the storage
// key, and a repair (a valid rewrite, or a delete) is picked up by
// watchers. newStore is as for Run and also returns the store's Backend.
func RunCorrupt(t *testing.T, newStore func(t *testing.T) (store.Store, Backend)) {
	for _, cv := range corruptValues {
		t.Run("Skipped/"+cv.name, func(t *testing.T) {
			s, b := newStore(t)
			testCorruptSkipped(t, s, b, []byte(cv.data), cv.reason)
		})
	}
	t.Run("WatchGoesOn", func(t *testing.T) {
		s, b := newStore(t)
		testCorruptWatch(t, s, b)
	})
	t.Run("WatchInitialEvents", func(t *testing.T) {
		s, b := newStore(t)
		testCorruptInitialEvents(t, s, b)
	})
}

func corruptKey() store.Key { return store.Key{Namespace: "ns", Name: "p"} }

func testCorruptSkipped(t *testing.T, s store.Store, b Backend, data []byte, reason store.CorruptReason) {
	ctx := ctxT(t)
	create(t, s, widget("ns", "a", 1, nil))
	require.NoError(t, b.PutRaw(ctx, "Widget", corruptKey(), data))
	create(t, s, widget("ns", "z", 1, nil))

	list := &WidgetList{}
	require.NoError(t, s.List(ctx, list, store.ListOptions{}), "a corrupt value must not fail the list")
	assert.Equal(t, []string{"ns/a", "ns/z"}, names(list))
	require.NoError(t, s.List(ctx, list, store.ListOptions{Namespace: "ns"}))
	assert.Equal(t, []string{"ns/a", "ns/z"}, names(list))

	err := s.Get(ctx, corruptKey(), &Widget{})
	requireCorrupt(t, err, b.StorageKey("Widget", corruptKey()), reason)

	w := widget("ns", "p", 2, nil)
	w.ResourceVersion = "1"
	require.ErrorIs(t, s.Update(ctx, w), store.ErrCorrupt, "Update cannot build on a corrupt value")
	require.ErrorIs(t, s.UpdateStatus(ctx, w), store.ErrCorrupt)
	require.ErrorIs(t, s.Delete(ctx, w, store.DeleteOptions{}), store.ErrCorrupt,
		"Delete cannot honour finalizers it cannot read; repair in the backend")
	require.ErrorIs(t, s.Create(ctx, widget("ns", "p", 1, nil)), store.ErrAlreadyExists,
		"the key is taken: Create must not overwrite it")

	if r, ok := s.(store.CorruptReporter); ok {
		got := r.CorruptObjects()
		require.Len(t, got, 1)
		assert.Equal(t, b.StorageKey("Widget", corruptKey()), got[0].StorageKey)
		assert.Equal(t, reason, got[0].Reason)
		assert.Equal(t, "Widget", got[0].Kind)
	}

	// Repair by a valid rewrite.
	require.NoError(t, b.PutRaw(ctx, "Widget", corruptKey(), []byte(validRaw)))
	got := &Widget{}
	require.NoError(t, s.Get(ctx, corruptKey(), got))
	assert.Equal(t, 7, got.Spec.Size)
	assert.Equal(t, "Widget", got.Kind, "objects come out self-describing")
	require.NoError(t, s.List(ctx, list, store.ListOptions{}))
	assert.Equal(t, []string{"ns/a", "ns/p", "ns/z"}, names(list))
	if r, ok := s.(store.CorruptReporter); ok {
		assert.Empty(t, r.CorruptObjects(), "a repaired key is forgotten")
	}
}

func requireCorrupt(t *testing.T, err error, storageKey string, reason store.CorruptReason) {
	t.Helper()
	requireWrapped(t, err, store.ErrCorrupt)
	var ce *store.CorruptError
	require.True(t, errors.As(err, &ce), "want a *store.CorruptError, got %T: %v", err, err)
	assert.Equal(t, storageKey, ce.StorageKey)
	assert.Equal(t, reason, ce.Reason, "%v", err)
	assert.Contains(t, err.Error(), storageKey, "the message names the key to repair")
	assert.NotEmpty(t, ce.ResourceVersion)
}

func testCorruptWatch(t *testing.T, s store.Store, b Backend) {
	ctx := ctxT(t)
	list := &WidgetList{}
	require.NoError(t, s.List(ctx, list, store.ListOptions{}))
	all, err := s.Watch(ctx, &WidgetList{}, store.WatchOptions{ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	ns, err := s.Watch(ctx, &WidgetList{}, store.WatchOptions{Namespace: "ns"})
	require.NoError(t, err)
	bad := []byte(`not json{`)
	k := corruptKey()

	// 1. A new corrupt key is not an event; the watch goes on.
	require.NoError(t, b.PutRaw(ctx, "Widget", k, bad))
	create(t, s, widget("ns", "a", 1, nil))
	// 2. A valid rewrite is Added.
	require.NoError(t, b.PutRaw(ctx, "Widget", k, []byte(validRaw)))
	// 3. Corrupting a known object is Deleted for its watchers (a relist
	// would not show it); later writes still arrive.
	require.NoError(t, b.PutRaw(ctx, "Widget", k, bad))
	// 4. Corrupt again, then deleted: no event (the watchers no longer
	// have it).
	require.NoError(t, b.PutRaw(ctx, "Widget", k, []byte(`{"kind":"Gadget"}`)))
	require.NoError(t, b.DeleteRaw(ctx, "Widget", k))
	create(t, s, widget("ns", "b", 1, nil))
	// 5. Written valid from scratch: Added.
	require.NoError(t, b.PutRaw(ctx, "Widget", k, []byte(validRaw)))

	want := []seen{
		{store.Added, "ns/a"},
		{store.Added, "ns/p"},
		{store.Deleted, "ns/p"},
		{store.Added, "ns/b"},
		{store.Added, "ns/p"},
	}
	for name, ch := range map[string]<-chan store.Event{"from a list": all, "one namespace": ns} {
		var got []seen
		for range want {
			got = append(got, nextSeen(t, ch))
		}
		assert.Equal(t, want, got, "watch %s", name)
	}
	if r, ok := s.(store.CorruptReporter); ok {
		assert.Empty(t, r.CorruptObjects(), "the deleted and the rewritten value are forgotten")
	}
}

func testCorruptInitialEvents(t *testing.T, s store.Store, b Backend) {
	ctx := ctxT(t)
	create(t, s, widget("ns", "a", 1, nil))
	require.NoError(t, b.PutRaw(ctx, "Widget", corruptKey(), []byte(`not json{`)))
	ch, err := s.Watch(ctx, &WidgetList{}, store.WatchOptions{SendInitialEvents: true})
	require.NoError(t, err, "a corrupt value must not fail the initial list")
	assert.Equal(t, seen{store.Added, "ns/a"}, nextSeen(t, ch))
	create(t, s, widget("ns", "b", 1, nil))
	assert.Equal(t, seen{store.Added, "ns/b"}, nextSeen(t, ch))
}
