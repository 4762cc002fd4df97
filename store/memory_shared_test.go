package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

func nextEvent(t *testing.T, ch <-chan store.Event) store.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		require.True(t, ok, "watch closed")
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return store.Event{}
}

func TestMemoryReadOnlyWatchersShareOneCopy(t *testing.T) {
	ctx := t.Context()
	s := newTestMemory(t, store.Options{})
	ro1, err := s.Watch(ctx, &virtkit.NodeList{}, store.WatchOptions{ReadOnly: true})
	require.NoError(t, err)
	ro2, err := s.Watch(ctx, &virtkit.NodeList{}, store.WatchOptions{ReadOnly: true})
	require.NoError(t, err)
	own, err := s.Watch(ctx, &virtkit.NodeList{}, store.WatchOptions{})
	require.NoError(t, err)

	n := &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "1"}}}
	require.NoError(t, s.Create(ctx, n))

	e1, e2, e3 := nextEvent(t, ro1), nextEvent(t, ro2), nextEvent(t, own)
	for _, e := range []store.Event{e1, e2, e3} {
		assert.Equal(t, store.Added, e.Type)
		assert.Equal(t, n.ResourceVersion, e.Object.GetResourceVersion())
		assert.Equal(t, "1", e.Object.GetLabels()["a"])
	}
	assert.Same(t, e1.Object, e2.Object, "read-only watchers share the event's object")
	assert.NotSame(t, e1.Object, e3.Object, "a watcher without ReadOnly gets its own copy")

	// The caller's own copy may be changed without touching anyone else's.
	e3.Object.GetLabels()["a"] = "changed"
	assert.Equal(t, "1", e1.Object.GetLabels()["a"])

	// A read-only watch resumed from history gets the same content.
	resumed, err := s.Watch(ctx, &virtkit.NodeList{}, store.WatchOptions{ReadOnly: true, ResourceVersion: "0"})
	require.NoError(t, err)
	e4 := nextEvent(t, resumed)
	assert.Equal(t, e1.Object, e4.Object)
}

func TestMemoryReadOnlyViolations(t *testing.T) {
	tests := []struct {
		name   string
		mutate bool
	}{
		{name: "watchers only read", mutate: false},
		{name: "a watcher changes a shared object", mutate: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			s := newTestMemory(t, store.Options{CheckReadOnlyEvents: true})
			ch, err := s.Watch(ctx, &virtkit.NodeList{}, store.WatchOptions{ReadOnly: true})
			require.NoError(t, err)
			n := &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "1"}}}
			require.NoError(t, s.Create(ctx, n))
			ev := nextEvent(t, ch)
			if tt.mutate {
				ev.Object.GetLabels()["a"] = "2"
			}
			err = s.ReadOnlyViolations()
			if !tt.mutate {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, store.ErrReadOnlyViolated)
			assert.Contains(t, err.Error(), "n1")
			// The store's own state is not the shared copy.
			got := &virtkit.Node{}
			require.NoError(t, s.Get(ctx, store.Key{Name: "n1"}, got))
			assert.Equal(t, "1", got.Labels["a"])
		})
	}
}

func TestMemoryReadOnlyViolationsOff(t *testing.T) {
	s := newTestMemory(t, store.Options{})
	require.NoError(t, s.ReadOnlyViolations(), "without CheckReadOnlyEvents nothing is recorded")
}
