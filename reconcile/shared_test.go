package reconcile

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// watchCountingStore counts the store watches and lists opened through it.
type watchCountingStore struct {
	store.Store
	watches, lists atomic.Int64
}

func (s *watchCountingStore) Watch(ctx context.Context, list virtkit.ObjectList, opts store.WatchOptions) (<-chan store.Event, error) {
	s.watches.Add(1)
	return s.Store.Watch(ctx, list, opts)
}

func (s *watchCountingStore) List(ctx context.Context, list virtkit.ObjectList, opts store.ListOptions) error {
	s.lists.Add(1)
	return s.Store.List(ctx, list, opts)
}

func sharedVMI(name, node string, lbls map[string]string, owner string) *virtkit.VirtualMachineInstance {
	v := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: lbls}}
	v.Status.NodeName = node
	if owner != "" {
		v.OwnerReferences = []metav1.OwnerReference{newControllerRef(&metav1.ObjectMeta{Name: owner, UID: "u-" + "owner"}, virtkit.KindVirtualMachine)}
	}
	return v
}

func startShared(t *testing.T, st store.Store) (*SharedCache, context.Context) {
	t.Helper()
	c, err := NewSharedCache(st, SharedCacheOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return c, ctx
}

func nextEvent(t *testing.T, ch <-chan store.Event) store.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		require.True(t, ok, "watch closed")
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event")
		return store.Event{}
	}
}

// Many controllers of a process watching one kind cost one store watch.
func TestSharedCacheOneStoreWatchPerKind(t *testing.T) {
	st := &watchCountingStore{Store: store.NewMemory()}
	c, ctx := startShared(t, st)

	var seen [5]atomic.Int64
	for i := range seen {
		ctrl, err := New(c, ReconcilerFunc(func(context.Context, Request) (Result, error) {
			seen[i].Add(1)
			return Result{}, nil
		}), Options{Name: "c"}, Watch{NewList: vmiList}, Watch{NewList: vmList})
		require.NoError(t, err)
		go func() { _ = ctrl.Start(ctx) }()
	}
	require.NoError(t, st.Create(ctx, sharedVMI("a", "", nil, "")))
	for i := range seen {
		require.Eventually(t, func() bool { return seen[i].Load() >= 1 }, 30*time.Second, time.Millisecond, "controller %d", i)
	}
	assert.Equal(t, int64(2), st.watches.Load(), "one store watch per kind (VMI, VM) for five controllers")
	assert.Equal(t, int64(2), st.lists.Load(), "one store list per kind; the controllers list the cache")
}

func TestSharedCacheReadsAndIndexes(t *testing.T) {
	st := store.NewMemory()
	c, ctx := startShared(t, st)
	require.NoError(t, st.Create(ctx, sharedVMI("a", "n1", map[string]string{"app": "x"}, "vm-a")))
	require.NoError(t, st.Create(ctx, sharedVMI("b", "n2", map[string]string{"app": "y"}, "")))

	list := &virtkit.VirtualMachineInstanceList{}
	require.NoError(t, c.List(ctx, list, store.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"app": "x"})}))
	require.Len(t, list.Items, 1)
	assert.Equal(t, "a", list.Items[0].Name)
	assert.NotEmpty(t, list.ResourceVersion)

	events, err := c.Watch(ctx, &virtkit.VirtualMachineInstanceList{}, store.WatchOptions{ResourceVersion: list.ResourceVersion, ReadOnly: true})
	require.NoError(t, err)
	require.NoError(t, st.Create(ctx, sharedVMI("c", "n1", nil, "")))
	ev := nextEvent(t, events)
	assert.Equal(t, store.Added, ev.Type)
	assert.Equal(t, "c", ev.Object.GetName())

	// After the event, reads see it (the cache is updated before watchers hear of it).
	got := &virtkit.VirtualMachineInstance{}
	require.NoError(t, c.Get(ctx, store.Key{Namespace: "ns", Name: "c"}, got))
	got.Labels = map[string]string{"mutated": "copy"} // a copy: the cache is untouched
	shared, ok, err := c.GetShared(ctx, &virtkit.VirtualMachineInstanceList{}, store.Key{Namespace: "ns", Name: "c"})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Empty(t, shared.GetLabels())
	require.ErrorIs(t, c.Get(ctx, store.Key{Namespace: "ns", Name: "zz"}, got), store.ErrNotFound)

	names := func(objs []virtkit.Object, err error) []string {
		require.NoError(t, err)
		var out []string
		for _, o := range objs {
			out = append(out, o.GetName())
		}
		return out
	}
	vmis := &virtkit.VirtualMachineInstanceList{}
	assert.Equal(t, []string{"a", "c"}, names(c.ByIndex(ctx, vmis, IndexNode, "n1")))
	assert.Equal(t, []string{"a"}, names(c.ByIndex(ctx, vmis, IndexOwner, "ns/vm-a")))
	assert.Equal(t, []string{"b"}, names(c.ByIndex(ctx, vmis, IndexLabel, "app=y")))

	// Deletions leave the indexes.
	del := sharedVMI("a", "", nil, "")
	require.NoError(t, st.Delete(ctx, del, store.DeleteOptions{}))
	ev = nextEvent(t, events)
	assert.Equal(t, store.Deleted, ev.Type)
	assert.Equal(t, []string{"c"}, names(c.ByIndex(ctx, vmis, IndexNode, "n1")))
}

