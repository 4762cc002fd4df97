package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/store"
)

// waitRestore waits for the restore name to complete.
func (e *snapEnv) waitRestore(ctx context.Context, name string) *virtkit.VirtualMachineRestore {
	e.t.Helper()
	rs, err := cluster.WaitFor(ctx, e.c.Store(), store.Key{Namespace: "default", Name: name},
		func() *virtkit.VirtualMachineRestore { return &virtkit.VirtualMachineRestore{} }, &virtkit.VirtualMachineRestoreList{},
		func(r *virtkit.VirtualMachineRestore, found bool) bool {
			return found && r.Status != nil && r.Status.Complete != nil && *r.Status.Complete
		})
	if err != nil {
		last := &virtkit.VirtualMachineRestore{}
		_ = e.c.Store().Get(context.WithoutCancel(ctx), store.Key{Namespace: "default", Name: name}, last)
		require.NoError(e.t, err, "restore status: %+v", last.Status)
	}
	return rs
}

func restoreOf(name, snapshot, target string, policy *virtkit.VolumeRestorePolicy, patches ...string) *virtkit.VirtualMachineRestore {
	group := virtkit.GroupName
	return &virtkit.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: virtkit.VirtualMachineRestoreSpec{VirtualMachineSnapshotName: snapshot, VolumeRestorePolicy: policy, Patches: patches,
			Target: virtkit.TypedLocalObjectReference{APIGroup: &group, Kind: virtkit.KindVirtualMachine, Name: target}}}
}

// The InPlace policy restores the snapshot's data over the VM's own
// volume: the DataVolume keeps its name (nothing is deleted), the data is
// the snapshot's, and the restore's patches reach the VM. A restore with
// InPlace into another VM is refused.
func TestRestoreInPlaceWithPatches(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	e := newCloneEnv(t, ctx, cluster.Options{})
	e.applyVM(ctx, "db", "Halted")
	e.writeOffline(ctx, "db-root", "v1")
	before := e.waitDV(ctx, "db-root")
	e.snapshot(ctx, "db-snap", "db")
	e.writeOffline(ctx, "db-root", "v2")

	inPlace := virtkit.VolumeRestorePolicyInPlace
	err := e.c.Apply(ctx, restoreOf("elsewhere", "db-snap", "other", &inPlace))
	require.ErrorIs(t, err, cluster.ErrInvalidObject)
	fes := cluster.FieldErrors(err)
	require.Len(t, fes, 1)
	assert.Equal(t, "spec.volumeRestorePolicy", fes[0].Field)
	assert.Equal(t, field.ErrorTypeForbidden, fes[0].Type)

	require.NoError(t, e.c.Apply(ctx, restoreOf("db-restore", "db-snap", "db", &inPlace,
		`{"op": "add", "path": "/spec/template/metadata/labels", "value": {"restored": "yes"}}`,
		`{"op": "replace", "path": "/spec/template/spec/domain/resources/requests/memory", "value": "96Mi"}`)))
	rs := e.waitRestore(ctx, "db-restore")
	require.Len(t, rs.Status.Restores, 1)
	assert.Equal(t, "db-root", rs.Status.Restores[0].PersistentVolumeClaim, "InPlace keeps the claim's name")
	assert.Empty(t, rs.Status.DeletedDataVolumes)

	dv := e.waitDV(ctx, "db-root")
	assert.Equal(t, before.UID, dv.UID, "the DataVolume is overwritten, not made again")
	assert.Equal(t, "db-restore", dv.Annotations[virtkit.RestoreNameAnnotation])
	assert.Equal(t, "db", dv.Labels[virtkit.RestoreSourceVMNameLabel])
	assert.Equal(t, "default", dv.Labels[virtkit.RestoreSourceVMNamespaceLabel])
	assert.Equal(t, "v1", e.readMarker(ctx, "db-root"), "the data of the snapshot is back in place")

	vm := e.vm(ctx, "db")
	assert.Equal(t, "db-root", vm.Spec.Template.Spec.Volumes[0].DataVolume.Name)
	assert.Equal(t, "yes", vm.Spec.Template.ObjectMeta.Labels["restored"])
	mem := vm.Spec.Template.Spec.Domain.Resources.Requests[virtkit.ResourceMemory]
	want := resource.MustParse("96Mi")
	assert.Equal(t, want.Value(), mem.Value(), "the patch applies to the restored spec")
	assert.Equal(t, virtkit.RunStrategyHalted, *vm.Spec.RunStrategy)
}

