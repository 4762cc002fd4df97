package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"

	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/storetest"
)

func newTestMemory(t *testing.T, opts store.Options) *store.Memory {
	t.Helper()
	opts.Kinds = append(opts.Kinds, storetest.Kinds()...)
	s, err := store.NewMemoryWithOptions(opts)
	require.NoError(t, err)
	return s
}

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return newTestMemory(t, store.Options{}) })
}

func TestMemoryDefaultKinds(t *testing.T) {
	kinds := store.DefaultKinds()
	scopes := map[string]bool{}
	for _, k := range kinds {
		scopes[k.Name] = k.ClusterScoped
	}
	assert.Equal(t, map[string]bool{
		"VirtualMachine": false, "VirtualMachineInstance": false, "VirtualMachineInstanceMigration": false,
		"VirtualMachineInstanceReplicaSet": false, "MigrationPolicy": true, "Node": true,
		"DataVolume": false, "Event": false,
		"NetworkAttachmentDefinition": false, "IPLease": true,
		"VirtualMachineInstancetype": false, "VirtualMachineClusterInstancetype": true,
		"VirtualMachinePreference": false, "VirtualMachineClusterPreference": true,
		"ControllerRevision": false,
		"ConfigMap":          false, "Secret": false, "ServiceAccount": false, "Namespace": true,
		"VirtualMachineSnapshot": false, "VirtualMachineSnapshotContent": false, "VirtualMachineRestore": false,
		"VirtualMachineClone": false, "VirtualMachineExport": false, "KubeVirt": false,
	}, scopes)
	_, err := store.NewScheme(kinds...)
	require.NoError(t, err)

	s := store.NewMemory()
	ctx := context.Background()
	require.NoError(t, s.Create(ctx, &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}))
	require.ErrorIs(t, s.Create(ctx, &storetest.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w"}}), store.ErrUnknownKind,
		"zero options know only virtkit's kinds")
}

func TestMemoryOptionsInvalid(t *testing.T) {
	tests := []struct {
		name string
		opts store.Options
		path string
	}{
		{"negative history", store.Options{HistorySize: -1}, "historySize"},
		{"negative buffer", store.Options{WatchBuffer: -1}, "watchBuffer"},
		{"duplicate kind", store.Options{Kinds: append(storetest.Kinds(), storetest.Kinds()[0])}, "registered twice"},
		{"duplicate virtkit kind", store.Options{Kinds: store.DefaultKinds()[:1]}, "registered twice"},
		{"no name", store.Options{Kinds: []store.Kind{{Object: &storetest.Widget{}, List: &storetest.WidgetList{}}}}, "name"},
		{"no prototypes", store.Options{Kinds: []store.Kind{{Name: "X"}}}, "prototypes required"},
		{"list items of another type", store.Options{Kinds: []store.Kind{{Name: "X", Object: &storetest.Widget{}, List: &storetest.GadgetList{}}}}, "Items"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := store.NewMemoryWithOptions(tc.opts)
			require.ErrorIs(t, err, store.ErrInvalid)
			assert.Contains(t, err.Error(), tc.path)
		})
	}
}

func TestMemoryClock(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	clk := testingclock.NewFakePassiveClock(now)
	s := newTestMemory(t, store.Options{Clock: clk})
	ctx := context.Background()
	w := &storetest.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", Finalizers: []string{"f"}}}
	require.NoError(t, s.Create(ctx, w))
	assert.Equal(t, now.Truncate(time.Second), w.CreationTimestamp.Time)
	now = now.Add(time.Hour)
	clk.SetTime(now)
	require.NoError(t, s.Delete(ctx, w, store.DeleteOptions{}))
	require.NotNil(t, w.DeletionTimestamp)
	assert.Equal(t, now.Truncate(time.Second), w.DeletionTimestamp.Time)
}

// A watcher that does not read must not block writers; once it is more than
// WatchBuffer events behind it gets ErrExpired after what was queued.
func TestMemorySlowWatcherExpires(t *testing.T) {
	s := newTestMemory(t, store.Options{WatchBuffer: 5})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow, err := s.Watch(ctx, &storetest.WidgetList{}, store.WatchOptions{})
	require.NoError(t, err)
	for i := range 50 {
		require.NoError(t, s.Create(ctx, &storetest.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("w", i)}}))
	}
	var added int
	for ev := range slow {
		if ev.Type == store.Error {
			require.ErrorIs(t, ev.Err, store.ErrExpired)
			_, open := <-slow
			assert.False(t, open)
			break
		}
		assert.Equal(t, store.Added, ev.Type)
		added++
	}
	assert.Positive(t, added)
	assert.Less(t, added, 50, "the expired watcher did not get everything")

	// The store keeps working for new watchers.
	fresh, err := s.Watch(ctx, &storetest.WidgetList{}, store.WatchOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Create(ctx, &storetest.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "last"}}))
	ev := <-fresh
	assert.Equal(t, "last", ev.Object.GetName())
}

func TestMemoryHistoryBound(t *testing.T) {
	tests := []struct {
		from int // index of the create to resume after
		want error
		// names of the replayed events
		names []string
	}{
		{0, store.ErrExpired, nil}, // needs events 2..5; with 3 kept, 2 is gone
		{1, nil, []string{"w2", "w3", "w4"}},
		{3, nil, []string{"w4"}},
		{4, nil, nil},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint("after create ", tc.from), func(t *testing.T) {
			s := newTestMemory(t, store.Options{HistorySize: 3})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var rvs []string
			for i := range 5 {
				w := &storetest.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("w", i)}}
				require.NoError(t, s.Create(ctx, w))
				rvs = append(rvs, w.ResourceVersion)
			}
			ch, err := s.Watch(ctx, &storetest.WidgetList{}, store.WatchOptions{ResourceVersion: rvs[tc.from]})
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			// A marker written now ends the replay.
			require.NoError(t, s.Create(ctx, &storetest.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "marker"}}))
			var got []string
			for ev := range ch {
				if ev.Object.GetName() == "marker" {
					break
				}
				got = append(got, ev.Object.GetName())
			}
			assert.Equal(t, tc.names, got)
		})
	}
}