// A label selector on a cache watch reports objects entering and leaving it.
func TestSharedCacheWatchSelectorTransitions(t *testing.T) {
	st := store.NewMemory()
	c, ctx := startShared(t, st)
	list := &virtkit.VirtualMachineInstanceList{}
	require.NoError(t, c.List(ctx, list, store.ListOptions{}))
	sel := labels.SelectorFromSet(labels.Set{virtkit.NodeNameLabel: "n1"})
	events, err := c.Watch(ctx, list, store.WatchOptions{ResourceVersion: list.ResourceVersion, LabelSelector: sel})
	require.NoError(t, err)

	v := sharedVMI("a", "", nil, "")
	require.NoError(t, st.Create(ctx, v)) // not matching: nothing
	v.Labels = map[string]string{virtkit.NodeNameLabel: "n1"}
	require.NoError(t, st.Update(ctx, v))
	ev := nextEvent(t, events)
	assert.Equal(t, store.Added, ev.Type, "starts matching")
	v.Labels[virtkit.NodeNameLabel] = "n2"
	require.NoError(t, st.Update(ctx, v))
	ev = nextEvent(t, events)
	assert.Equal(t, store.Deleted, ev.Type, "stops matching")
	ev.Object.SetName("changed") // not ReadOnly: the watcher's own copy
	shared, _, err := c.GetShared(ctx, list, store.Key{Namespace: "ns", Name: "a"})
	require.NoError(t, err)
	assert.Equal(t, "a", shared.GetName())
}

// A watch from a version the cache no longer has is refused with
// ErrExpired, as the store does, so the runner relists.
func TestSharedCacheWatchExpired(t *testing.T) {
	st := store.NewMemory()
	c, err := NewSharedCache(st, SharedCacheOptions{History: 2})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = c.Start(ctx) }()
	list := &virtkit.VirtualMachineInstanceList{}
	require.NoError(t, c.List(ctx, list, store.ListOptions{}))
	old := list.ResourceVersion
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		require.NoError(t, st.Create(ctx, sharedVMI(n, "", nil, "")))
	}
	require.Eventually(t, func() bool {
		l := &virtkit.VirtualMachineInstanceList{}
		return c.List(ctx, l, store.ListOptions{}) == nil && len(l.Items) == 5
	}, 30*time.Second, time.Millisecond)
	_, err = c.Watch(ctx, list, store.WatchOptions{ResourceVersion: old})
	require.ErrorIs(t, err, store.ErrExpired)
	_, err = c.Watch(ctx, list, store.WatchOptions{SendInitialEvents: true})
	require.ErrorIs(t, err, virtkit.ErrNotSupported)
}

func TestNewSharedCacheValidates(t *testing.T) {
	_, err := NewSharedCache(nil, SharedCacheOptions{})
	require.ErrorIs(t, err, virtkit.ErrInvalidOptions)
	_, err = NewSharedCache(store.NewMemory(), SharedCacheOptions{History: -1})
	require.ErrorIs(t, err, virtkit.ErrInvalidOptions)
}

