package corev1_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// nextEvents returns the next n events of w by type and name.
func nextEvents(t *testing.T, w watch.Interface, n int) []podEvent {
	t.Helper()
	var out []podEvent
	for len(out) < n {
		select {
		case e, ok := <-w.ResultChan():
			require.True(t, ok, "the watch ended after %v", out)
			require.NotEqual(t, watch.Error, e.Type, "%#v", e.Object)
			m, err := meta.Accessor(e.Object)
			require.NoError(t, err)
			out = append(out, podEvent{e.Type, m.GetName()})
		case <-time.After(10 * time.Second):
			t.Fatalf("no watch event after %v", out)
		}
	}
	return out
}

func createNode(t *testing.T, st store.Store, name string, cordoned bool) *virtkit.Node {
	t.Helper()
	n := &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: virtkit.NodeSpec{Unschedulable: cordoned}}
	require.NoError(t, st.Create(t.Context(), n))
	return n
}

// A node watch resumed from a listed resourceVersion with kubectl's
// field selector (spec.unschedulable=false, the schedulable nodes) reports
// every change since, as kube-apiserver's does: a node cordoned since
// stopped matching and is Deleted, one uncordoned since started matching
// and is Added, as is one created since.
func TestServerNodesWatchResumedWithSelector(t *testing.T) {
	ts := newTestServer(t)
	ctx := t.Context()
	nodes := ts.client.CoreV1().Nodes()
	n1 := createNode(t, ts.store, "n1", false)
	n2 := createNode(t, ts.store, "n2", false)
	n3 := createNode(t, ts.store, "n3", true)
	sel := metav1.ListOptions{FieldSelector: "spec.unschedulable=false"}
	l, err := nodes.List(ctx, sel)
	require.NoError(t, err)
	require.Len(t, l.Items, 2)

	// After the list: n1 is cordoned, n2 deleted, n3 uncordoned, n4 created.
	for _, c := range []struct {
		n        *virtkit.Node
		cordoned bool
	}{{n1, true}, {n3, false}} {
		require.NoError(t, ts.store.Get(ctx, store.KeyOf(c.n), c.n))
		c.n.Spec.Unschedulable = c.cordoned
		require.NoError(t, ts.store.Update(ctx, c.n))
	}
	require.NoError(t, ts.store.Delete(ctx, n2, store.DeleteOptions{}))
	createNode(t, ts.store, "n4", false)

	opts := sel
	opts.ResourceVersion = l.ResourceVersion
	w, err := nodes.Watch(ctx, opts)
	require.NoError(t, err)
	defer w.Stop()
	assert.Equal(t, []podEvent{{watch.Deleted, "n1"}, {watch.Added, "n3"}, {watch.Deleted, "n2"}, {watch.Added, "n4"}}, nextEvents(t, w, 4))
	// And nothing else: the next event is the next change's.
	createNode(t, ts.store, "n5", true)
	createNode(t, ts.store, "n6", false)
	assert.Equal(t, []podEvent{{watch.Added, "n6"}}, nextEvents(t, w, 1))
}

