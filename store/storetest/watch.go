package storetest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit/store"
)

func nextEvent(t *testing.T, ch <-chan store.Event) store.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		require.True(t, ok, "watch channel closed unexpectedly")
		return ev
	case <-time.After(eventTimeout):
		require.FailNow(t, "no watch event (hung watch)")
	}
	return store.Event{}
}

type seen struct {
	typ  store.EventType
	name string
}

func nextSeen(t *testing.T, ch <-chan store.Event) seen {
	t.Helper()
	ev := nextEvent(t, ch)
	require.NotEqual(t, store.Error, ev.Type, "unexpected error event: %v", ev.Err)
	return seen{ev.Type, ev.Object.GetNamespace() + "/" + ev.Object.GetName()}
}

func testWatch(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	ch, err := s.Watch(ctx, &WidgetList{}, store.WatchOptions{})
	require.NoError(t, err)
	gadgets, err := s.Watch(ctx, &GadgetList{}, store.WatchOptions{})
	require.NoError(t, err)

	w := widget("ns", "w", 1, nil)
	w.Finalizers = []string{"f"}
	create(t, s, w)
	create(t, s, &Gadget{ObjectMeta: metav1.ObjectMeta{Name: "g"}})
	w.Spec.Size = 2
	require.NoError(t, s.Update(ctx, w))
	w.Status.Count = 1
	require.NoError(t, s.UpdateStatus(ctx, w))
	require.NoError(t, s.Delete(ctx, w, store.DeleteOptions{}))
	w.Finalizers = nil
	require.NoError(t, s.Update(ctx, w))

	var last uint64
	var uid types.UID
	for i, want := range []store.EventType{store.Added, store.Modified, store.Modified, store.Modified, store.Deleted} {
		ev := nextEvent(t, ch)
		require.Equal(t, want, ev.Type, "event %d", i)
		wo := ev.Object.(*Widget)
		assert.Equal(t, "w", wo.Name)
		v := rv(t, wo)
		assert.Greater(t, v, last, "events in resourceVersion order")
		last = v
		switch i {
		case 0:
			uid = wo.UID
		case 1:
			assert.Equal(t, 2, wo.Spec.Size)
		case 2:
			assert.Equal(t, 1, wo.Status.Count)
		case 3:
			assert.NotNil(t, wo.DeletionTimestamp)
		case 4:
			assert.Equal(t, uid, wo.UID, "Deleted carries the last state")
		}
	}
	ev := nextEvent(t, gadgets)
	assert.Equal(t, store.Added, ev.Type)
	assert.Equal(t, "g", ev.Object.GetName())
	assert.IsType(t, &Gadget{}, ev.Object)
}

func testWatchFilters(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	web, err := labels.Parse("app=web")
	require.NoError(t, err)
	byNS, err := s.Watch(ctx, &WidgetList{}, store.WatchOptions{Namespace: "a"})
	require.NoError(t, err)
	byLabel, err := s.Watch(ctx, &WidgetList{}, store.WatchOptions{LabelSelector: web})
	require.NoError(t, err)

	create(t, s, widget("b", "other", 1, map[string]string{"app": "web"}))
	x := widget("a", "x", 1, nil)
	create(t, s, x)
	x.Labels = map[string]string{"app": "web"} // starts matching
	require.NoError(t, s.Update(ctx, x))
	x.Spec.Size = 2 // still matching
	require.NoError(t, s.Update(ctx, x))
	x.Labels = map[string]string{"app": "db"} // stops matching
	require.NoError(t, s.Update(ctx, x))
	x.Spec.Size = 3 // still not matching
	require.NoError(t, s.Update(ctx, x))
	require.NoError(t, s.Delete(ctx, x, store.DeleteOptions{}))
	create(t, s, widget("a", "end", 1, map[string]string{"app": "web"})) // a marker both see

	assert.Equal(t, []seen{
		{store.Added, "a/x"}, {store.Modified, "a/x"}, {store.Modified, "a/x"}, {store.Modified, "a/x"},
		{store.Modified, "a/x"}, {store.Deleted, "a/x"}, {store.Added, "a/end"},
	}, collect(t, byNS, 7))
	assert.Equal(t, []seen{
		{store.Added, "b/other"}, {store.Added, "a/x"}, {store.Modified, "a/x"}, {store.Deleted, "a/x"},
		{store.Added, "a/end"},
	}, collect(t, byLabel, 5))
}

func collect(t *testing.T, ch <-chan store.Event, n int) []seen {
	t.Helper()
	out := make([]seen, 0, n)
	for range n {
		out = append(out, nextSeen(t, ch))
	}
	return out
}

