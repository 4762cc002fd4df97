package cluster_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// vmiWrite is one stored state of a VMI.
type vmiWrite struct {
	rv    int
	key   string
	phase virtkit.VirtualMachineInstancePhase
}

// writeLog wraps a store and logs every VMI state it stores: the ground
// truth an audit log must match.
type writeLog struct {
	store.Store
	mu     sync.Mutex
	writes []vmiWrite
}

func (w *writeLog) log(obj virtkit.Object, err error) error {
	vmi, ok := obj.(*virtkit.VirtualMachineInstance)
	if err != nil || !ok {
		return err
	}
	rv, perr := strconv.Atoi(vmi.ResourceVersion)
	if perr != nil {
		return fmt.Errorf("resourceVersion %q: %w", vmi.ResourceVersion, perr)
	}
	w.mu.Lock()
	w.writes = append(w.writes, vmiWrite{rv, store.KeyOf(vmi).String(), vmi.Status.Phase})
	w.mu.Unlock()
	return nil
}

func (w *writeLog) Create(ctx context.Context, obj virtkit.Object) error {
	return w.log(obj, w.Store.Create(ctx, obj))
}

func (w *writeLog) Update(ctx context.Context, obj virtkit.Object) error {
	before := obj.GetResourceVersion()
	err := w.Store.Update(ctx, obj)
	if err == nil && obj.GetResourceVersion() == before {
		return nil // nothing changed, nothing written
	}
	if err == nil && obj.GetDeletionTimestamp() != nil && len(obj.GetFinalizers()) == 0 {
		return nil // the last finalizer went: removed (a Deleted change)
	}
	return w.log(obj, err)
}

func (w *writeLog) UpdateStatus(ctx context.Context, obj virtkit.Object) error {
	before := obj.GetResourceVersion()
	err := w.Store.UpdateStatus(ctx, obj)
	if err == nil && obj.GetResourceVersion() == before {
		return nil
	}
	return w.log(obj, err)
}

func (w *writeLog) Delete(ctx context.Context, obj virtkit.Object, opts store.DeleteOptions) error {
	before := obj.GetResourceVersion()
	err := w.Store.Delete(ctx, obj, opts)
	if err != nil || obj.GetDeletionTimestamp() == nil || len(obj.GetFinalizers()) == 0 || obj.GetResourceVersion() == before {
		return err // removed (a Deleted change) or unchanged
	}
	return w.log(obj, err) // marked for deletion: a stored state
}

// The audit log built with WatchChanges holds every VMI state the store
// recorded, in order, while controllers and node agents write
// concurrently.
func TestWatchChangesSeesEveryStoredVMIState(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wl := &writeLog{Store: store.NewMemory()}
	c, err := cluster.New(cluster.Options{Store: wl, Nodes: 2})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	defer stop()

	var audit []vmiWrite
	deleted := map[string]bool{}
	auditDone := make(chan error, 1)
	var list virtkit.VirtualMachineInstanceList
	require.NoError(t, wl.List(ctx, &list, store.ListOptions{}))
	names := []string{"a", "b", "c"}
	go func() {
		auditDone <- store.WatchChanges(ctx, wl, &virtkit.VirtualMachineInstanceList{},
			store.ChangeOptions{ResourceVersion: list.ResourceVersion}, func(ch store.Change) error {
				if ch.New == nil {
					deleted[store.KeyOf(ch.Old).String()] = true
					if len(deleted) == len(names) {
						return store.StopWatching()
					}
					return nil
				}
				rv, err := strconv.Atoi(ch.ResourceVersion)
				if err != nil {
					return err
				}
				audit = append(audit, vmiWrite{rv, store.KeyOf(ch.New).String(), ch.New.(*virtkit.VirtualMachineInstance).Status.Phase})
				return nil
			})
	}()

	for _, n := range names {
		require.NoError(t, c.Apply(ctx, vmiManifest(n)))
	}
	for _, n := range names {
		_, err := c.WaitForVMI(ctx, "default", n, cluster.VMIPhaseIs(virtkit.Running))
		require.NoError(t, err)
	}
	for _, n := range names {
		vmi := &virtkit.VirtualMachineInstance{}
		require.NoError(t, wl.Get(ctx, store.Key{Namespace: "default", Name: n}, vmi))
		require.NoError(t, wl.Delete(ctx, vmi, store.DeleteOptions{}))
	}
	require.NoError(t, <-auditDone)

	// The store emits a write's event when it commits it, and the writer
	// logs the write only when its call returns: a writer preempted in
	// between logs after the watch has seen the last removal. Stop every
	// writer before reading the log.
	stop()
	wl.mu.Lock()
	truth := append([]vmiWrite(nil), wl.writes...)
	wl.mu.Unlock()
	sort.Slice(truth, func(i, j int) bool { return truth[i].rv < truth[j].rv })
	assert.Equal(t, truth, audit, "every stored state, in the store's order")
	for _, n := range names {
		var phases []virtkit.VirtualMachineInstancePhase
		for _, w := range audit {
			if w.key == "default/"+n && (len(phases) == 0 || phases[len(phases)-1] != w.phase) {
				phases = append(phases, w.phase)
			}
		}
		// Scheduling is stored only when placement had to wait (a node
		// not ready yet on a loaded machine), so it may or may not appear.
		// A deleted guest powers off on ACPI: Succeeded.
		want := []virtkit.VirtualMachineInstancePhase{"", virtkit.Scheduled, virtkit.Running, virtkit.Succeeded}
		if len(phases) > 1 && phases[1] == virtkit.Scheduling {
			want = []virtkit.VirtualMachineInstancePhase{"", virtkit.Scheduling, virtkit.Scheduled, virtkit.Running, virtkit.Succeeded}
		}
		assert.Equal(t, want, phases, n)
	}
}

func vmiManifest(name string) *virtkit.VirtualMachineInstance {
	objs, err := virtkit.DecodeBytes([]byte(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: ` + name + `, namespace: default}
spec:
  domain:
    devices: {}
    memory: {guest: 64Mi}
`))
	if err != nil {
		panic(err)
	}
	return objs[0].(*virtkit.VirtualMachineInstance)
}