// A claims informer with a field selector (the Pending claims) drops a
// claim once its DataVolume is bound, after its watch was cut: the
// informer resumes the watch from the last resourceVersion it saw, and
// the resumed watch reports the claim that stopped matching as Deleted.
func TestServerClaimsInformerWithSelector(t *testing.T) {
	ts := newTestServer(t)
	ctx := t.Context()
	createDV := func(name string) {
		require.NoError(t, ts.store.Create(ctx, &virtkit.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}))
	}
	createDV("d1")
	createDV("d2")
	factory := informers.NewSharedInformerFactoryWithOptions(ts.client, 0, informers.WithNamespace("default"),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "status.phase=Pending" }))
	inf := factory.Core().V1().PersistentVolumeClaims()
	added, deleted := make(chan string, 10), make(chan string, 10)
	name := func(obj any) string {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		return obj.(*corev1.PersistentVolumeClaim).Name
	}
	_, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { added <- name(obj) },
		DeleteFunc: func(obj any) { deleted <- name(obj) },
	})
	require.NoError(t, err)
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() { close(stop); factory.Shutdown() }()
	for _, ok := range factory.WaitForCacheSync(stop) {
		require.True(t, ok)
	}
	receive := func(ch chan string, what string) string {
		t.Helper()
		select {
		case n := <-ch:
			return n
		case <-time.After(10 * time.Second):
			t.Fatalf("the informer saw no %s", what)
			return ""
		}
	}
	assert.ElementsMatch(t, []string{"d1", "d2"}, []string{receive(added, "add"), receive(added, "add")})
	// An event on the informer's watch, so that, cut, it resumes from
	// that event's version rather than relisting.
	createDV("d3")
	assert.Equal(t, "d3", receive(added, "add of d3"))
	ts.http.CloseClientConnections()

	dv := &virtkit.DataVolume{}
	require.NoError(t, ts.store.Get(ctx, store.Key{Namespace: "default", Name: "d1"}, dv))
	dv.Status.Conditions = []virtkit.DataVolumeCondition{{Type: virtkit.DataVolumeBound, Status: virtkit.ConditionTrue}}
	require.NoError(t, ts.store.UpdateStatus(ctx, dv))
	assert.Equal(t, "d1", receive(deleted, "delete of the bound claim"))
	_, err = inf.Lister().PersistentVolumeClaims("default").Get("d2")
	assert.NoError(t, err)
}

// An events watch resumed with a label selector reports an event whose
// labels stopped matching as Deleted.
func TestServerEventsWatchResumedWithSelector(t *testing.T) {
	ts := newTestServer(t)
	ctx := t.Context()
	events := ts.client.CoreV1().Events("default")
	newEvent := func(name, app string) *virtkit.Event {
		ev := &virtkit.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": app}},
			Reason: "Started", Type: "Normal", Regarding: virtkit.ObjectReference{Kind: "VirtualMachine", Namespace: "default", Name: "vm"}}
		require.NoError(t, ts.store.Create(ctx, ev))
		return ev
	}
	e1 := newEvent("e1", "web")
	l, err := events.List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	require.Len(t, l.Items, 1)
	require.NoError(t, ts.store.Get(ctx, store.KeyOf(e1), e1))
	e1.Labels["app"] = "db"
	require.NoError(t, ts.store.Update(ctx, e1))

	w, err := events.Watch(ctx, metav1.ListOptions{LabelSelector: "app=web", ResourceVersion: l.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()
	assert.Equal(t, []podEvent{{watch.Deleted, "e1"}}, nextEvents(t, w, 1))
	newEvent("e2", "db")
	newEvent("e3", "web")
	assert.Equal(t, []podEvent{{watch.Added, "e3"}}, nextEvents(t, w, 1))
}

// A selecting watch of a view resumed from a version before the view's
// history began (it begins with the first list or watch) is told the
// version is too old (410 Gone), so the client relists; without a
// selector the store's own events answer it.
func TestServerNodesWatchResumedTooOld(t *testing.T) {
	ts := newTestServer(t)
	ctx := t.Context()
	n := createNode(t, ts.store, "n1", false)
	old := n.ResourceVersion
	require.NoError(t, ts.store.Get(ctx, store.KeyOf(n), n))
	n.Spec.Unschedulable = true
	require.NoError(t, ts.store.Update(ctx, n))

	w, err := ts.client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: old})
	require.NoError(t, err)
	assert.Equal(t, []podEvent{{watch.Modified, "n1"}}, nextEvents(t, w, 1))
	w.Stop()

	w, err = ts.client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: old, FieldSelector: "spec.unschedulable=false"})
	require.NoError(t, err)
	defer w.Stop()
	select {
	case e := <-w.ResultChan():
		require.Equal(t, watch.Error, e.Type, "%#v", e.Object)
		st, ok := e.Object.(*metav1.Status)
		require.True(t, ok, "%#v", e.Object)
		assert.Equal(t, int32(410), st.Code, st.Message)
		assert.Equal(t, metav1.StatusReasonExpired, st.Reason)
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}
}
