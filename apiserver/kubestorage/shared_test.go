package kubestorage_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver/kubestorage"
	"github.com/virtkit/virtkit/store"
)

// vmStorage is the storage of virtkit's VirtualMachines over backend.
func vmStorage(t testing.TB, backend kubestorage.Backend) *kubestorage.Storage {
	t.Helper()
	s, err := kubestorage.New(backend, "/kubevirt.io/virtualmachines",
		func() runtime.Object { return &virtkit.VirtualMachine{} },
		func() runtime.Object { return &virtkit.VirtualMachineList{} })
	require.NoError(t, err)
	return s
}

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	ev, ok := <-w.ResultChan()
	require.True(t, ok, "watch ended")
	return ev
}

func nextStoreEvent(t *testing.T, ch <-chan store.Event) store.Event {
	t.Helper()
	ev, ok := <-ch
	require.True(t, ok, "store watch ended")
	return ev
}

// testSharedData checks that what the storage writes the store reads and
// watches, and the other way round, with the same uid and resourceVersion.
func testSharedData(t *testing.T, backend kubestorage.Backend) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := vmStorage(t, backend)

	storeWatch, err := backend.Watch(ctx, &virtkit.VirtualMachineList{}, store.WatchOptions{})
	require.NoError(t, err)
	apiWatch, err := s.Watch(ctx, "/kubevirt.io/virtualmachines/", storage.ListOptions{
		Recursive: true, Predicate: storage.Everything, SendInitialEvents: new(bool),
	})
	require.NoError(t, err)
	defer apiWatch.Stop()

	// Written through the storage, as registry.Store writes (it sets the
	// uid and generation itself).
	in := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: "from-api", UID: types.UID("uid-api"), Generation: 1,
		Finalizers: []string{"example.com/keep"},
	}}
	created := &virtkit.VirtualMachine{}
	require.NoError(t, s.Create(ctx, "/kubevirt.io/virtualmachines/default/from-api", in, created, 0))

	got := &virtkit.VirtualMachine{}
	require.NoError(t, backend.Get(ctx, store.Key{Namespace: "default", Name: "from-api"}, got))
	assert.Equal(t, types.UID("uid-api"), got.UID, "the store keeps the uid the server set")
	assert.Equal(t, created.ResourceVersion, got.ResourceVersion)
	assert.Equal(t, []string{"example.com/keep"}, got.Finalizers)
	ev := nextStoreEvent(t, storeWatch)
	assert.Equal(t, store.Added, ev.Type)
	assert.Equal(t, created.ResourceVersion, ev.Object.GetResourceVersion())
	apiEv := nextEvent(t, apiWatch)
	assert.Equal(t, watch.Added, apiEv.Type)
	assert.Equal(t, created.ResourceVersion, apiEv.Object.(*virtkit.VirtualMachine).ResourceVersion)

	// Written through the store, as a controller writes.
	vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "from-store"}}
	require.NoError(t, backend.Create(ctx, vm))
	viaAPI := &virtkit.VirtualMachine{}
	require.NoError(t, s.Get(ctx, "/kubevirt.io/virtualmachines/default/from-store", storage.GetOptions{}, viaAPI))
	assert.Equal(t, vm.UID, viaAPI.UID)
	assert.Equal(t, vm.ResourceVersion, viaAPI.ResourceVersion)
	assert.Equal(t, store.Added, nextStoreEvent(t, storeWatch).Type)
	apiEv = nextEvent(t, apiWatch)
	assert.Equal(t, watch.Added, apiEv.Type)
	assert.Equal(t, vm.UID, apiEv.Object.(*virtkit.VirtualMachine).UID)
	assert.Equal(t, vm.ResourceVersion, apiEv.Object.(*virtkit.VirtualMachine).ResourceVersion)

	// An update through the storage is one store event and keeps what
	// the server wrote (no generation bump, no status kept by the store).
	updated := &virtkit.VirtualMachine{}
	require.NoError(t, s.GuaranteedUpdate(ctx, "/kubevirt.io/virtualmachines/default/from-store", updated, false, nil,
		storage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
			v := obj.(*virtkit.VirtualMachine)
			v.Labels = map[string]string{"a": "b"}
			v.Status.Ready = true
			return v, nil
		}), nil))
	ev = nextStoreEvent(t, storeWatch)
	assert.Equal(t, store.Modified, ev.Type)
	assert.Equal(t, updated.ResourceVersion, ev.Object.GetResourceVersion())
	assert.True(t, ev.Object.(*virtkit.VirtualMachine).Status.Ready)
	assert.Equal(t, vm.Generation, ev.Object.GetGeneration(), "the storage applies no generation rule of its own")
	apiEv = nextEvent(t, apiWatch)
	assert.Equal(t, watch.Modified, apiEv.Type)
	assert.Equal(t, updated.ResourceVersion, apiEv.Object.(*virtkit.VirtualMachine).ResourceVersion)

	// A store update conflicts with the storage's write, as it must.
	vm.Labels = map[string]string{"c": "d"}
	require.ErrorIs(t, backend.Update(ctx, vm), store.ErrConflict)

	// A delete through the store is seen by the server's watch, at the
	// deletion's version.
	require.NoError(t, backend.Get(ctx, store.Key{Namespace: "default", Name: "from-store"}, vm))
	require.NoError(t, backend.Delete(ctx, vm, store.DeleteOptions{}))
	apiEv = nextEvent(t, apiWatch)
	assert.Equal(t, watch.Deleted, apiEv.Type)
	assert.Equal(t, vm.ResourceVersion, apiEv.Object.(*virtkit.VirtualMachine).ResourceVersion)

	// A delete through the storage ignores finalizers (the server has
	// decided) and the store's watchers see it.
	nextStoreEvent(t, storeWatch) // the store's own Delete
	deleted := &virtkit.VirtualMachine{}
	require.NoError(t, s.Delete(ctx, "/kubevirt.io/virtualmachines/default/from-api", deleted, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{}))
	ev = nextStoreEvent(t, storeWatch)
	assert.Equal(t, store.Deleted, ev.Type)
	assert.Equal(t, deleted.ResourceVersion, ev.Object.GetResourceVersion())
	require.ErrorIs(t, backend.Get(ctx, store.Key{Namespace: "default", Name: "from-api"}, got), store.ErrNotFound)
}

func TestSharedDataMemory(t *testing.T) {
	m, err := store.NewMemoryWithOptions(store.Options{StartResourceVersion: 1})
	require.NoError(t, err)
	testSharedData(t, m)
}

func TestSharedDataEtcd(t *testing.T) {
	testSharedData(t, newEtcdHarness(t).backend)
}

// A memory store that starts at resourceVersion 0 cannot name its empty
// state to Kubernetes: the storage says which option fixes it.
func TestListOfStoreAtVersionZero(t *testing.T) {
	s := vmStorage(t, store.NewMemory())
	err := s.GetList(context.Background(), "/kubevirt.io/virtualmachines/", storage.ListOptions{Recursive: true, Predicate: storage.Everything}, &virtkit.VirtualMachineList{})
	require.ErrorIs(t, err, kubestorage.ErrBackend)
	assert.Contains(t, err.Error(), "StartResourceVersion")
}
