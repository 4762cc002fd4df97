package storetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit/store"
)

// fullEvent is what a watcher can tell of an event.
type fullEvent struct {
	typ     store.EventType
	name    string
	rv      uint64
	size    int
	labels  map[string]string
	deleted bool
}

func collectFull(t *testing.T, ch <-chan store.Event, n int) ([]fullEvent, []*Widget) {
	t.Helper()
	out := make([]fullEvent, 0, n)
	objs := make([]*Widget, 0, n)
	for range n {
		ev := nextEvent(t, ch)
		require.NotEqual(t, store.Error, ev.Type, "unexpected error event: %v", ev.Err)
		w := ev.Object.(*Widget)
		out = append(out, fullEvent{typ: ev.Type, name: w.Namespace + "/" + w.Name, rv: rv(t, w),
			size: w.Spec.Size, labels: w.Labels, deleted: w.DeletionTimestamp != nil})
		objs = append(objs, w)
	}
	return out, objs
}

// testWatchReadOnly: a read-only watch reports exactly what a watch
// without the option does (types, versions, last states of deletions,
// label transitions), and the objects of a watch without it stay the
// caller's own even when read-only watchers share theirs.
func testWatchReadOnly(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	web, err := labels.Parse("app=web")
	require.NoError(t, err)
	watch := func(opts store.WatchOptions) <-chan store.Event {
		ch, err := s.Watch(ctx, &WidgetList{}, opts)
		require.NoError(t, err)
		return ch
	}
	plain, ro, ro2 := watch(store.WatchOptions{}), watch(store.WatchOptions{ReadOnly: true}), watch(store.WatchOptions{ReadOnly: true})
	plainSel, roSel := watch(store.WatchOptions{LabelSelector: web}), watch(store.WatchOptions{LabelSelector: web, ReadOnly: true})

	x := widget("a", "x", 1, nil)
	x.Finalizers = []string{"f"}
	create(t, s, x)
	x.Labels = map[string]string{"app": "web"} // starts matching
	require.NoError(t, s.Update(ctx, x))
	x.Spec.Size = 2
	require.NoError(t, s.Update(ctx, x))
	x.Labels = map[string]string{"app": "db"} // stops matching
	require.NoError(t, s.Update(ctx, x))
	x.Labels = map[string]string{"app": "web"}
	require.NoError(t, s.Update(ctx, x))
	require.NoError(t, s.Delete(ctx, x, store.DeleteOptions{}))
	x.Finalizers = nil
	require.NoError(t, s.Update(ctx, x)) // removed
	create(t, s, widget("a", "end", 1, map[string]string{"app": "web"}))

	want, plainObjs := collectFull(t, plain, 8)
	got, roObjs := collectFull(t, ro, 8)
	got2, ro2Objs := collectFull(t, ro2, 8)
	assert.Equal(t, want, got)
	assert.Equal(t, want, got2)
	last := want[len(want)-2]
	assert.Equal(t, store.Deleted, last.typ)
	assert.True(t, last.deleted, "Deleted carries the last state")
	assert.Greater(t, last.rv, want[len(want)-3].rv, "at the deletion's version")

	wantSel, _ := collectFull(t, plainSel, 7)
	gotSel, _ := collectFull(t, roSel, 7)
	assert.Equal(t, wantSel, gotSel)
	types := make([]store.EventType, 0, len(gotSel))
	for _, e := range gotSel {
		types = append(types, e.typ)
	}
	assert.Equal(t, []store.EventType{store.Added, store.Modified, store.Deleted, store.Added, store.Modified, store.Deleted, store.Added}, types)

	// Changing what a watch without ReadOnly got touches nobody else's.
	for i := range plainObjs {
		plainObjs[i].Spec.Size = 99
		plainObjs[i].Labels = map[string]string{"changed": "yes"}
	}
	for i := range roObjs {
		assert.NotEqual(t, 99, roObjs[i].Spec.Size)
		assert.NotEqual(t, 99, ro2Objs[i].Spec.Size)
	}
}
