package storetest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// eventTimeout only guards against a hung watch; it is not a latency bound.
const eventTimeout = 30 * time.Second

// Run runs the conformance suite. newStore is called once per subtest and
// must return an empty store that knows Kinds() and virtkit's default kinds,
// which nobody else writes to during the subtest; it registers its own
// cleanup with t.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"CreateGet", testCreateGet},
		{"CreateInvalid", testCreateInvalid},
		{"GenerateName", testGenerateName},
		{"ResourceVersionMonotonic", testResourceVersionMonotonic},
		{"Update", testUpdate},
		{"UpdateConflict", testUpdateConflict},
		{"UpdateStatus", testUpdateStatus},
		{"UpdateWithStatus", testUpdateWithStatus},
		{"Delete", testDelete},
		{"GracefulDelete", testGracefulDelete},
		{"DeletePreconditions", testDeletePreconditions},
		{"DeletePropagation", testDeletePropagation},
		{"List", testList},
		{"ClusterScoped", testClusterScoped},
		{"DeepCopyIsolation", testDeepCopyIsolation},
		{"ConcurrentUpdates", testConcurrentUpdates},
		{"Watch", testWatch},
		{"WatchFilters", testWatchFilters},
		{"WatchInitialEvents", testWatchInitialEvents},
		{"WatchResume", testWatchResume},
		{"WatchResumeFinalizedDelete", testWatchResumeFinalizedDelete},
		{"WatchExpired", testWatchExpired},
		{"WatchCancel", testWatchCancel},
		{"WatchReadOnly", testWatchReadOnly},
		{"VirtkitKinds", testVirtkitKinds},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

func widget(ns, name string, size int, lbls map[string]string) *Widget {
	return &Widget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Spec:       WidgetSpec{Size: size, Tags: []string{"a"}, Attrs: map[string]string{"k": "v"}},
	}
}

func rv(t *testing.T, obj interface{ GetResourceVersion() string }) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	require.NoError(t, err, "resourceVersion %q must be a decimal uint64", obj.GetResourceVersion())
	return v
}

// requireWrapped checks err matches target and is not the bare sentinel, so
// it carries kind and key.
func requireWrapped(t *testing.T, err, target error) {
	t.Helper()
	require.ErrorIs(t, err, target)
	require.NotEqual(t, target.Error(), err.Error(), "error must be wrapped with kind and key")
}

func create(t *testing.T, s store.Store, obj virtkit.Object) {
	t.Helper()
	require.NoError(t, s.Create(ctxT(t), obj))
}

func testCreateGet(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	before := time.Now().Add(-time.Second)
	w := widget("ns1", "w1", 3, map[string]string{"app": "x"})
	w.Status.Phase = "Initial"
	require.NoError(t, s.Create(ctx, w))
	assert.NotEmpty(t, w.UID)
	assert.NotZero(t, rv(t, w))
	assert.Equal(t, int64(1), w.Generation)
	assert.False(t, w.CreationTimestamp.IsZero())
	assert.False(t, w.CreationTimestamp.Time.Before(before.Truncate(time.Second)), "creationTimestamp %v is from the store's clock", w.CreationTimestamp)
	assert.Nil(t, w.DeletionTimestamp)

	got := &Widget{}
	require.NoError(t, s.Get(ctx, store.Key{Namespace: "ns1", Name: "w1"}, got))
	assert.Equal(t, w.UID, got.UID)
	assert.Equal(t, w.ResourceVersion, got.ResourceVersion)
	assert.Equal(t, metav1.TypeMeta{APIVersion: "test.virtkit.io/v1", Kind: "Widget"}, got.TypeMeta, "objects come out self-describing")
	assert.Equal(t, w.Spec, got.Spec)
	assert.Equal(t, "Initial", got.Status.Phase, "Create keeps the given status")
	assert.Equal(t, map[string]string{"app": "x"}, got.Labels)
	assert.True(t, w.CreationTimestamp.Equal(&got.CreationTimestamp))

	err := s.Create(ctx, widget("ns1", "w1", 1, nil))
	requireWrapped(t, err, store.ErrAlreadyExists)
	assert.Contains(t, err.Error(), "ns1/w1")

	requireWrapped(t, s.Get(ctx, store.Key{Namespace: "ns1", Name: "nope"}, &Widget{}), store.ErrNotFound)
	requireWrapped(t, s.Get(ctx, store.Key{Namespace: "ns2", Name: "w1"}, &Widget{}), store.ErrNotFound)

	// A same-named object of another kind is a different object.
	requireWrapped(t, s.Get(ctx, store.Key{Name: "w1"}, &Gadget{}), store.ErrNotFound)
}

