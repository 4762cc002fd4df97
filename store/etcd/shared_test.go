package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
)

func nextShared(t *testing.T, ch <-chan store.Event) store.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		require.True(t, ok, "watch closed")
		require.NotEqual(t, store.Error, ev.Type, "error event: %v", ev.Err)
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return store.Event{}
}

// Every read-only watcher of one Store gets the one decoding of an etcd
// event, whatever its selector; a watcher without ReadOnly its own copy.
func TestReadOnlyWatchersShareDecodedEvents(t *testing.T) {
	s := newStoreFactory(t, etcd.Options{})(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sel := labels.SelectorFromSet(labels.Set{"node": "a"})
	watch := func(opts store.WatchOptions) <-chan store.Event {
		ch, err := s.Watch(ctx, &virtkit.VirtualMachineInstanceList{}, opts)
		require.NoError(t, err)
		return ch
	}
	ro1, ro2 := watch(store.WatchOptions{ReadOnly: true}), watch(store.WatchOptions{ReadOnly: true, LabelSelector: sel})
	own := watch(store.WatchOptions{})

	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "v", Labels: map[string]string{"node": "a"}}}
	require.NoError(t, s.Create(ctx, vmi))
	vmi.Annotations = map[string]string{"x": "1"}
	require.NoError(t, s.Update(ctx, vmi))

	for _, want := range []store.EventType{store.Added, store.Modified} {
		e1, e2, e3 := nextShared(t, ro1), nextShared(t, ro2), nextShared(t, own)
		for _, e := range []store.Event{e1, e2, e3} {
			assert.Equal(t, want, e.Type)
		}
		assert.Same(t, e1.Object, e2.Object, "one decoding per event for read-only watchers")
		assert.NotSame(t, e1.Object, e3.Object, "a watcher without ReadOnly owns its object")
		assert.Equal(t, e1.Object, e3.Object)
	}
}
