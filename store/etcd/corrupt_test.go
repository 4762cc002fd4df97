package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
	"github.com/virtkit/virtkit/store/storetest"
)

// rawBackend writes into etcd with a plain client, as etcdctl would.
type rawBackend struct {
	client *clientv3.Client
	prefix string
}

func (b rawBackend) StorageKey(kind string, key store.Key) string {
	if key.Namespace == "" {
		return b.prefix + "/" + kind + "/" + key.Name
	}
	return b.prefix + "/" + kind + "/" + key.Namespace + "/" + key.Name
}

func (b rawBackend) PutRaw(ctx context.Context, kind string, key store.Key, data []byte) error {
	_, err := b.client.Put(ctx, b.StorageKey(kind, key), string(data))
	return err
}

func (b rawBackend) DeleteRaw(ctx context.Context, kind string, key store.Key) error {
	_, err := b.client.Delete(ctx, b.StorageKey(kind, key))
	return err
}

func newRawClient(t testing.TB, endpoints []string) *clientv3.Client {
	client, err := clientv3.New(clientv3.Config{Endpoints: endpoints, Logger: zap.NewNop()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func TestCorruptConformance(t *testing.T) {
	endpoints := etcdtest.StartServer(t)
	client := newRawClient(t, endpoints)
	var n atomic.Int64
	storetest.RunCorrupt(t, func(t *testing.T) (store.Store, storetest.Backend) {
		prefix := fmt.Sprintf("/corrupt/%d", n.Add(1))
		s, err := etcd.New(t.Context(), etcd.Options{Client: client, Prefix: prefix, Kinds: storetest.Kinds()})
		require.NoError(t, err)
		return s, rawBackend{client: client, prefix: prefix}
	})
}

// TestCorruptEtcd covers what is specific to etcd: malformed keys, the size
// bound, virtkit's own kinds, OnCorrupt and the logged key.
func TestCorruptEtcd(t *testing.T) {
	endpoints := etcdtest.StartServer(t)
	client := newRawClient(t, endpoints)
	var n atomic.Int64
	type opened struct {
		s       *etcd.Store
		raw     rawBackend
		mu      sync.Mutex
		reports []store.CorruptError
		logs    *strings.Builder
	}
	open := func(t *testing.T, opts etcd.Options) *opened {
		o := &opened{logs: &strings.Builder{}}
		opts.Client = client
		opts.Prefix = fmt.Sprintf("/corruptetcd/%d", n.Add(1))
		opts.Kinds = storetest.Kinds()
		opts.OnCorrupt = func(ce store.CorruptError) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.reports = append(o.reports, ce)
		}
		opts.Logger = newTestLogger(o.logs, &o.mu)
		s, err := etcd.New(t.Context(), opts)
		require.NoError(t, err)
		o.s, o.raw = s, rawBackend{client: client, prefix: opts.Prefix}
		return o
	}

	t.Run("MalformedKeys", func(t *testing.T) {
		ctx := t.Context()
		o := open(t, etcd.Options{})
		require.NoError(t, o.s.Create(ctx, &storetest.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ok"}}))
		valid := `{"kind":"Widget","metadata":{"name":"x","namespace":"ns"}}`
		for _, k := range []string{"/Widget/nonamespace", "/Widget/ns/a/b", "/Widget//x", "/Widget/ns/", "/Widget/ns/..", "/Widget/./x"} {
			_, err := client.Put(ctx, o.raw.prefix+k, valid)
			require.NoError(t, err)
		}
		list := &storetest.WidgetList{}
		require.NoError(t, o.s.List(ctx, list, store.ListOptions{}))
		require.Len(t, list.Items, 1)
		assert.Equal(t, "ok", list.Items[0].Name)
		got := o.s.CorruptObjects()
		require.Len(t, got, 6)
		for _, ce := range got {
			assert.Equal(t, store.CorruptKey, ce.Reason, ce.StorageKey)
		}
	})

	t.Run("SizeBound", func(t *testing.T) {
		ctx := t.Context()
		o := open(t, etcd.Options{MaxObjectBytes: 512})
		big := &storetest.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "big"}, Spec: storetest.WidgetSpec{Tags: []string{strings.Repeat("x", 600)}}}
		require.ErrorIs(t, o.s.Create(ctx, big), store.ErrInvalid, "the store never writes what it would refuse to read")

		small := &storetest.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w"}}
		require.NoError(t, o.s.Create(ctx, small))
		small.Spec.Tags = big.Spec.Tags
		require.ErrorIs(t, o.s.Update(ctx, small), store.ErrInvalid)

		value := fmt.Sprintf(`{"kind":"Widget","metadata":{"name":"huge","namespace":"ns"},"spec":{"tags":[%q]}}`, strings.Repeat("y", 1000))
		require.NoError(t, o.raw.PutRaw(ctx, "Widget", store.Key{Namespace: "ns", Name: "huge"}, []byte(value)))
		err := o.s.Get(ctx, store.Key{Namespace: "ns", Name: "huge"}, &storetest.Widget{})
		var ce *store.CorruptError
		require.True(t, errors.As(err, &ce), "%v", err)
		assert.Equal(t, store.CorruptSize, ce.Reason)
		list := &storetest.WidgetList{}
		require.NoError(t, o.s.List(ctx, list, store.ListOptions{}))
		require.Len(t, list.Items, 1)
	})

	t.Run("PoisonedVMI", func(t *testing.T) {
		// What an operator's `etcdctl put .../VirtualMachineInstance/default/zzpoison 'not json{'` does.
		ctx := t.Context()
		o := open(t, etcd.Options{})
		vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vmi1"}}
		require.NoError(t, o.s.Create(ctx, vmi))
		poison := store.Key{Namespace: "default", Name: "zzpoison"}
		require.NoError(t, o.raw.PutRaw(ctx, "VirtualMachineInstance", poison, []byte("not json{")))

		list := &virtkit.VirtualMachineInstanceList{}
		require.NoError(t, o.s.List(ctx, list, store.ListOptions{}))
		require.Len(t, list.Items, 1)
		assert.Equal(t, "vmi1", list.Items[0].Name)
		require.NoError(t, o.s.List(ctx, list, store.ListOptions{}), "a second list reports nothing new")
		err := o.s.Get(ctx, poison, &virtkit.VirtualMachineInstance{})
		require.ErrorIs(t, err, store.ErrCorrupt)
		assert.Contains(t, err.Error(), o.raw.StorageKey("VirtualMachineInstance", poison))

		o.mu.Lock()
		reports, logs := o.reports, o.logs.String()
		o.mu.Unlock()
		require.Len(t, reports, 1, "reported once per value, however often it is read")
		assert.Equal(t, poison, reports[0].Key)
		assert.Equal(t, store.CorruptJSON, reports[0].Reason)
		assert.Contains(t, logs, "etcdKey="+o.raw.StorageKey("VirtualMachineInstance", poison))
		assert.Contains(t, logs, "level=WARN")

		require.NoError(t, o.raw.DeleteRaw(ctx, "VirtualMachineInstance", poison))
		require.ErrorIs(t, o.s.Get(ctx, poison, &virtkit.VirtualMachineInstance{}), store.ErrNotFound)
		assert.Empty(t, o.s.CorruptObjects(), "a deleted key is forgotten")
	})

	t.Run("StaleReadDoesNotForget", func(t *testing.T) {
		// A list at an older revision than the one at which a value was
		// found corrupt must not clear it.
		ctx := t.Context()
		o := open(t, etcd.Options{})
		w := &storetest.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w"}}
		require.NoError(t, o.s.Create(ctx, w))
		list := &storetest.WidgetList{}
		require.NoError(t, o.s.List(ctx, list, store.ListOptions{}))
		events, err := o.s.Watch(ctx, &storetest.WidgetList{}, store.WatchOptions{ResourceVersion: list.ResourceVersion})
		require.NoError(t, err)
		require.NoError(t, o.raw.PutRaw(ctx, "Widget", store.KeyOf(w), []byte("{")))
		ev := next(t, events)
		assert.Equal(t, store.Deleted, ev.Type)
		require.Len(t, o.s.CorruptObjects(), 1)
		// Watching again from the old list replays the valid create: older
		// news than the corruption.
		replay, err := o.s.Watch(ctx, &storetest.WidgetList{}, store.WatchOptions{ResourceVersion: "1"})
		require.NoError(t, err)
		ev = next(t, replay)
		assert.Equal(t, store.Added, ev.Type)
		ev = next(t, replay)
		assert.Equal(t, store.Deleted, ev.Type)
		assert.Len(t, o.s.CorruptObjects(), 1)
	})
}

// lockedWriter lets several goroutines log into one builder.
type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func newTestLogger(b *strings.Builder, mu *sync.Mutex) *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{mu: mu, b: b}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
