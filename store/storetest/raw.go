package storetest

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit/store"
)

// RawStore is a store with raw writes (store.Raw).
type RawStore interface {
	store.Store
	store.Raw
	store.Compacter
}

// RunRaw runs the suite of store.Raw. newStore is called once per subtest
// and must return an empty store that knows Kinds(), which nobody else
// writes to during the subtest.
func RunRaw(t *testing.T, newStore func(t *testing.T) RawStore) {
	tests := []struct {
		name string
		fn   func(*testing.T, RawStore)
	}{
		{"CreateRawKeepsMetadata", testCreateRaw},
		{"CreateRawInvalid", testCreateRawInvalid},
		{"ReplaceRaw", testReplaceRaw},
		{"DeleteRaw", testDeleteRaw},
		{"ListAt", testListAt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

func rawWidget(name string) *Widget {
	return &Widget{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: name, UID: types.UID("uid-" + name), Generation: 7,
			Finalizers: []string{"example.com/keep"},
		},
		Spec:   WidgetSpec{Size: 1},
		Status: WidgetStatus{Phase: "Given"},
	}
}

func testCreateRaw(t *testing.T, s RawStore) {
	ctx := context.Background()
	w := rawWidget("a")
	require.NoError(t, s.CreateRaw(ctx, w))
	assert.NotEmpty(t, w.ResourceVersion)
	assert.Equal(t, "Widget", w.Kind, "apiVersion and kind come from the registration")

	got := &Widget{}
	require.NoError(t, s.Get(ctx, store.Key{Namespace: "default", Name: "a"}, got))
	assert.Equal(t, types.UID("uid-a"), got.UID, "the uid given is kept")
	assert.Equal(t, int64(7), got.Generation, "the generation given is kept")
	assert.Equal(t, "Given", got.Status.Phase)
	assert.Equal(t, []string{"example.com/keep"}, got.Finalizers)
	assert.Equal(t, w.ResourceVersion, got.ResourceVersion)
	assert.True(t, got.CreationTimestamp.IsZero(), "no creationTimestamp is set")

	rv, err := s.ResourceVersion(ctx)
	require.NoError(t, err)
	assert.Equal(t, w.ResourceVersion, rv, "the store is at its latest write")

	require.ErrorIs(t, s.CreateRaw(ctx, rawWidget("a")), store.ErrAlreadyExists)
}

func testCreateRawInvalid(t *testing.T, s RawStore) {
	ctx := context.Background()
	withRV := rawWidget("b")
	withRV.ResourceVersion = "5"
	noName := rawWidget("")
	noName.GenerateName = "gen-"
	noNamespace := rawWidget("c")
	noNamespace.Namespace = ""
	for name, w := range map[string]*Widget{"resourceVersion set": withRV, "no name": noName, "no namespace": noNamespace} {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, s.CreateRaw(ctx, w), store.ErrInvalid)
		})
	}
}

func testReplaceRaw(t *testing.T, s RawStore) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := rawWidget("a")
	require.NoError(t, s.CreateRaw(ctx, w))
	events, err := s.Watch(ctx, &WidgetList{}, store.WatchOptions{ResourceVersion: w.ResourceVersion})
	require.NoError(t, err)

	stale := w.DeepCopy()
	next := w.DeepCopy()
	next.Spec.Size = 2
	next.Status.Phase = "Replaced"
	require.NoError(t, s.ReplaceRaw(ctx, next))
	assert.NotEqual(t, w.ResourceVersion, next.ResourceVersion)

	got := &Widget{}
	require.NoError(t, s.Get(ctx, store.Key{Namespace: "default", Name: "a"}, got))
	assert.Equal(t, int64(7), got.Generation, "no generation rule applies")
	assert.Equal(t, "Replaced", got.Status.Phase, "the status given is written")
	assert.Equal(t, next.ResourceVersion, got.ResourceVersion)

	ev := <-events
	assert.Equal(t, store.Modified, ev.Type)
	assert.Equal(t, next.ResourceVersion, ev.Object.GetResourceVersion())

	stale.Spec.Size = 3
	require.ErrorIs(t, s.ReplaceRaw(ctx, stale), store.ErrConflict)
	missing := rawWidget("missing")
	missing.ResourceVersion = next.ResourceVersion
	require.ErrorIs(t, s.ReplaceRaw(ctx, missing), store.ErrNotFound)

	// A Store update after a raw one bases on the raw write's version.
	got.Spec.Size = 4
	require.NoError(t, s.Update(ctx, got))
	assert.Equal(t, int64(8), got.Generation, "Store.Update keeps its own rules")
}

