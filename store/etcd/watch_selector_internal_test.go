package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

// TestSelectorWatchDecodesOnlyCandidates: a node agent's watch (a label
// selector on the node name) sees its VMIs placed, moved away, moved in
// and deleted, from now and from an earlier resourceVersion, and never
// decodes the events of other nodes' VMIs.
func TestSelectorWatchDecodesOnlyCandidates(t *testing.T) {
	endpoints := etcdtest.StartServer(t)
	open := func() *Store {
		s, err := New(t.Context(), Options{Endpoints: endpoints, Prefix: "/sel"})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	writer := open()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	vmi := func(name, node string) *virtkit.VirtualMachineInstance {
		return &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: map[string]string{virtkit.NodeNameLabel: node}}}
	}
	relabel := func(name, node string) {
		o := &virtkit.VirtualMachineInstance{}
		require.NoError(t, writer.Get(ctx, store.Key{Namespace: "ns", Name: name}, o))
		o.Labels[virtkit.NodeNameLabel] = node
		require.NoError(t, writer.Update(ctx, o))
	}
	require.NoError(t, writer.Create(ctx, vmi("pre-a", "node-a")))
	require.NoError(t, writer.Create(ctx, vmi("gone-a", "node-a")))
	before := &virtkit.VirtualMachineInstance{}
	require.NoError(t, writer.Get(ctx, store.Key{Namespace: "ns", Name: "gone-a"}, before))
	// Moved away before the watch from before's version starts: that
	// watch must still report it Deleted.
	relabel("gone-a", "node-b")

	sel := labels.SelectorFromSet(labels.Set{virtkit.NodeNameLabel: "node-a"})
	type step struct {
		typ  store.EventType
		name string
	}
	tests := []struct {
		name string
		opts store.WatchOptions
		want []step
	}{
		{"from a resourceVersion", store.WatchOptions{LabelSelector: sel, ReadOnly: true, ResourceVersion: before.ResourceVersion},
			[]step{{store.Deleted, "gone-a"}, {store.Added, "a1"}, {store.Deleted, "pre-a"}, {store.Added, "b0"}, {store.Deleted, "a1"}}},
		{"from now", store.WatchOptions{LabelSelector: sel, ReadOnly: true},
			[]step{{store.Added, "a1"}, {store.Deleted, "pre-a"}, {store.Added, "b0"}, {store.Deleted, "a1"}}},
		{"with initial events", store.WatchOptions{LabelSelector: sel, SendInitialEvents: true},
			[]step{{store.Added, "pre-a"}, {store.Added, "a1"}, {store.Deleted, "pre-a"}, {store.Added, "b0"}, {store.Deleted, "a1"}}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			watcher := open() // its own decode cache: what it holds, it decoded
			events, err := watcher.Watch(ctx, &virtkit.VirtualMachineInstanceList{}, tc.opts)
			require.NoError(t, err)

			others := 0
			for j := range 40 {
				require.NoError(t, writer.Create(ctx, vmi(fmt.Sprintf("b%d-%d", j, i), "node-b")))
				others++
			}
			require.NoError(t, writer.Create(ctx, vmi("a1", "node-a")))
			relabel("pre-a", "node-b")                 // moved away
			relabel(fmt.Sprintf("b0-%d", i), "node-a") // moved in
			require.NoError(t, writer.Delete(ctx, &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a1"}}, store.DeleteOptions{}))
			var deletedA1 string
			{
				// The deletion's revision is the next write's minus one.
				require.NoError(t, writer.Create(ctx, vmi(fmt.Sprintf("marker-%d", i), "node-b")))
				m := &virtkit.VirtualMachineInstance{}
				require.NoError(t, writer.Get(ctx, store.Key{Namespace: "ns", Name: fmt.Sprintf("marker-%d", i)}, m))
				deletedA1 = m.ResourceVersion
			}

			for k, w := range tc.want {
				select {
				case ev := <-events:
					require.NotEqual(t, store.Error, ev.Type, "%v", ev.Err)
					name := strings.TrimSuffix(ev.Object.GetName(), fmt.Sprintf("-%d", i))
					assert.Equal(t, w, step{ev.Type, name}, "event %d", k)
					if ev.Type == store.Deleted && name == "a1" {
						// The last state, at a version before the next write.
						got, err1 := strconv.Atoi(ev.Object.GetResourceVersion())
						next, err2 := strconv.Atoi(deletedA1)
						require.NoError(t, errors.Join(err1, err2))
						assert.Less(t, got, next)
						assert.Equal(t, "node-a", ev.Object.GetLabels()[virtkit.NodeNameLabel])
					}
				case <-ctx.Done():
					t.Fatalf("timed out waiting for event %d (%v)", k, w)
				}
			}
			select {
			case ev := <-events:
				t.Fatalf("unexpected event %s %s", ev.Type, ev.Object.GetName())
			case <-time.After(200 * time.Millisecond):
			}
			decodedOthers := 0
			watcher.decoded.mu.Lock()
			for k := range watcher.decoded.byKey {
				if strings.Contains(k.key, "/b") && !strings.HasSuffix(k.key, fmt.Sprintf("/b0-%d", i)) {
					decodedOthers++
				}
			}
			watcher.decoded.mu.Unlock()
			assert.Zero(t, decodedOthers, "values of %d other nodes' VMIs decoded", others)

			// Put things back for the next case.
			relabel("pre-a", "node-a")
			relabel(fmt.Sprintf("b0-%d", i), "node-b")
		})
	}
}

// A List with a label selector decodes only the values that can match: a
// corrupt value of another node's VMI is not even looked at (so not
// reported), while a List without a selector finds it.
func TestSelectorListDecodesOnlyCandidates(t *testing.T) {
	endpoints := etcdtest.StartServer(t)
	s, err := New(t.Context(), Options{Endpoints: endpoints, Prefix: "/list"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, n := range []struct{ name, node string }{{"a1", "node-a"}, {"b1", "node-b"}, {"a2", "node-a"}} {
		require.NoError(t, s.Create(ctx, &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n.name,
			Labels: map[string]string{virtkit.NodeNameLabel: n.node}}}))
	}
	_, err = s.client.Put(ctx, "/list/"+virtkit.KindVirtualMachineInstance+"/ns/broken", `{"metadata":{"labels":{"x":"node-b"`)
	require.NoError(t, err)

	sel := labels.SelectorFromSet(labels.Set{virtkit.NodeNameLabel: "node-a"})
	l := &virtkit.VirtualMachineInstanceList{}
	require.NoError(t, s.List(ctx, l, store.ListOptions{LabelSelector: sel}))
	var names []string
	for _, v := range l.Items {
		names = append(names, v.Name)
	}
	assert.Equal(t, []string{"a1", "a2"}, names)
	assert.Empty(t, s.CorruptObjects(), "the selector list decoded a value that cannot match")

	require.NoError(t, s.List(ctx, l, store.ListOptions{}))
	assert.Len(t, l.Items, 3)
	assert.Len(t, s.CorruptObjects(), 1, "a full list finds the corrupt value")
	// A selector list after that leaves the record alone.
	require.NoError(t, s.List(ctx, l, store.ListOptions{LabelSelector: sel}))
	assert.Len(t, s.CorruptObjects(), 1)
}
