package etcd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"

	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
	"github.com/virtkit/virtkit/store/storetest"
)

// newStoreFactory starts one etcd server and returns a factory of stores,
// each under its own prefix so subtests do not see each other's objects.
func newStoreFactory(t testing.TB, opts etcd.Options) func(testing.TB) *etcd.Store {
	endpoints := etcdtest.StartServer(t)
	var n atomic.Int64
	return func(t testing.TB) *etcd.Store {
		o := opts
		o.Endpoints = endpoints
		o.Prefix = fmt.Sprintf("/test/%d", n.Add(1))
		o.Kinds = append(o.Kinds, storetest.Kinds()...)
		s, err := etcd.New(context.Background(), o)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	}
}

func TestConformance(t *testing.T) {
	newStore := newStoreFactory(t, etcd.Options{})
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t) })
}

func TestOptionsInvalid(t *testing.T) {
	tests := []struct {
		name string
		opts etcd.Options
		path string
	}{
		{"no endpoints", etcd.Options{}, "endpoints"},
		{"negative timeout", etcd.Options{Endpoints: []string{"http://127.0.0.1:1"}, DialTimeout: -1}, "dialTimeout"},
		{"negative buffer", etcd.Options{Endpoints: []string{"http://127.0.0.1:1"}, WatchBuffer: -1}, "watchBuffer"},
		{"duplicate kind", etcd.Options{Endpoints: []string{"http://127.0.0.1:1"}, Kinds: store.DefaultKinds()[:1]}, "registered twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := etcd.New(context.Background(), tc.opts)
			require.ErrorIs(t, err, store.ErrInvalid)
			assert.Contains(t, err.Error(), tc.path)
		})
	}
}

func TestUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := etcd.New(ctx, etcd.Options{Endpoints: []string{"http://127.0.0.1:1"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "127.0.0.1:1")
}

// TestEtcd covers what is specific to etcd, on one server.
func TestEtcd(t *testing.T) {
	endpoints := etcdtest.StartServer(t)
	client, err := clientv3.New(clientv3.Config{Endpoints: endpoints, Logger: zap.NewNop()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	open := func(t *testing.T, prefix string, opts etcd.Options) *etcd.Store {
		opts.Endpoints, opts.Prefix = endpoints, prefix
		opts.Kinds = append(opts.Kinds, storetest.Kinds()...)
		s, err := etcd.New(context.Background(), opts)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	}

	t.Run("KeyLayout", func(t *testing.T) {
		ctx := context.Background()
		s := open(t, "/layout/", etcd.Options{})
		vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vmi1"}}
		require.NoError(t, s.Create(ctx, vmi))
		require.NoError(t, s.Create(ctx, &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}}))

		resp, err := client.Get(ctx, "/layout/", clientv3.WithPrefix())
		require.NoError(t, err)
		var keys []string
		for _, kv := range resp.Kvs {
			keys = append(keys, string(kv.Key))
			if string(kv.Key) == "/layout/VirtualMachineInstance/default/vmi1" {
				assert.Equal(t, vmi.ResourceVersion, strconv.FormatInt(kv.ModRevision, 10), "resourceVersion is the mod revision")
				var raw map[string]any
				require.NoError(t, json.Unmarshal(kv.Value, &raw))
				assert.NotContains(t, raw["metadata"], "resourceVersion", "the version is not stored in the value")
				assert.Equal(t, "vmi1", raw["metadata"].(map[string]any)["name"])
			}
		}
		assert.Equal(t, []string{"/layout/Node/node1", "/layout/VirtualMachineInstance/default/vmi1"}, keys)
	})

	t.Run("TwoStoresOneEtcd", func(t *testing.T) {
		// Two processes (here: two clients) on one prefix see each other.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		a, b := open(t, "/shared", etcd.Options{}), open(t, "/shared", etcd.Options{})
		events, err := b.Watch(ctx, &storetest.WidgetList{}, store.WatchOptions{})
		require.NoError(t, err)
		w := &storetest.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w"}}
		require.NoError(t, a.Create(ctx, w))
		ev := <-events
		assert.Equal(t, store.Added, ev.Type)
		assert.Equal(t, w.UID, ev.Object.GetUID())

		fromB := &storetest.Widget{}
		require.NoError(t, b.Get(ctx, store.KeyOf(w), fromB))
		fromB.Spec.Size = 1
		require.NoError(t, b.Update(ctx, fromB))
		w.Spec.Size = 2
		require.ErrorIs(t, a.Update(ctx, w), store.ErrConflict)
	})

	t.Run("Compaction", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s := open(t, "/compaction", etcd.Options{})
		w := &storetest.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w"}}
		require.NoError(t, s.Create(ctx, w))
		old := w.ResourceVersion
		for i := range 3 {
			w.Spec.Size = i + 1
			require.NoError(t, s.Update(ctx, w))
		}
		// Compact with the plain client, as an operator or etcd's
		// auto-compaction would.
		rev, err := strconv.ParseInt(w.ResourceVersion, 10, 64)
		require.NoError(t, err)
		_, err = client.Compact(ctx, rev)
		require.NoError(t, err)

		_, err = s.Watch(ctx, &storetest.WidgetList{}, store.WatchOptions{ResourceVersion: old})
		require.ErrorIs(t, err, store.ErrExpired)
		require.ErrorIs(t, err, rpctypes.ErrCompacted)

		// The current version is still watchable.
		events, err := s.Watch(ctx, &storetest.WidgetList{}, store.WatchOptions{ResourceVersion: w.ResourceVersion})
		require.NoError(t, err)
		w.Spec.Size = 10
		require.NoError(t, s.Update(ctx, w))
		ev := <-events
		assert.Equal(t, store.Modified, ev.Type)
		assert.Equal(t, 10, ev.Object.(*storetest.Widget).Spec.Size)
	})

	t.Run("SlowWatcherExpires", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Both stores share one client, so both watches ride one gRPC stream.
		s, err := etcd.New(ctx, etcd.Options{Client: client, Prefix: "/slow", WatchBuffer: 2, Kinds: storetest.Kinds()})
		require.NoError(t, err)
		roomy, err := etcd.New(ctx, etcd.Options{Client: client, Prefix: "/slow", Kinds: storetest.Kinds()})
		require.NoError(t, err)
		slow, err := s.Watch(ctx, &storetest.WidgetList{}, store.WatchOptions{})
		require.NoError(t, err)
		fast, err := roomy.Watch(ctx, &storetest.WidgetList{}, store.WatchOptions{})
		require.NoError(t, err)
		const writes = 50
		for i := range writes {
			require.NoError(t, s.Create(ctx, &storetest.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("w", i)}}))
		}
		// The writes did not wait for the slow watcher. Once a reading
		// watcher on the same connection has every event, the slow one has
		// been offered them too and must have overflowed its buffer.
		for range writes {
			ev := next(t, fast)
			require.Equal(t, store.Added, ev.Type)
		}
		var got int
		for {
			ev := next(t, slow)
			if ev.Type == store.Error {
				require.ErrorIs(t, ev.Err, store.ErrExpired)
				break
			}
			got++
		}
		assert.Less(t, got, writes)
		_, stillOpen := <-slow
		assert.False(t, stillOpen)
	})

	t.Run("SharedClient", func(t *testing.T) {
		s, err := etcd.New(context.Background(), etcd.Options{Client: client, Prefix: "/sharedclient"})
		require.NoError(t, err)
		assert.Same(t, client, s.Client())
		require.NoError(t, s.Close())
		require.NoError(t, s.Close(), "Close is idempotent")
		_, err = client.Get(context.Background(), "/sharedclient")
		require.NoError(t, err, "a caller's client stays open")
	})
}

func next(t *testing.T, ch <-chan store.Event) store.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		require.True(t, ok, "watch closed")
		return ev
	case <-time.After(30 * time.Second): // hang guard only
		require.FailNow(t, "no event")
	}
	return store.Event{}
}