func testDeleteRaw(t *testing.T, s RawStore) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := rawWidget("a")
	require.NoError(t, s.CreateRaw(ctx, w))
	events, err := s.Watch(ctx, &WidgetList{}, store.WatchOptions{ResourceVersion: w.ResourceVersion})
	require.NoError(t, err)

	stale := w.DeepCopy()
	stale.ResourceVersion = "1"
	if stale.ResourceVersion == w.ResourceVersion {
		stale.ResourceVersion = "2"
	}
	require.ErrorIs(t, s.DeleteRaw(ctx, stale), store.ErrConflict)

	del := &Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a", ResourceVersion: w.ResourceVersion}}
	require.NoError(t, s.DeleteRaw(ctx, del), "finalizers do not hold a raw delete")
	assert.Equal(t, types.UID("uid-a"), del.UID, "filled with the last state")
	deletedAt, err := strconv.ParseUint(del.ResourceVersion, 10, 64)
	require.NoError(t, err)
	createdAt, err := strconv.ParseUint(w.ResourceVersion, 10, 64)
	require.NoError(t, err)
	assert.Greater(t, deletedAt, createdAt, "at the deletion's version")

	ev := <-events
	assert.Equal(t, store.Deleted, ev.Type)
	assert.Equal(t, del.ResourceVersion, ev.Object.GetResourceVersion())
	require.ErrorIs(t, s.Get(ctx, store.Key{Namespace: "default", Name: "a"}, &Widget{}), store.ErrNotFound)
	require.ErrorIs(t, s.DeleteRaw(ctx, &Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}}), store.ErrNotFound)

	// An empty resourceVersion deletes whatever is stored.
	b := rawWidget("b")
	require.NoError(t, s.CreateRaw(ctx, b))
	require.NoError(t, s.DeleteRaw(ctx, &Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "b"}}))
}

func testListAt(t *testing.T, s RawStore) {
	ctx := context.Background()
	a, b := rawWidget("a"), rawWidget("b")
	require.NoError(t, s.CreateRaw(ctx, a))
	require.NoError(t, s.CreateRaw(ctx, b))
	at := b.ResourceVersion

	// After at: a changes, b goes, c comes, and another kind moves on.
	a2 := a.DeepCopy()
	a2.Spec.Size = 9
	require.NoError(t, s.ReplaceRaw(ctx, a2))
	require.NoError(t, s.DeleteRaw(ctx, b.DeepCopy()))
	require.NoError(t, s.CreateRaw(ctx, rawWidget("c")))
	require.NoError(t, s.CreateRaw(ctx, &Gadget{ObjectMeta: metav1.ObjectMeta{Name: "g"}}))

	list := &WidgetList{}
	require.NoError(t, s.ListAt(ctx, list, store.ListOptions{}, at))
	assert.Equal(t, at, list.ResourceVersion)
	require.Len(t, list.Items, 2)
	assert.Equal(t, "a", list.Items[0].Name)
	assert.Equal(t, 1, list.Items[0].Spec.Size, "a as it was at the version")
	assert.Equal(t, a.ResourceVersion, list.Items[0].ResourceVersion)
	assert.Equal(t, "b", list.Items[1].Name)

	now, err := s.ResourceVersion(ctx)
	require.NoError(t, err)
	require.NoError(t, s.ListAt(ctx, list, store.ListOptions{Namespace: "default"}, now))
	require.Len(t, list.Items, 2)
	assert.Equal(t, []string{"a", "c"}, []string{list.Items[0].Name, list.Items[1].Name})
	assert.Equal(t, 9, list.Items[0].Spec.Size)

	nowN, err := strconv.ParseUint(now, 10, 64)
	require.NoError(t, err)
	require.ErrorIs(t, s.ListAt(ctx, list, store.ListOptions{}, strconv.FormatUint(nowN+100, 10)), store.ErrInvalid, "a future version")
	require.ErrorIs(t, s.ListAt(ctx, list, store.ListOptions{}, "x"), store.ErrInvalid)

	require.NoError(t, s.Compact(ctx))
	require.ErrorIs(t, s.ListAt(ctx, list, store.ListOptions{}, at), store.ErrExpired, "history compacted")
}