func testWatchInitialEvents(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	create(t, s, widget("b", "w2", 1, nil))
	create(t, s, widget("a", "w1", 1, map[string]string{"app": "web"}))
	create(t, s, widget("a", "w0", 1, nil))
	ch, err := s.Watch(ctx, &WidgetList{}, store.WatchOptions{Namespace: "a", SendInitialEvents: true})
	require.NoError(t, err)
	create(t, s, widget("a", "w3", 1, nil))
	assert.Equal(t, []seen{{store.Added, "a/w0"}, {store.Added, "a/w1"}, {store.Added, "a/w3"}}, collect(t, ch, 3))

	_, err = s.Watch(ctx, &WidgetList{}, store.WatchOptions{SendInitialEvents: true, ResourceVersion: "1"})
	requireWrapped(t, err, store.ErrInvalid)
}

func testWatchResume(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	create(t, s, widget("ns", "w0", 1, nil))
	list := &WidgetList{}
	require.NoError(t, s.List(ctx, list, store.ListOptions{}))

	// Changes between the list and the watch are not lost.
	w1 := widget("ns", "w1", 1, nil)
	create(t, s, w1)
	w1.Spec.Size = 2
	require.NoError(t, s.Update(ctx, w1))
	mid := w1.ResourceVersion
	require.NoError(t, s.Delete(ctx, w1, store.DeleteOptions{}))

	ch, err := s.Watch(ctx, &WidgetList{}, store.WatchOptions{ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	create(t, s, widget("ns", "w2", 1, nil))
	assert.Equal(t, []seen{{store.Added, "ns/w1"}, {store.Modified, "ns/w1"}, {store.Deleted, "ns/w1"}, {store.Added, "ns/w2"}}, collect(t, ch, 4))

	// Resuming after an event's version continues right after it.
	ch2, err := s.Watch(ctx, &WidgetList{}, store.WatchOptions{ResourceVersion: mid})
	require.NoError(t, err)
	ev := nextEvent(t, ch2)
	assert.Equal(t, store.Deleted, ev.Type)
	assert.Greater(t, rv(t, ev.Object), rv(t, &metav1.ObjectMeta{ResourceVersion: mid}))
	assert.Equal(t, w1.ResourceVersion, ev.Object.GetResourceVersion(), "Delete fills obj with the deletion's version")

	// A version not reached yet: the watch starts delivering after it.
	future := strconv.FormatUint(rv(t, ev.Object)+2, 10)
	ch4, err := s.Watch(ctx, &WidgetList{}, store.WatchOptions{ResourceVersion: future})
	require.NoError(t, err)
	for i := range 3 {
		create(t, s, widget("future", fmt.Sprint("f", i), 1, nil))
	}
	assert.Equal(t, seen{store.Added, "future/f1"}, nextSeen(t, ch4), "f0 has the version watched from")

	// The Deleted event's version resumes after the deletion.
	ch3, err := s.Watch(ctx, &WidgetList{}, store.WatchOptions{ResourceVersion: ev.Object.GetResourceVersion()})
	require.NoError(t, err)
	assert.Equal(t, seen{store.Added, "ns/w2"}, nextSeen(t, ch3))
}

func testWatchExpired(t *testing.T, s store.Store) {
	c, ok := s.(store.Compacter)
	if !ok {
		t.Skip("store does not implement store.Compacter; history expiry not testable generically")
	}
	ctx := ctxT(t)
	w := widget("ns", "w", 1, nil)
	create(t, s, w)
	old := w.ResourceVersion
	w.Spec.Size = 2
	require.NoError(t, s.Update(ctx, w))
	create(t, s, widget("ns", "w2", 1, nil))
	require.NoError(t, c.Compact(ctx))

	ch, err := s.Watch(ctx, &WidgetList{}, store.WatchOptions{ResourceVersion: old})
	if err == nil {
		// A store may only find out once the watch runs.
		ev := nextEvent(t, ch)
		require.Equal(t, store.Error, ev.Type)
		err = ev.Err
		_, open := <-ch
		assert.False(t, open, "the channel closes after an Error event")
	}
	requireWrapped(t, err, store.ErrExpired)

	// Relist and watch from the list's version works.
	list := &WidgetList{}
	require.NoError(t, s.List(ctx, list, store.ListOptions{}))
	ch, err = s.Watch(ctx, &WidgetList{}, store.WatchOptions{ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	create(t, s, widget("ns", "w3", 1, nil))
	assert.Equal(t, seen{store.Added, "ns/w3"}, nextSeen(t, ch))
}

func testWatchCancel(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(ctxT(t))
	ch, err := s.Watch(ctx, &WidgetList{}, store.WatchOptions{})
	require.NoError(t, err)
	create(t, s, widget("ns", "w", 1, nil))
	cancel()
	// Pending events may still arrive; the channel must close.
	timeout := time.After(eventTimeout)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				// Writes after the watcher went away still work.
				create(t, s, widget("ns", "w2", 1, nil))
				return
			}
		case <-timeout:
			require.FailNow(t, "watch channel not closed after ctx cancel")
		}
	}
}
