package cluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/store"
)

// startVirtualCluster starts a two-node cluster on virtual time and
// settles it.
func startVirtualCluster(t *testing.T) (context.Context, *cluster.Cluster) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := cluster.New(cluster.Options{Clock: sim.NewVirtualClock(virtualStart)})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.NoError(t, c.Settle(ctx))
	return ctx, c
}

func gcTemplate(app string) *virtkit.VirtualMachineInstanceTemplateSpec {
	mem := resource.MustParse("64Mi")
	return &virtkit.VirtualMachineInstanceTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &mem}}},
	}
}

func gcVM(name string) *virtkit.VirtualMachine {
	always := virtkit.RunStrategyAlways
	return &virtkit.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       virtkit.VirtualMachineSpec{RunStrategy: &always, Template: gcTemplate(name)},
	}
}

func gcReplicaSet(name string, replicas int32) *virtkit.VirtualMachineInstanceReplicaSet {
	return &virtkit.VirtualMachineInstanceReplicaSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstanceReplicaSet},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: virtkit.VirtualMachineInstanceReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: gcTemplate(name),
		},
	}
}

// deletionLog records the resourceVersion at which each object of the
// watched kinds was deleted, by uid.
type deletionLog struct {
	mu      sync.Mutex
	deleted map[types.UID]int64
}

func watchDeletions(ctx context.Context, t *testing.T, st store.Store, lists ...virtkit.ObjectList) *deletionLog {
	t.Helper()
	d := &deletionLog{deleted: map[types.UID]int64{}}
	for _, l := range lists {
		ch, err := st.Watch(ctx, l, store.WatchOptions{})
		require.NoError(t, err)
		go func() {
			for ev := range ch {
				if ev.Type != store.Deleted {
					continue
				}
				var rv int64
				for _, c := range ev.Object.GetResourceVersion() {
					rv = rv*10 + int64(c-'0')
				}
				d.mu.Lock()
				d.deleted[ev.Object.GetUID()] = rv
				d.mu.Unlock()
			}
		}()
	}
	return d
}

func (d *deletionLog) at(uid types.UID) (int64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	rv, ok := d.deleted[uid]
	return rv, ok
}

func listVMIs(ctx context.Context, t *testing.T, c *cluster.Cluster) []virtkit.VirtualMachineInstance {
	t.Helper()
	l := &virtkit.VirtualMachineInstanceList{}
	require.NoError(t, c.Store().List(ctx, l, store.ListOptions{Namespace: "default"}))
	return l.Items
}

// TestDeletePropagation deletes a VM and a ReplicaSet with each
// propagation policy: Orphan leaves their VMIs running without owner
// references (and the VM controller's finalizer), not re-adopted later;
// Foreground deletes the VMIs before the owner; Background deletes both.
func TestDeletePropagation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy metav1.DeletionPropagation
	}{
		{"orphan", metav1.DeletePropagationOrphan},
		{"foreground", metav1.DeletePropagationForeground},
		{"background", metav1.DeletePropagationBackground},
	} {
		for _, owner := range []string{virtkit.KindVirtualMachine, virtkit.KindVirtualMachineInstanceReplicaSet} {
			t.Run(tc.name+"/"+owner, func(t *testing.T) {
				ctx, c := startVirtualCluster(t)
				deletions := watchDeletions(ctx, t, c.Store(), &virtkit.VirtualMachineList{},
					&virtkit.VirtualMachineInstanceReplicaSetList{}, &virtkit.VirtualMachineInstanceList{})
				var obj virtkit.Object
				want := 1
				if owner == virtkit.KindVirtualMachine {
					obj = gcVM("web")
				} else {
					obj, want = gcReplicaSet("web", 2), 2
				}
				require.NoError(t, c.Apply(ctx, obj))
				require.NoError(t, c.Settle(ctx))
				before := listVMIs(ctx, t, c)
				require.Len(t, before, want)
				for _, v := range before {
					require.Equal(t, virtkit.Running, v.Status.Phase)
				}

				p := tc.policy
				require.NoError(t, c.Store().Delete(ctx, obj, store.DeleteOptions{PropagationPolicy: &p}))
				require.NoError(t, c.Settle(ctx))
				require.NoError(t, c.Advance(ctx, time.Minute))

				requireGone(ctx, t, c.Store(), obj)
				ownerRV, ok := deletions.at(obj.GetUID())
				require.True(t, ok, "the owner's Deleted event")
				after := listVMIs(ctx, t, c)
				if tc.policy == metav1.DeletePropagationOrphan {
					require.Len(t, after, want, "orphaned VMIs stay")
					for _, v := range after {
						assert.Equal(t, virtkit.Running, v.Status.Phase, v.Name)
						assert.Empty(t, v.OwnerReferences, v.Name)
						assert.Nil(t, v.DeletionTimestamp, v.Name)
						assert.NotContains(t, v.Finalizers, virtkit.VirtualMachineControllerFinalizer, v.Name)
					}
				} else {
					assert.Empty(t, after, "dependents deleted")
					for _, v := range before {
						vmiRV, ok := deletions.at(v.UID)
						require.True(t, ok, v.Name)
						if tc.policy == metav1.DeletePropagationForeground {
							assert.Less(t, vmiRV, ownerRV, "foreground: %s goes before its owner", v.Name)
						}
					}
				}
				require.NoError(t, cluster.CheckOwnersAndFinalizers(ctx, c))
			})
		}
	}
}

