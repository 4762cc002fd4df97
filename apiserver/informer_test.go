package apiserver_test

import (
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

// watchGate counts list requests, with short set makes every watch end
// after 2s and, while closed, holds new watch requests until it opens.
type watchGate struct {
	next    http.RoundTripper
	mu      sync.Mutex
	lists   int  // lists made: list requests and watch-lists (sendInitialEvents)
	short   bool // watches end after 2s
	closed  bool
	open    chan struct{}
	waiting chan struct{} // receives when a watch request is held
}

func (g *watchGate) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Query().Get("watch") == "true" && g.short {
		r = r.Clone(r.Context())
		q := r.URL.Query()
		q.Set("timeoutSeconds", "2")
		r.URL.RawQuery = q.Encode()
	}
	if r.URL.Query().Get("watch") == "true" {
		g.mu.Lock()
		closed, open := g.closed, g.open
		g.mu.Unlock()
		if closed {
			select {
			case g.waiting <- struct{}{}:
			default:
			}
			select {
			case <-open:
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
		}
	}
	resp, err := g.next.RoundTrip(r)
	if q := r.URL.Query(); err == nil && (q.Get("watch") != "true" || q.Get("sendInitialEvents") == "true") {
		g.mu.Lock()
		g.lists++
		g.mu.Unlock()
	}
	return resp, err
}

func (g *watchGate) close() {
	g.mu.Lock()
	g.closed, g.open = true, make(chan struct{})
	g.mu.Unlock()
}

func (g *watchGate) release() {
	g.mu.Lock()
	g.closed = false
	close(g.open)
	g.mu.Unlock()
}

func (g *watchGate) listed() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lists
}

// A dynamic shared informer lists and watches through the API, and when
// the store's history is compacted while it is between watches, it gets 410
// Gone, relists and carries on without losing an object.
func TestInformerSurvivesCompaction(t *testing.T) {
	t.Run("memory", func(t *testing.T) { informerCompaction(t, newStore(t)) })
	t.Run("etcd", func(t *testing.T) {
		endpoints := etcdtest.StartServer(t)
		st, err := etcd.New(t.Context(), etcd.Options{Endpoints: endpoints})
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		informerCompaction(t, st)
	})
}

type compactingStore interface {
	store.Store
	store.Compacter
}

func informerCompaction(t *testing.T, st compactingStore) {
	ts := startServer(t, st, apiserver.GenericOptions{})
	cfg := ts.admin()
	// Watches end every 2s so the informer resumes from its last
	// resourceVersion.
	gate := &watchGate{waiting: make(chan struct{}, 1), short: true}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { gate.next = rt; return gate }
	dc, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	ctx := t.Context()
	vms := dc.Resource(vmGVR).Namespace("default")
	_, err = vms.Create(ctx, vmObject(t, "vm-0", "Halted"), metav1.CreateOptions{})
	require.NoError(t, err)

	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, "default", nil)
	inf := factory.ForResource(vmGVR).Informer()
	var mu sync.Mutex
	adds := map[string]int{}
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			mu.Lock()
			adds[obj.(*unstructured.Unstructured).GetName()]++
			mu.Unlock()
		},
	})
	require.NoError(t, err)
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() { close(stop); factory.Shutdown() }()
	require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced))
	names := func() []string {
		var out []string
		for _, o := range inf.GetStore().List() {
			out = append(out, o.(*unstructured.Unstructured).GetName())
		}
		sort.Strings(out)
		return out
	}
	assert.Equal(t, []string{"vm-0"}, names())

	// Between two of the informer's watches, objects change and the
	// history is compacted: the next watch, from the informer's last
	// resourceVersion, gets 410 Gone.
	gate.close()
	select {
	case <-gate.waiting:
	case <-time.After(30 * time.Second):
		t.Fatal("the informer did not watch again")
	}
	for i := 1; i <= 3; i++ {
		_, err = vms.Create(ctx, vmObject(t, fmt.Sprintf("vm-%d", i), "Halted"), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, vms.Delete(ctx, "vm-0", metav1.DeleteOptions{}))
	require.NoError(t, st.Compact(ctx))
	lists := gate.listed()
	gate.release()
	require.Eventually(t, func() bool { return gate.listed() > lists }, 30*time.Second, 10*time.Millisecond,
		"a watch from before the compaction gets 410 Gone: the informer lists again")
	l, err := vms.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	want := make([]string, 0, len(l.Items))
	for _, it := range l.Items {
		want = append(want, it.GetName())
	}
	sort.Strings(want)
	// After the relist the informer has every object and keeps watching.
	_, err = vms.Create(ctx, vmObject(t, "vm-last", "Halted"), metav1.CreateOptions{})
	require.NoError(t, err)
	want = append(want, "vm-last")
	sort.Strings(want)
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual(want, names()) }, 20*time.Second, 20*time.Millisecond,
		"informer catches up after 410: want %v, have %v", want, names())
	// The informer's store is updated before its handlers are called:
	// wait for the handler, then check it was called once.
	added := func() int {
		mu.Lock()
		defer mu.Unlock()
		return adds["vm-last"]
	}
	require.Eventually(t, func() bool { return added() > 0 }, 20*time.Second, 20*time.Millisecond,
		"the handler hears of vm-last")
	assert.Equal(t, 1, added())
}