// Controllers keep the cache running themselves (a process that starts
// only its controllers, a leader that stops and later starts them again).
func TestSharedCacheRunsWhileControllersRun(t *testing.T) {
	st := store.NewMemory()
	c, err := NewSharedCache(st, SharedCacheOptions{})
	require.NoError(t, err)
	ctx := context.Background()
	for round := range 2 {
		seen := make(chan string, 10)
		ctrl, err := New(c, ReconcilerFunc(func(_ context.Context, req Request) (Result, error) {
			seen <- req.Name
			return Result{}, nil
		}), Options{}, Watch{NewList: vmiList})
		require.NoError(t, err)
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- ctrl.Start(rctx) }()
		name := fmt.Sprintf("r%d", round)
		require.NoError(t, st.Create(ctx, sharedVMI(name, "", nil, "")))
		deadline := time.After(30 * time.Second)
	wait:
		for {
			select {
			case got := <-seen:
				if got == name {
					break wait
				}
			case <-deadline:
				t.Fatalf("round %d: %s not reconciled", round, name)
			}
		}
		cancel()
		require.NoError(t, <-done)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Nil(t, c.run, "the cache stops with its last user")
}

// A write that removes an object (its last finalizer taken off a deleted
// one) is not assumed back into the cache: its Deleted event may have been
// handled before the writer returned, and nothing would remove it again.
func TestSharedCacheDoesNotAssumeARemovedObject(t *testing.T) {
	st := store.NewMemory()
	c, ctx := startShared(t, st)
	vmi := sharedVMI("gone", "n1", nil, "")
	vmi.Finalizers = []string{"test/hold"}
	require.NoError(t, st.Create(ctx, vmi))
	require.NoError(t, st.Delete(ctx, vmi, store.DeleteOptions{}))
	require.NoError(t, st.Get(ctx, store.KeyOf(vmi), vmi))
	vmi.Finalizers = nil
	require.NoError(t, st.Update(ctx, vmi)) // removes it; vmi now carries the deletion's version
	require.Eventually(t, func() bool {
		_, ok, err := c.GetShared(ctx, &virtkit.VirtualMachineInstanceList{}, store.KeyOf(vmi))
		return err == nil && !ok
	}, 10*time.Second, 5*time.Millisecond, "the cache sees the deletion")

	c.Assume(vmi) // what the writer's wrapper does after its Update returned
	_, ok, err := c.GetShared(ctx, &virtkit.VirtualMachineInstanceList{}, store.KeyOf(vmi))
	require.NoError(t, err)
	assert.False(t, ok, "a removed object came back into the cache")
}

func vmiList() virtkit.ObjectList { return &virtkit.VirtualMachineInstanceList{} }
func vmList() virtkit.ObjectList  { return &virtkit.VirtualMachineList{} }

// newControllerRef is the controller owner reference the built-in
// reconcilers put on what they create.
func newControllerRef(owner metav1.Object, kind string) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{
		APIVersion:         virtkit.APIVersion,
		Kind:               kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         &yes,
		BlockOwnerDeletion: &yes,
	}
}

// A write assumed after the stream has delivered it and what followed it
// (here the object's deletion by someone else) does not put the object
// back: a writer's Assume can come after the watch's events when the
// writer is slow to return.
func TestSharedCacheDoesNotAssumeAWriteTheStreamPassed(t *testing.T) {
	st := store.NewMemory()
	c, ctx := startShared(t, st)
	vmi := sharedVMI("late", "n1", nil, "")
	require.NoError(t, st.Create(ctx, vmi))
	vmi.Labels = map[string]string{"written": "by a slow writer"}
	require.NoError(t, st.Update(ctx, vmi))
	written := vmi.DeepCopy()
	require.NoError(t, st.Delete(ctx, vmi, store.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, ok, err := c.GetShared(ctx, &virtkit.VirtualMachineInstanceList{}, store.KeyOf(vmi))
		return err == nil && !ok
	}, 10*time.Second, 5*time.Millisecond, "the cache sees the deletion")

	c.Assume(written) // the slow writer's wrapper, after its Update returned
	_, ok, err := c.GetShared(ctx, &virtkit.VirtualMachineInstanceList{}, store.KeyOf(vmi))
	require.NoError(t, err)
	assert.False(t, ok, "a deleted object came back into the cache")
}
