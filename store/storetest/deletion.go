package storetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit/store"
)

// testWatchResumeFinalizedDelete: a watch from any version a client listed
// at delivers every later event of the object, through a deletion that
// waits for finalizers: the deletion mark, the finalizer's removal and the
// Deleted event, whatever filter the watch has.
func testWatchResumeFinalizedDelete(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	w := widget("ns", "w", 1, map[string]string{"app": "a"})
	w.Finalizers = []string{"virtkit.io/a", "virtkit.io/b"}
	create(t, s, w)
	listRV := func() string {
		l := &WidgetList{}
		require.NoError(t, s.List(ctx, l, store.ListOptions{Namespace: "ns"}))
		return l.ResourceVersion
	}
	beforeDelete := listRV()
	require.NoError(t, s.Delete(ctx, w, store.DeleteOptions{}))
	marked := listRV()
	w.Finalizers = []string{"virtkit.io/b"}
	require.NoError(t, s.Update(ctx, w))
	oneLeft := listRV()
	w.Finalizers = nil
	require.NoError(t, s.Update(ctx, w))
	create(t, s, widget("ns", "after", 1, map[string]string{"app": "a"}))

	sel := labels.SelectorFromSet(labels.Set{"app": "a"})
	for _, tc := range []struct {
		name string
		from string
		opts store.WatchOptions
		want []seen
	}{
		{"before the delete", beforeDelete, store.WatchOptions{},
			[]seen{{store.Modified, "ns/w"}, {store.Modified, "ns/w"}, {store.Deleted, "ns/w"}, {store.Added, "ns/after"}}},
		{"after the mark", marked, store.WatchOptions{Namespace: "ns"},
			[]seen{{store.Modified, "ns/w"}, {store.Deleted, "ns/w"}, {store.Added, "ns/after"}}},
		{"one finalizer left, label selector", oneLeft, store.WatchOptions{LabelSelector: sel},
			[]seen{{store.Deleted, "ns/w"}, {store.Added, "ns/after"}}},
		{"before the delete, namespace and selector", beforeDelete, store.WatchOptions{Namespace: "ns", LabelSelector: sel},
			[]seen{{store.Modified, "ns/w"}, {store.Modified, "ns/w"}, {store.Deleted, "ns/w"}, {store.Added, "ns/after"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.ResourceVersion = tc.from
			ch, err := s.Watch(ctx, &WidgetList{}, opts)
			require.NoError(t, err)
			assert.Equal(t, tc.want, collect(t, ch, len(tc.want)))
		})
	}
}

// testDeletePropagation: a propagation policy puts its finalizer on the
// deleted object (the garbage collector's to remove), replaces the other
// policy's on a second delete, and Background drops both.
func testDeletePropagation(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	policy := func(p metav1.DeletionPropagation) store.DeleteOptions {
		return store.DeleteOptions{PropagationPolicy: &p}
	}
	for _, tc := range []struct {
		name       string
		finalizers []string
		deletes    []store.DeleteOptions
		want       []string // nil: gone
	}{
		{"orphan", nil, []store.DeleteOptions{policy(metav1.DeletePropagationOrphan)}, []string{store.FinalizerOrphanDependents}},
		{"foreground", nil, []store.DeleteOptions{policy(metav1.DeletePropagationForeground)}, []string{store.FinalizerDeleteDependents}},
		{"background", nil, []store.DeleteOptions{policy(metav1.DeletePropagationBackground)}, nil},
		{"orphan keeps other finalizers", []string{"virtkit.io/a"}, []store.DeleteOptions{policy(metav1.DeletePropagationOrphan)},
			[]string{"virtkit.io/a", store.FinalizerOrphanDependents}},
		{"orphan then foreground", nil, []store.DeleteOptions{policy(metav1.DeletePropagationOrphan), policy(metav1.DeletePropagationForeground)},
			[]string{store.FinalizerDeleteDependents}},
		{"foreground then default", nil, []store.DeleteOptions{policy(metav1.DeletePropagationForeground), {}},
			[]string{store.FinalizerDeleteDependents}},
		{"orphan then background", nil, []store.DeleteOptions{policy(metav1.DeletePropagationOrphan), policy(metav1.DeletePropagationBackground)}, nil},
		{"orphan then background, other finalizer", []string{"virtkit.io/a"},
			[]store.DeleteOptions{policy(metav1.DeletePropagationOrphan), policy(metav1.DeletePropagationBackground)}, []string{"virtkit.io/a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := widget("prop", "w", 1, nil)
			w.Finalizers = tc.finalizers
			create(t, s, w)
			for _, o := range tc.deletes {
				require.NoError(t, s.Delete(ctx, w.DeepCopy(), o))
			}
			got := &Widget{}
			err := s.Get(ctx, store.KeyOf(w), got)
			if tc.want == nil {
				requireWrapped(t, err, store.ErrNotFound)
				return
			}
			require.NoError(t, err)
			assert.NotNil(t, got.DeletionTimestamp)
			assert.Equal(t, tc.want, got.Finalizers)
			got.Finalizers = nil
			require.NoError(t, s.Update(ctx, got), "the garbage collector's removal deletes it")
			requireWrapped(t, s.Get(ctx, store.KeyOf(w), &Widget{}), store.ErrNotFound)
		})
	}
	bad := metav1.DeletionPropagation("Sideways")
	w := widget("prop", "bad", 1, nil)
	create(t, s, w)
	requireWrapped(t, s.Delete(ctx, w, store.DeleteOptions{PropagationPolicy: &bad}), store.ErrInvalid)
	require.NoError(t, s.Get(ctx, store.KeyOf(w), &Widget{}), "a rejected delete deletes nothing")
}
