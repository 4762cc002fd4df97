package cluster

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// WriteCounts are the store calls a [CountingStore] saw for one kind.
type WriteCounts struct {
	Creates, Updates, StatusUpdates, Deletes uint64
	// UpdatesWithStatus are single writes of metadata and status
	// (store.StatusWriter).
	UpdatesWithStatus uint64
	// Conflicts are writes the store refused with store.ErrConflict;
	// NoOps are updates that changed nothing (the resourceVersion stayed).
	// Both are counted in the totals above too.
	Conflicts, NoOps uint64
	Gets, Lists      uint64
}

// Writes is every write call: creates, updates, status updates, deletes.
func (w WriteCounts) Writes() uint64 {
	return w.Creates + w.Updates + w.StatusUpdates + w.UpdatesWithStatus + w.Deletes
}

// CountingStore wraps a store and counts its calls per kind, so a run can
// say how many writes and reads each VM cost. It is safe for concurrent use.
type CountingStore struct {
	store.Store
	kinds sync.Map // kind name -> *kindCounts
}

type kindCounts struct {
	creates, updates, statusUpdates, withStatus, deletes, conflicts, noops, gets, lists atomic.Uint64
}

// NewCountingStore wraps st.
func NewCountingStore(st store.Store) *CountingStore {
	return &CountingStore{Store: st}
}

func (c *CountingStore) kind(obj any) *kindCounts {
	var name string
	switch o := obj.(type) {
	case virtkit.ObjectList:
		name = listKind(o)
	case virtkit.Object:
		name = objKind(o)
	}
	if k, ok := c.kinds.Load(name); ok {
		return k.(*kindCounts)
	}
	k, _ := c.kinds.LoadOrStore(name, &kindCounts{})
	return k.(*kindCounts)
}

func objKind(o virtkit.Object) string {
	if gvk, ok := virtkit.GVKOf(o); ok {
		return gvk.Kind
	}
	return "other"
}

func listKind(l virtkit.ObjectList) string {
	switch l.(type) {
	case *virtkit.VirtualMachineList:
		return virtkit.KindVirtualMachine
	case *virtkit.VirtualMachineInstanceList:
		return virtkit.KindVirtualMachineInstance
	case *virtkit.VirtualMachineInstanceMigrationList:
		return virtkit.KindVirtualMachineInstanceMigration
	case *virtkit.NodeList:
		return virtkit.KindNode
	}
	return "other"
}

func (c *CountingStore) count(k *kindCounts, n *atomic.Uint64, err error) error {
	n.Add(1)
	if errors.Is(err, store.ErrConflict) {
		k.conflicts.Add(1)
	}
	return err
}

// Get implements store.Store.
func (c *CountingStore) Get(ctx context.Context, key store.Key, obj virtkit.Object) error {
	c.kind(obj).gets.Add(1)
	return c.Store.Get(ctx, key, obj)
}

// List implements store.Store.
func (c *CountingStore) List(ctx context.Context, list virtkit.ObjectList, opts store.ListOptions) error {
	c.kind(list).lists.Add(1)
	return c.Store.List(ctx, list, opts)
}

// Create implements store.Store.
func (c *CountingStore) Create(ctx context.Context, obj virtkit.Object) error {
	k := c.kind(obj)
	return c.count(k, &k.creates, c.Store.Create(ctx, obj))
}

// Update implements store.Store.
func (c *CountingStore) Update(ctx context.Context, obj virtkit.Object) error {
	k := c.kind(obj)
	rv := obj.GetResourceVersion()
	err := c.count(k, &k.updates, c.Store.Update(ctx, obj))
	if err == nil && obj.GetResourceVersion() == rv {
		k.noops.Add(1)
	}
	return err
}

// UpdateStatus implements store.Store.
func (c *CountingStore) UpdateStatus(ctx context.Context, obj virtkit.Object) error {
	k := c.kind(obj)
	rv := obj.GetResourceVersion()
	err := c.count(k, &k.statusUpdates, c.Store.UpdateStatus(ctx, obj))
	if err == nil && obj.GetResourceVersion() == rv {
		k.noops.Add(1)
	}
	return err
}

// UpdateWithStatus implements store.StatusWriter: one write when the
// wrapped store is a StatusWriter, else store.UpdateWithStatus's two
// (counted as an update and a status update).
func (c *CountingStore) UpdateWithStatus(ctx context.Context, obj virtkit.Object) error {
	if _, ok := c.Store.(store.StatusWriter); !ok {
		return store.UpdateWithStatus(ctx, storeOnly{c}, obj)
	}
	k := c.kind(obj)
	rv := obj.GetResourceVersion()
	err := c.count(k, &k.withStatus, store.UpdateWithStatus(ctx, c.Store, obj))
	if err == nil && obj.GetResourceVersion() == rv {
		k.noops.Add(1)
	}
	return err
}

// storeOnly hides CountingStore's StatusWriter.
type storeOnly struct{ store.Store }

// Delete implements store.Store.
func (c *CountingStore) Delete(ctx context.Context, obj virtkit.Object, opts store.DeleteOptions) error {
	k := c.kind(obj)
	return c.count(k, &k.deletes, c.Store.Delete(ctx, obj, opts))
}

// Counts returns the counts so far per kind ("VirtualMachine",
// "VirtualMachineInstance", "Node", ...).
func (c *CountingStore) Counts() map[string]WriteCounts {
	out := map[string]WriteCounts{}
	c.kinds.Range(func(name, v any) bool {
		k := v.(*kindCounts)
		out[name.(string)] = WriteCounts{
			Creates: k.creates.Load(), Updates: k.updates.Load(), StatusUpdates: k.statusUpdates.Load(),
			UpdatesWithStatus: k.withStatus.Load(),
			Deletes:           k.deletes.Load(), Conflicts: k.conflicts.Load(), NoOps: k.noops.Load(), Gets: k.gets.Load(), Lists: k.lists.Load(),
		}
		return true
	})
	return out
}