// A restore to a new VM with the default policy labels the restored
// DataVolumes with the source VM (what kubevirt_vmsnapshot_disks_restored_from_source
// counts) and applies its patches to the new VM.
func TestRestoreNewVMPatches(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	e := newCloneEnv(t, ctx, cluster.Options{})
	e.applyVM(ctx, "web", "Halted")
	e.snapshot(ctx, "web-snap", "web")
	require.NoError(t, e.c.Apply(ctx, restoreOf("web-copy", "web-snap", "web2", nil,
		`{"op": "add", "path": "/spec/template/metadata/labels", "value": {"copy": "true"}}`)))
	rs := e.waitRestore(ctx, "web-copy")
	require.Len(t, rs.Status.Restores, 1)
	dv := e.waitDV(ctx, rs.Status.Restores[0].PersistentVolumeClaim)
	assert.Equal(t, "web", dv.Labels[virtkit.RestoreSourceVMNameLabel])
	vm := e.vm(ctx, "web2")
	assert.Equal(t, "true", vm.Spec.Template.ObjectMeta.Labels["copy"])

	// A patch that does not apply keeps the restore waiting, with the
	// reason in its Ready condition.
	require.NoError(t, e.c.Apply(ctx, restoreOf("web-bad", "web-snap", "web3", nil,
		`{"op": "test", "path": "/spec/runStrategy", "value": "Always"}`)))
	got, err := cluster.WaitFor(ctx, e.c.Store(), store.Key{Namespace: "default", Name: "web-bad"},
		func() *virtkit.VirtualMachineRestore { return &virtkit.VirtualMachineRestore{} }, &virtkit.VirtualMachineRestoreList{},
		func(r *virtkit.VirtualMachineRestore, found bool) bool {
			if !found || r.Status == nil {
				return false
			}
			for _, c := range r.Status.Conditions {
				if c.Type == virtkit.ConditionReady && c.Status == virtkit.ConditionFalse && c.Message != "" && c.Message != "Initializing VirtualMachineRestore" {
					return true
				}
			}
			return false
		})
	require.NoError(t, err)
	assert.False(t, *got.Status.Complete)
	e.hasEvent(ctx, controller.EventReasonRestoreError)
}

// A clone's patches apply to the target after the clone's own changes; a
// patch that does not apply fails the clone.
func TestClonePatches(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	e := newCloneEnv(t, ctx, cluster.Options{})
	e.applyVM(ctx, "src", "Halted")
	cl := e.clone(ctx, &virtkit.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Name: "copy"},
		Spec: virtkit.VirtualMachineCloneSpec{Source: vmRef("src"), Target: vmRef("src-copy"),
			Patches: []string{
				`{"op": "replace", "path": "/spec/template/spec/domain/devices/interfaces/0/macAddress", "value": "02:00:00:00:00:cc"}`,
				`{"op": "add", "path": "/metadata/annotations/cloned", "value": "yes"}`,
			}}})
	require.Equal(t, virtkit.CloneSucceeded, cl.Status.Phase, "conditions: %+v", cl.Status.Conditions)
	target := e.vm(ctx, "src-copy")
	assert.Equal(t, "02:00:00:00:00:cc", target.Spec.Template.Spec.Domain.Devices.Interfaces[0].MacAddress)
	assert.Equal(t, "yes", target.Annotations["cloned"])

	bad := e.clone(ctx, &virtkit.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: virtkit.VirtualMachineCloneSpec{Source: vmRef("src"), Target: vmRef("src-bad"),
			Patches: []string{`{"op": "remove", "path": "/spec/template/spec/domain/cpu/sockets"}`}}})
	assert.Equal(t, virtkit.CloneFailed, bad.Status.Phase)
	e.hasEvent(ctx, controller.EventReasonClonePatchFailed)
}