type unregistered struct{ Widget }

func (u *unregistered) DeepCopyObject() runtime.Object {
	return &unregistered{Widget: *u.Widget.DeepCopy()}
}

type unregisteredList struct{ WidgetList }

func (u *unregisteredList) DeepCopyObject() runtime.Object { return u }

func testCreateInvalid(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	tests := []struct {
		name string
		obj  virtkit.Object
		want error
		path string
	}{
		{"no name", widget("ns", "", 1, nil), store.ErrInvalid, "metadata.name"},
		{"no namespace", widget("", "w", 1, nil), store.ErrInvalid, "metadata.namespace"},
		{"slash in name", widget("ns", "a/b", 1, nil), store.ErrInvalid, "metadata.name"},
		{"namespace on cluster-scoped", &Gadget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"}}, store.ErrInvalid, "metadata.namespace"},
		{"resourceVersion set", &Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", ResourceVersion: "5"}}, store.ErrInvalid, "metadata.resourceVersion"},
		{"wrong kind in TypeMeta", &Widget{TypeMeta: metav1.TypeMeta{Kind: "Gadget"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w"}}, store.ErrInvalid, "kind"},
		{"unregistered type", &unregistered{Widget: *widget("ns", "w", 1, nil)}, store.ErrUnknownKind, ""},
		{"nil pointer", (*Widget)(nil), store.ErrInvalid, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Create(ctx, tc.obj)
			require.ErrorIs(t, err, tc.want)
			assert.Contains(t, err.Error(), tc.path)
		})
	}
	list := &WidgetList{}
	require.NoError(t, s.List(ctx, list, store.ListOptions{}))
	assert.Empty(t, list.Items, "nothing invalid was stored")
	require.ErrorIs(t, s.List(ctx, &unregisteredList{}, store.ListOptions{}), store.ErrUnknownKind)
	for _, key := range []store.Key{{Namespace: "ns", Name: "a/b"}, {Namespace: "ns/x", Name: "b"}, {Name: "w"}, {Namespace: "ns"}} {
		requireWrapped(t, s.Get(ctx, key, &Widget{}), store.ErrInvalid)
	}
	requireWrapped(t, s.Get(ctx, store.Key{Namespace: "ns", Name: "g"}, &Gadget{}), store.ErrInvalid)
	require.ErrorIs(t, s.Get(ctx, store.Key{Namespace: "ns", Name: "w"}, &unregistered{}), store.ErrUnknownKind)
	_, err := s.Watch(ctx, &unregisteredList{}, store.WatchOptions{})
	require.ErrorIs(t, err, store.ErrUnknownKind)
	_, err = s.Watch(ctx, &WidgetList{}, store.WatchOptions{ResourceVersion: "abc"})
	require.ErrorIs(t, err, store.ErrInvalid)
}

func testGenerateName(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	names := map[string]bool{}
	for range 5 {
		w := &Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "gen-"}}
		require.NoError(t, s.Create(ctx, w))
		assert.Regexp(t, `^gen-[a-z0-9]{5}$`, w.Name)
		assert.False(t, names[w.Name], "generated names are unique")
		names[w.Name] = true
		require.NoError(t, s.Get(ctx, store.Key{Namespace: "ns", Name: w.Name}, &Widget{}))
	}
}

func testResourceVersionMonotonic(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	var last uint64
	step := func(obj metav1.Object) {
		t.Helper()
		v := rv(t, obj)
		require.Greater(t, v, last, "resourceVersion increases across the store")
		last = v
	}
	w := widget("ns", "w", 1, nil)
	require.NoError(t, s.Create(ctx, w))
	step(w)
	g := &Gadget{ObjectMeta: metav1.ObjectMeta{Name: "g"}}
	require.NoError(t, s.Create(ctx, g))
	step(g)
	w.Spec.Size = 2
	require.NoError(t, s.Update(ctx, w))
	step(w)
	w.Status.Count = 1
	require.NoError(t, s.UpdateStatus(ctx, w))
	step(w)
	list := &WidgetList{}
	require.NoError(t, s.List(ctx, list, store.ListOptions{}))
	assert.GreaterOrEqual(t, rv(t, list), last, "a list's version covers its items")
	require.NoError(t, s.Delete(ctx, g, store.DeleteOptions{}))
	step(g)
}

func testUpdate(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	w := widget("ns", "w", 1, map[string]string{"a": "1"})
	w.Status.Phase = "Running"
	create(t, s, w)
	orig := w.DeepCopy()

	// Metadata-only change: new version, same generation.
	w.Labels["b"] = "2"
	w.Annotations = map[string]string{"note": "x"}
	require.NoError(t, s.Update(ctx, w))
	assert.Greater(t, rv(t, w), rv(t, orig))
	assert.Equal(t, int64(1), w.Generation, "metadata changes do not bump generation")
	assert.Equal(t, map[string]string{"a": "1", "b": "2"}, w.Labels)

	// Spec change: generation+1; status in Update is ignored; system
	// metadata cannot be changed.
	w.Spec.Size = 7
	w.Status.Phase = "Hacked"
	w.UID = types.UID("forged")
	w.Generation = 42
	w.CreationTimestamp = metav1.NewTime(time.Unix(0, 0))
	require.NoError(t, s.Update(ctx, w))
	assert.Equal(t, int64(2), w.Generation)
	assert.Equal(t, "Running", w.Status.Phase, "Update keeps the stored status")
	assert.Equal(t, orig.UID, w.UID)
	assert.True(t, orig.CreationTimestamp.Equal(&w.CreationTimestamp))

	got := &Widget{}
	require.NoError(t, s.Get(ctx, store.KeyOf(w), got))
	assert.Equal(t, 7, got.Spec.Size)
	assert.Equal(t, "Running", got.Status.Phase)
	assert.Equal(t, int64(2), got.Generation)
	assert.Equal(t, w.ResourceVersion, got.ResourceVersion)

	// An update that changes nothing writes nothing.
	before := got.ResourceVersion
	require.NoError(t, s.Update(ctx, got))
	assert.Equal(t, before, got.ResourceVersion, "no-op update keeps the resourceVersion")
	assert.Equal(t, int64(2), got.Generation)
	got.TypeMeta = metav1.TypeMeta{}
	require.NoError(t, s.Update(ctx, got))
	assert.Equal(t, before, got.ResourceVersion, "an empty TypeMeta is no change")

	// Missing object.
	requireWrapped(t, s.Update(ctx, &Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone", ResourceVersion: "1"}}), store.ErrNotFound)
}

func testUpdateConflict(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	w := widget("ns", "w", 1, nil)
	create(t, s, w)
	a, b := w.DeepCopy(), w.DeepCopy()
	a.Spec.Size = 2
	require.NoError(t, s.Update(ctx, a))
	b.Spec.Size = 3
	err := s.Update(ctx, b)
	requireWrapped(t, err, store.ErrConflict)
	assert.Contains(t, err.Error(), "Widget ns/w")
	requireWrapped(t, s.UpdateStatus(ctx, b), store.ErrConflict)

	noRV := w.DeepCopy()
	noRV.ResourceVersion = ""
	noRV.Spec.Size = 9
	requireWrapped(t, s.Update(ctx, noRV), store.ErrConflict)

	got := &Widget{}
	require.NoError(t, s.Get(ctx, store.KeyOf(w), got))
	assert.Equal(t, 2, got.Spec.Size, "the losing update left no trace")
}

func testUpdateStatus(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	w := widget("ns", "w", 1, map[string]string{"a": "1"})
	create(t, s, w)
	w.Status = WidgetStatus{Phase: "Running", Count: 3, Notes: []string{"n"}}
	w.Spec.Size = 99         // ignored by UpdateStatus
	w.Labels["sneaky"] = "y" // ignored too
	require.NoError(t, s.UpdateStatus(ctx, w))
	assert.Equal(t, 1, w.Spec.Size, "obj is refreshed with the stored spec")
	assert.Equal(t, int64(1), w.Generation, "status updates never bump generation")

	got := &Widget{}
	require.NoError(t, s.Get(ctx, store.KeyOf(w), got))
	assert.Equal(t, WidgetStatus{Phase: "Running", Count: 3, Notes: []string{"n"}}, got.Status)
	assert.Equal(t, 1, got.Spec.Size)
	assert.Equal(t, map[string]string{"a": "1"}, got.Labels)
	assert.Equal(t, w.ResourceVersion, got.ResourceVersion)

	before := got.ResourceVersion
	require.NoError(t, s.UpdateStatus(ctx, got))
	assert.Equal(t, before, got.ResourceVersion, "no-op status update keeps the resourceVersion")

	requireWrapped(t, s.UpdateStatus(ctx, &Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone", ResourceVersion: "1"}}), store.ErrNotFound)
}

func testDelete(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	w := widget("ns", "w", 1, nil)
	create(t, s, w)
	del := &Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w"}}
	require.NoError(t, s.Delete(ctx, del, store.DeleteOptions{}))
	assert.Equal(t, w.UID, del.UID, "Delete fills obj with the last state")
	requireWrapped(t, s.Get(ctx, store.KeyOf(w), &Widget{}), store.ErrNotFound)
	requireWrapped(t, s.Delete(ctx, del, store.DeleteOptions{}), store.ErrNotFound)

	// The name is free again; the new object has a new uid.
	w2 := widget("ns", "w", 1, nil)
	create(t, s, w2)
	assert.NotEqual(t, w.UID, w2.UID)
	assert.Equal(t, int64(1), w2.Generation)
}

func testGracefulDelete(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	w := widget("ns", "w", 1, nil)
	w.Finalizers = []string{"virtkit.io/a", "virtkit.io/b"}
	create(t, s, w)

	del := w.DeepCopy()
	require.NoError(t, s.Delete(ctx, del, store.DeleteOptions{}))
	require.NotNil(t, del.DeletionTimestamp, "with finalizers, Delete only marks")
	marked := del.ResourceVersion
	assert.NotEqual(t, w.ResourceVersion, marked)

	got := &Widget{}
	require.NoError(t, s.Get(ctx, store.KeyOf(w), got))
	require.NotNil(t, got.DeletionTimestamp)
	assert.Equal(t, []string{"virtkit.io/a", "virtkit.io/b"}, got.Finalizers)

	// Deleting again is a no-op.
	again := w.DeepCopy()
	require.NoError(t, s.Delete(ctx, again, store.DeleteOptions{}))
	assert.Equal(t, marked, again.ResourceVersion)
	assert.True(t, del.DeletionTimestamp.Equal(again.DeletionTimestamp))

	// The deletion mark cannot be cleared by Update, nor finalizers added.
	clear := got.DeepCopy()
	clear.DeletionTimestamp = nil
	clear.Spec.Size = 2
	require.NoError(t, s.Update(ctx, clear))
	assert.NotNil(t, clear.DeletionTimestamp)
	add := clear.DeepCopy()
	add.Finalizers = append(add.Finalizers, "virtkit.io/c")
	requireWrapped(t, s.Update(ctx, add), store.ErrInvalid)

	// Removing one finalizer keeps it; removing the last removes it.
	clear.Finalizers = []string{"virtkit.io/b"}
	require.NoError(t, s.Update(ctx, clear))
	require.NoError(t, s.Get(ctx, store.KeyOf(w), got))
	assert.Equal(t, []string{"virtkit.io/b"}, got.Finalizers)
	got.Finalizers = nil
	require.NoError(t, s.Update(ctx, got))
	requireWrapped(t, s.Get(ctx, store.KeyOf(w), &Widget{}), store.ErrNotFound)

	// Finalizers on a live object are just metadata.
	live := widget("ns", "live", 1, nil)
	live.Finalizers = []string{"virtkit.io/a"}
	create(t, s, live)
	live.Finalizers = nil
	require.NoError(t, s.Update(ctx, live))
	require.NoError(t, s.Get(ctx, store.KeyOf(live), got))
	assert.Nil(t, got.DeletionTimestamp)
}

func testDeletePreconditions(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	w := widget("ns", "w", 1, nil)
	create(t, s, w)
	stale := w.ResourceVersion
	w.Spec.Size = 2
	require.NoError(t, s.Update(ctx, w))
	badUID := types.UID("other")
	tests := []struct {
		name string
		pre  metav1.Preconditions
		want error
	}{
		{"stale resourceVersion", metav1.Preconditions{ResourceVersion: &stale}, store.ErrConflict},
		{"other uid", metav1.Preconditions{UID: &badUID}, store.ErrConflict},
		{"matching", metav1.Preconditions{UID: &w.UID, ResourceVersion: &w.ResourceVersion}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Delete(ctx, w.DeepCopy(), store.DeleteOptions{Preconditions: &tc.pre})
			if tc.want != nil {
				requireWrapped(t, err, tc.want)
				require.NoError(t, s.Get(ctx, store.KeyOf(w), &Widget{}), "still there")
				return
			}
			require.NoError(t, err)
			requireWrapped(t, s.Get(ctx, store.KeyOf(w), &Widget{}), store.ErrNotFound)
		})
	}
}