func requireGone(ctx context.Context, t *testing.T, st store.Store, obj virtkit.Object) {
	t.Helper()
	fresh := obj.DeepCopyObject().(virtkit.Object)
	err := st.Get(ctx, store.KeyOf(obj), fresh)
	require.ErrorIs(t, err, store.ErrNotFound, "finalizers left: %v", fresh.GetFinalizers())
}

// TestOrphanedVMIAdoptedByNewVM: a VM re-created after an orphaning delete
// adopts the running VMI of its name, as KubeVirt's VM controller does.
func TestOrphanedVMIAdoptedByNewVM(t *testing.T) {
	ctx, c := startVirtualCluster(t)
	vm := gcVM("web")
	require.NoError(t, c.Apply(ctx, vm))
	require.NoError(t, c.Settle(ctx))
	orphan := metav1.DeletePropagationOrphan
	require.NoError(t, c.Store().Delete(ctx, vm, store.DeleteOptions{PropagationPolicy: &orphan}))
	require.NoError(t, c.Settle(ctx))
	vmis := listVMIs(ctx, t, c)
	require.Len(t, vmis, 1)
	require.Empty(t, vmis[0].OwnerReferences)

	again := gcVM("web")
	require.NoError(t, c.Apply(ctx, again))
	require.NoError(t, c.Settle(ctx))
	adopted := listVMIs(ctx, t, c)
	require.Len(t, adopted, 1)
	assert.Equal(t, vmis[0].UID, adopted[0].UID, "the same VMI, not a new one")
	require.Len(t, adopted[0].OwnerReferences, 1)
	assert.Equal(t, again.UID, adopted[0].OwnerReferences[0].UID)
	require.NoError(t, cluster.CheckOwnersAndFinalizers(ctx, c))
}

// TestCheckOwnersAndFinalizersReports: a dangling owner reference and an
// object held only by the garbage collector's finalizer are reported.
func TestCheckOwnersAndFinalizersReports(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	c, err := cluster.New(cluster.Options{Store: st, Clock: sim.NewVirtualClock(virtualStart)})
	require.NoError(t, err)
	vmi := newVMIObj("dangling")
	yes := true
	vmi.OwnerReferences = []metav1.OwnerReference{{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine, Name: "gone", UID: "no-such-uid", Controller: &yes}}
	require.NoError(t, st.Create(ctx, vmi))
	err = cluster.CheckOwnersAndFinalizers(ctx, c)
	require.ErrorIs(t, err, cluster.ErrOwnerInvariant)
	assert.Contains(t, err.Error(), "VirtualMachine gone uid no-such-uid, which no longer exists")
	require.NoError(t, st.Delete(ctx, vmi, store.DeleteOptions{}))

	// Nothing runs the garbage collector here: the orphan finalizer stays.
	vm := gcVM("stuck")
	require.NoError(t, st.Create(ctx, vm))
	orphan := metav1.DeletePropagationOrphan
	require.NoError(t, st.Delete(ctx, vm, store.DeleteOptions{PropagationPolicy: &orphan}))
	err = cluster.CheckOwnersAndFinalizers(ctx, c)
	require.ErrorIs(t, err, cluster.ErrOwnerInvariant)
	assert.Contains(t, err.Error(), "VirtualMachine default/stuck: being deleted")
}
