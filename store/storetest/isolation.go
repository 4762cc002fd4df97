package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testDeepCopyIsolation(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	w := widget("ns", "w", 1, map[string]string{"a": "1"})
	create(t, s, w)
	key := store.KeyOf(w)
	watch, err := s.Watch(ctx, &WidgetList{}, store.WatchOptions{SendInitialEvents: true})
	require.NoError(t, err)

	// Mutating what was passed to Create changes nothing stored.
	w.Spec.Tags[0] = "mutated"
	w.Spec.Attrs["k"] = "mutated"
	w.Labels["a"] = "mutated"

	got := &Widget{}
	require.NoError(t, s.Get(ctx, key, got))
	assert.Equal(t, []string{"a"}, got.Spec.Tags)
	assert.Equal(t, "v", got.Spec.Attrs["k"])
	assert.Equal(t, "1", got.Labels["a"])

	// Mutating a returned object changes nothing stored.
	got.Spec.Tags[0] = "mutated"
	got.Spec.Attrs["k"] = "mutated"
	list := &WidgetList{}
	require.NoError(t, s.List(ctx, list, store.ListOptions{}))
	require.Len(t, list.Items, 1)
	assert.Equal(t, []string{"a"}, list.Items[0].Spec.Tags)
	list.Items[0].Spec.Attrs["k"] = "mutated"
	ev := nextEvent(t, watch)
	ev.Object.(*Widget).Spec.Attrs["k"] = "mutated"

	// Mutating obj after Update changes nothing stored.
	fresh := &Widget{}
	require.NoError(t, s.Get(ctx, key, fresh))
	assert.Equal(t, "v", fresh.Spec.Attrs["k"])
	fresh.Spec.Size = 2
	require.NoError(t, s.Update(ctx, fresh))
	fresh.Spec.Attrs["k"] = "mutated"
	fresh.Status.Notes = []string{"x"}
	require.NoError(t, s.Get(ctx, key, got))
	assert.Equal(t, "v", got.Spec.Attrs["k"])
	assert.Empty(t, got.Status.Notes)

	// Two watchers get separate copies.
	w1, err := s.Watch(ctx, &WidgetList{}, store.WatchOptions{ResourceVersion: got.ResourceVersion})
	require.NoError(t, err)
	w2, err := s.Watch(ctx, &WidgetList{}, store.WatchOptions{ResourceVersion: got.ResourceVersion})
	require.NoError(t, err)
	got.Spec.Size = 3
	require.NoError(t, s.Update(ctx, got))
	e1, e2 := nextEvent(t, w1), nextEvent(t, w2)
	e1.Object.(*Widget).Spec.Attrs["k"] = "mutated"
	assert.Equal(t, "v", e2.Object.(*Widget).Spec.Attrs["k"])
}

// testConcurrentUpdates: many writers doing read-modify-write with retry on
// conflict lose no increment; of writers racing from one version, exactly
// one wins.
func testConcurrentUpdates(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	w := widget("ns", "counter", 0, nil)
	create(t, s, w)
	const writers, increments = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range increments {
				for {
					cur := &Widget{}
					if err := s.Get(ctx, store.KeyOf(w), cur); err != nil {
						errs <- err
						return
					}
					cur.Spec.Size++
					cur.Spec.Tags = append(cur.Spec.Tags, fmt.Sprint(i))
					err := s.Update(ctx, cur)
					if errors.Is(err, store.ErrConflict) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	got := &Widget{}
	require.NoError(t, s.Get(ctx, store.KeyOf(w), got))
	assert.Equal(t, writers*increments, got.Spec.Size, "no lost update")
	assert.Equal(t, int64(1+writers*increments), got.Generation)

	// Racing from the same version: exactly one wins.
	var wins, conflicts int
	var mu sync.Mutex
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := got.DeepCopy()
			mine.Status.Count = i + 1
			err := s.UpdateStatus(ctx, mine)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, store.ErrConflict):
				conflicts++
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, wins)
	assert.Equal(t, writers-1, conflicts)
}

// testVirtkitKinds checks the store knows virtkit's own kinds by default,
// with their scopes.
func testVirtkitKinds(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	gi := resource.MustParse("1Gi")
	vmi := &virtkit.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vmi1", Labels: map[string]string{"app": "x"}},
		Spec:       virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &gi}}},
		Status:     virtkit.VirtualMachineInstanceStatus{Phase: virtkit.Pending},
	}
	ch, err := s.Watch(ctx, &virtkit.VirtualMachineInstanceList{}, store.WatchOptions{Namespace: "default"})
	require.NoError(t, err)
	create(t, s, vmi)
	twoGi := resource.MustParse("2Gi")
	vmi.Spec.Domain.Memory.Guest = &twoGi
	require.NoError(t, s.Update(ctx, vmi))
	assert.Equal(t, int64(2), vmi.Generation)
	vmi.Status.Phase = virtkit.Running
	vmi.Status.NodeName = "node1"
	require.NoError(t, s.UpdateStatus(ctx, vmi))

	got := &virtkit.VirtualMachineInstance{}
	require.NoError(t, s.Get(ctx, store.Key{Namespace: "default", Name: "vmi1"}, got))
	assert.Equal(t, virtkit.Running, got.Status.Phase)
	assert.Equal(t, "node1", got.Status.NodeName)
	assert.Equal(t, "2Gi", got.Spec.Domain.Memory.Guest.String())
	assert.Equal(t, []seen{{store.Added, "default/vmi1"}, {store.Modified, "default/vmi1"}, {store.Modified, "default/vmi1"}}, collect(t, ch, 3))

	wrongVersion := vmi.DeepCopy()
	wrongVersion.APIVersion = "kubevirt.io/v2"
	requireWrapped(t, s.Update(ctx, wrongVersion), store.ErrInvalid)

	for _, obj := range []virtkit.Object{
		&virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}},
		&virtkit.MigrationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "policy1"}},
	} {
		create(t, s, obj)
		bad := obj.DeepCopyObject().(virtkit.Object)
		bad.SetResourceVersion("")
		bad.SetName("other")
		bad.SetNamespace("default")
		requireWrapped(t, s.Create(ctx, bad), store.ErrInvalid)
	}
	nodes := &virtkit.NodeList{}
	require.NoError(t, s.List(ctx, nodes, store.ListOptions{}))
	require.Len(t, nodes.Items, 1)
	assert.Equal(t, "node1", nodes.Items[0].Name)
	for _, obj := range []virtkit.Object{
		&virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm1"}},
		&virtkit.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "mig1"}},
		&virtkit.VirtualMachineInstanceReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "rs1"}},
	} {
		create(t, s, obj)
	}
	vms := &virtkit.VirtualMachineList{}
	require.NoError(t, s.List(ctx, vms, store.ListOptions{Namespace: "default"}))
	require.Len(t, vms.Items, 1)
}
