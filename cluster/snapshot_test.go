package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/guestagent/qgaserver"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// snapVMManifest is a VM with a blank DataVolume disk (filled by the test
// as a guest would) and a NIC with a fixed MAC.
const snapVMManifest = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: %[1]s
spec:
  runStrategy: %[2]s
  dataVolumeTemplates:
  - metadata:
      name: %[1]s-root
    spec:
      source:
        blank: {}
      storage:
        resources:
          requests:
            storage: 4Mi
  template:
    spec:
      domain:
        devices:
          disks:
          - name: root
            disk: {bus: virtio}
          interfaces:
          - name: default
            masquerade: {}
            macAddress: "02:00:00:00:00:aa"
        resources:
          requests:
            memory: 64Mi
      networks:
      - name: default
        pod: {}
      volumes:
      - name: root
        dataVolume:
          name: %[1]s-root
`

type snapEnv struct {
	t          *testing.T
	c          *cluster.Cluster
	storageDir string
}

func newSnapEnv(t *testing.T, ctx context.Context, opts cluster.Options) *snapEnv {
	t.Helper()
	e := &snapEnv{t: t, storageDir: t.TempDir()}
	opts.Storage.Dir = e.storageDir
	c, err := cluster.New(opts)
	require.NoError(t, err)
	e.c = c
	go func() { _ = c.Start(ctx) }()
	return e
}

func (e *snapEnv) applyVM(ctx context.Context, name, runStrategy string) {
	objs, err := virtkit.DecodeBytes(fmt.Appendf(nil, snapVMManifest, name, runStrategy))
	require.NoError(e.t, err)
	require.NoError(e.t, e.c.Apply(ctx, objs...))
}

func (e *snapEnv) waitDV(ctx context.Context, name string) *virtkit.DataVolume {
	dv, err := cluster.WaitFor(ctx, e.c.Store(), store.Key{Namespace: "default", Name: name},
		func() *virtkit.DataVolume { return &virtkit.DataVolume{} }, &virtkit.DataVolumeList{},
		func(dv *virtkit.DataVolume, found bool) bool {
			return found && dv.Status.Phase == virtkit.DataVolumeSucceeded
		})
	require.NoError(e.t, err)
	return dv
}

// disk is the file of a DataVolume on the node-local class.
func (e *snapEnv) disk(ctx context.Context, name string) string {
	dv := e.waitDV(ctx, name)
	return filepath.Join(e.storageDir, dv.Annotations[virtkit.DataVolumeVolumeNodeAnnotation], "dv", "default", name+".img")
}

func (e *snapEnv) readMarker(ctx context.Context, dv string) string {
	b, err := os.ReadFile(e.disk(ctx, dv))
	require.NoError(e.t, err)
	require.Len(e.t, b, 4<<20, "the disk keeps its size")
	return string(b[:2])
}

func (e *snapEnv) writeOffline(ctx context.Context, dv, marker string) {
	f, err := os.OpenFile(e.disk(ctx, dv), os.O_WRONLY, 0)
	require.NoError(e.t, err)
	_, err = f.WriteAt([]byte(marker), 0)
	require.NoError(e.t, err)
	require.NoError(e.t, f.Close())
}

// writeOnline writes through the simulated guest of VM name.
func (e *snapEnv) writeOnline(ctx context.Context, name, marker string) {
	host, domain := e.simHost(ctx, name)
	require.NoError(e.t, host.WriteDisk(ctx, domain, "vda", 0, []byte(marker)))
}

func (e *snapEnv) simHost(ctx context.Context, name string) (*sim.Host, string) {
	vmi, err := e.c.WaitForVMI(ctx, "default", name, cluster.VMIPhaseIs(virtkit.Running))
	require.NoError(e.t, err)
	host, ok := e.c.Node(vmi.Status.NodeName).Hypervisor.(*sim.Host)
	require.True(e.t, ok)
	return host, node.DomainName("default", name)
}

func (e *snapEnv) snapshot(ctx context.Context, name, vm string) *virtkit.VirtualMachineSnapshot {
	group := virtkit.GroupName
	s := &virtkit.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: virtkit.VirtualMachineSnapshotSpec{Source: virtkit.TypedLocalObjectReference{APIGroup: &group, Kind: virtkit.KindVirtualMachine, Name: vm}}}
	require.NoError(e.t, e.c.Apply(ctx, s))
	got, err := cluster.WaitFor(ctx, e.c.Store(), store.Key{Namespace: "default", Name: name},
		func() *virtkit.VirtualMachineSnapshot { return &virtkit.VirtualMachineSnapshot{} }, &virtkit.VirtualMachineSnapshotList{},
		func(s *virtkit.VirtualMachineSnapshot, found bool) bool {
			return found && s.Status != nil && (s.Status.Phase == virtkit.SnapshotSucceeded || s.Status.Phase == virtkit.SnapshotFailed)
		})
	require.NoError(e.t, err)
	require.Equal(e.t, virtkit.SnapshotSucceeded, got.Status.Phase, "error: %+v", got.Status.Error)
	require.NotNil(e.t, got.Status.ReadyToUse)
	assert.True(e.t, *got.Status.ReadyToUse)
	assert.NotNil(e.t, got.Status.CreationTime)
	assert.True(e.t, virtkit.HasCondition(got.Status.Conditions, virtkit.ConditionReady, virtkit.ConditionTrue, "Operation complete"))
	assert.True(e.t, virtkit.HasCondition(got.Status.Conditions, virtkit.ConditionProgressing, virtkit.ConditionFalse, "Operation complete"))
	return got
}

func (e *snapEnv) restore(ctx context.Context, name, snapshot, target string) *virtkit.VirtualMachineRestore {
	group := virtkit.GroupName
	r := &virtkit.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: virtkit.VirtualMachineRestoreSpec{VirtualMachineSnapshotName: snapshot,
			Target: virtkit.TypedLocalObjectReference{APIGroup: &group, Kind: virtkit.KindVirtualMachine, Name: target}}}
	require.NoError(e.t, e.c.Apply(ctx, r))
	got, err := cluster.WaitFor(ctx, e.c.Store(), store.Key{Namespace: "default", Name: name},
		func() *virtkit.VirtualMachineRestore { return &virtkit.VirtualMachineRestore{} }, &virtkit.VirtualMachineRestoreList{},
		func(r *virtkit.VirtualMachineRestore, found bool) bool {
			return found && r.Status != nil && r.Status.Complete != nil && *r.Status.Complete
		})
	require.NoError(e.t, err)
	assert.NotNil(e.t, got.Status.RestoreTime)
	assert.True(e.t, virtkit.HasCondition(got.Status.Conditions, virtkit.ConditionReady, virtkit.ConditionTrue, "Operation complete"))
	return got
}

// hasEvent reports whether an event of that reason gets recorded (the
// recorder writes in the background).
func (e *snapEnv) hasEvent(ctx context.Context, reason string) bool {
	return assert.Eventually(e.t, func() bool {
		var list virtkit.EventList
		require.NoError(e.t, e.c.Store().List(ctx, &list, store.ListOptions{Namespace: "default"}))
		for _, ev := range list.Items {
			if ev.Reason == reason {
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "event %s", reason)
}

func (e *snapEnv) vm(ctx context.Context, name string) *virtkit.VirtualMachine {
	vm := &virtkit.VirtualMachine{}
	require.NoError(e.t, e.c.Store().Get(ctx, store.Key{Namespace: "default", Name: name}, vm))
	return vm
}

// An offline snapshot of a stopped VM keeps its disk as it was: data
// written after the snapshot is gone once the snapshot is restored into
// the same (stopped) VM, whose disk becomes a restored DataVolume; the
// replaced DataVolume is deleted and the VM runs on the restored disk.
// A restore into the VM while it runs is refused.
func TestSnapshotOfflineRestoreSameVM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	e := newSnapEnv(t, ctx, cluster.Options{})
	e.applyVM(ctx, "db", "Halted")
	e.writeOffline(ctx, "db-root", "v1")

	snap := e.snapshot(ctx, "db-snap", "db")
	assert.Empty(t, snap.Status.Indications, "offline: no Online indication")
	assert.Equal(t, []string{"root"}, snap.Status.SnapshotVolumes.IncludedVolumes)
	require.NotNil(t, snap.Status.SourceUID)
	assert.Equal(t, string(e.vm(ctx, "db").UID), *snap.Status.SourceUID)
	content := &virtkit.VirtualMachineSnapshotContent{}
	require.NoError(t, e.c.Store().Get(ctx, store.Key{Namespace: "default", Name: *snap.Status.VirtualMachineSnapshotContentName}, content))
	assert.Equal(t, "vmsnapshot-content-"+string(snap.UID), content.Name)
	require.Len(t, content.Spec.VolumeBackups, 1)
	assert.Equal(t, "db-root", content.Spec.VolumeBackups[0].PersistentVolumeClaim.Name)
	require.NotNil(t, content.Status.ReadyToUse)
	assert.True(t, *content.Status.ReadyToUse)
	require.Len(t, content.Status.VolumeSnapshotStatus, 1)
	assert.Equal(t, "db", content.Spec.Source.VirtualMachine.Name)
	e.hasEvent(ctx, controller.EventReasonSnapshotContentCreated)

	e.writeOffline(ctx, "db-root", "v2")
	assert.Equal(t, "v2", e.readMarker(ctx, "db-root"))
	// The spec changes after the snapshot too.
	changed := e.vm(ctx, "db")
	changed.Spec.Template.Spec.Domain.Resources.Requests[virtkit.ResourceMemory] = resource.MustParse("128Mi")
	require.NoError(t, e.c.Store().Update(ctx, changed))

	// A running target is refused at admission, as KubeVirt's webhook does.
	require.NoError(t, actions.Start(ctx, e.c.Store(), store.Key{Namespace: "default", Name: "db"}, actions.StartOptions{}))
	_, err := e.c.WaitForVMI(ctx, "default", "db", cluster.VMIPhaseIs(virtkit.Running))
	require.NoError(t, err)
	group := virtkit.GroupName
	restore := &virtkit.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Name: "db-restore", Namespace: "default"},
		Spec: virtkit.VirtualMachineRestoreSpec{VirtualMachineSnapshotName: "db-snap",
			Target: virtkit.TypedLocalObjectReference{APIGroup: &group, Kind: virtkit.KindVirtualMachine, Name: "db"}}}
	err = e.c.Apply(ctx, restore.DeepCopy())
	require.ErrorIs(t, err, cluster.ErrInvalidObject)
	fes := cluster.FieldErrors(err)
	require.Len(t, fes, 1)
	assert.Equal(t, "spec.target.name", fes[0].Field)
	assert.Equal(t, field.ErrorTypeForbidden, fes[0].Type)

	// Stopped, the VM takes the restore.
	require.NoError(t, actions.Stop(ctx, e.c.Store(), store.Key{Namespace: "default", Name: "db"}, actions.StopOptions{}))
	_, err = e.c.WaitForVMI(ctx, "default", "db", cluster.Gone[*virtkit.VirtualMachineInstance]())
	require.NoError(t, err)
	require.NoError(t, e.c.Apply(ctx, restore.DeepCopy()))
	rs, err := cluster.WaitFor(ctx, e.c.Store(), store.Key{Namespace: "default", Name: "db-restore"},
		func() *virtkit.VirtualMachineRestore { return &virtkit.VirtualMachineRestore{} }, &virtkit.VirtualMachineRestoreList{},
		func(r *virtkit.VirtualMachineRestore, found bool) bool {
			return found && r.Status != nil && r.Status.Complete != nil && *r.Status.Complete
		})
	require.NoError(t, err)
	restored := "restore-" + string(rs.UID) + "-root"
	require.Len(t, rs.Status.Restores, 1)
	assert.Equal(t, restored, rs.Status.Restores[0].PersistentVolumeClaim)
	assert.Equal(t, []string{"db-root"}, rs.Status.DeletedDataVolumes)
	e.hasEvent(ctx, controller.EventReasonRestoreComplete)

	vm := e.vm(ctx, "db")
	assert.Equal(t, restored, vm.Spec.Template.Spec.Volumes[0].DataVolume.Name)
	assert.Equal(t, restored, vm.Spec.DataVolumeTemplates[0].ObjectMeta.Name)
	assert.Equal(t, virtkit.RunStrategyHalted, *vm.Spec.RunStrategy, "the VM keeps its run strategy")
	mem := vm.Spec.Template.Spec.Domain.Resources.Requests[virtkit.ResourceMemory]
	assert.Equal(t, "64Mi", mem.String(), "the spec of the snapshot is back")
	assert.Equal(t, "v1", e.readMarker(ctx, restored), "the restored disk holds the data of the snapshot")
	_, err = cluster.WaitFor(ctx, e.c.Store(), store.Key{Namespace: "default", Name: "db-root"},
		func() *virtkit.DataVolume { return &virtkit.DataVolume{} }, &virtkit.DataVolumeList{}, cluster.Gone[*virtkit.DataVolume]())
	require.NoError(t, err)

	// The VM boots from the restored disk.
	require.NoError(t, actions.Start(ctx, e.c.Store(), store.Key{Namespace: "default", Name: "db"}, actions.StartOptions{}))
	host, domain := e.simHost(ctx, "db")
	xml, err := host.XML(ctx, domain)
	require.NoError(t, err)
	assert.Contains(t, xml, restored+".img")
}

// An online snapshot of a running VM with a guest agent freezes the
// guest's filesystems for the copy and thaws them after (indications
// Online and GuestAgent); a restore into a new VM makes a second, stopped
// VM with the snapshot's data, its own firmware UUID and no copied MAC,
// which runs next to the source.
func TestSnapshotOnlineGuestAgentRestoreNewVM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	e := newSnapEnv(t, ctx, cluster.Options{})
	e.applyVM(ctx, "web", "Always")
	_, err := e.c.WaitForVMI(ctx, "default", "web", cluster.HasCondition[*virtkit.VirtualMachineInstance](virtkit.VirtualMachineInstanceAgentConnected, virtkit.ConditionTrue))
	require.NoError(t, err)
	e.writeOnline(ctx, "web", "v1")
	host, domain := e.simHost(ctx, "web")
	agent, err := host.GuestAgent(domain)
	require.NoError(t, err)
	qga := agent.(*qgaserver.Server)

	snap := e.snapshot(ctx, "web-snap", "web")
	assert.Equal(t, []virtkit.Indication{virtkit.SnapshotIndicationOnline, virtkit.SnapshotIndicationGuestAgent}, snap.Status.Indications)
	assert.Equal(t, 1, qga.Calls("guest-fsfreeze-freeze"), "frozen for the copy")
	assert.Equal(t, 1, qga.Calls("guest-fsfreeze-thaw"), "thawed after it")
	assert.Equal(t, "thawed", string(qga.FreezeStatus()))
	e.hasEvent(ctx, controller.EventReasonVolumeSnapshotCreated)

	e.writeOnline(ctx, "web", "v2")
	assert.Equal(t, "v2", e.readMarker(ctx, "web-root"))

	rs := e.restore(ctx, "web-clone-restore", "web-snap", "web-clone")
	assert.Empty(t, rs.Status.DeletedDataVolumes, "a new VM replaces nothing")
	src, clone := e.vm(ctx, "web"), e.vm(ctx, "web-clone")
	assert.Equal(t, virtkit.RunStrategyHalted, *clone.Spec.RunStrategy, "a restored new VM is created stopped")
	restored := "restore-" + string(rs.UID) + "-root"
	assert.Equal(t, restored, clone.Spec.Template.Spec.Volumes[0].DataVolume.Name)
	assert.Equal(t, "v1", e.readMarker(ctx, restored))
	assert.Equal(t, "v2", e.readMarker(ctx, "web-root"), "the source keeps its data")
	assert.NotEqual(t, src.Spec.Template.Spec.Domain.Firmware.UUID, clone.Spec.Template.Spec.Domain.Firmware.UUID)
	assert.Equal(t, virtkit.FirmwareUUIDForVM("web-clone"), clone.Spec.Template.Spec.Domain.Firmware.UUID)
	assert.NotEqual(t, src.Spec.Template.Spec.Domain.Firmware.Serial, clone.Spec.Template.Spec.Domain.Firmware.Serial)
	assert.Empty(t, clone.Spec.Template.Spec.Domain.Devices.Interfaces[0].MacAddress)
	dv := e.waitDV(ctx, restored)
	ref := metav1.GetControllerOf(dv)
	require.NotNil(t, ref, "the new VM owns its restored disk")
	assert.Equal(t, clone.UID, ref.UID)

	require.NoError(t, actions.Start(ctx, e.c.Store(), store.Key{Namespace: "default", Name: "web-clone"}, actions.StartOptions{}))
	_, err = e.c.WaitForVMI(ctx, "default", "web-clone", cluster.VMIPhaseIs(virtkit.Running))
	require.NoError(t, err)

	// Deleting the snapshot deletes its content and the volume snapshot
	// (deletionPolicy Delete).
	volSnap := filepath.Join(filepath.Dir(e.disk(ctx, "web-root")), ".snapshots", virtkit.VolumeSnapshotName(string(snap.UID), "root")+".img")
	require.FileExists(t, volSnap)
	require.NoError(t, e.c.Store().Delete(ctx, snap, store.DeleteOptions{}))
	_, err = cluster.WaitFor(ctx, e.c.Store(), store.Key{Namespace: "default", Name: *snap.Status.VirtualMachineSnapshotContentName},
		func() *virtkit.VirtualMachineSnapshotContent { return &virtkit.VirtualMachineSnapshotContent{} }, &virtkit.VirtualMachineSnapshotContentList{},
		cluster.Gone[*virtkit.VirtualMachineSnapshotContent]())
	require.NoError(t, err)
	assert.NoFileExists(t, volSnap)
}

// Without a connected guest agent an online snapshot goes ahead without a
// freeze (indications Online and NoGuestAgent), as KubeVirt's does.
func TestSnapshotOnlineNoGuestAgent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	noAgent := sim.AgentOptions{New: func(hypervisor.DomainID) (sim.GuestAgent, error) {
		return nil, errors.New("no guest agent installed in this guest")
	}}
	e := newSnapEnv(t, ctx, cluster.Options{Nodes: 1, NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
		return sim.New(sim.Options{Name: name, Agent: noAgent}), nil
	}})
	e.applyVM(ctx, "plain", "Always")
	e.writeOnline(ctx, "plain", "v1")
	snap := e.snapshot(ctx, "plain-snap", "plain")
	assert.Equal(t, []virtkit.Indication{virtkit.SnapshotIndicationOnline, virtkit.SnapshotIndicationNoGuestAgent}, snap.Status.Indications)
	content := &virtkit.VirtualMachineSnapshotContent{}
	require.NoError(t, e.c.Store().Get(ctx, store.Key{Namespace: "default", Name: *snap.Status.VirtualMachineSnapshotContentName}, content))
	require.Len(t, content.Spec.VolumeBackups, 1)
}

// A snapshot whose source never appears fails at its failureDeadline with
// KubeVirt's error.
func TestSnapshotFailureDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := newSnapEnv(t, ctx, cluster.Options{Nodes: 1})
	group := virtkit.GroupName
	s := &virtkit.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "lost", Namespace: "default"},
		Spec: virtkit.VirtualMachineSnapshotSpec{Source: virtkit.TypedLocalObjectReference{APIGroup: &group, Kind: virtkit.KindVirtualMachine, Name: "nowhere"},
			FailureDeadline: &metav1.Duration{Duration: 2 * time.Second}}}
	require.NoError(t, e.c.Apply(ctx, s))
	got, err := cluster.WaitFor(ctx, e.c.Store(), store.Key{Namespace: "default", Name: "lost"},
		func() *virtkit.VirtualMachineSnapshot { return &virtkit.VirtualMachineSnapshot{} }, &virtkit.VirtualMachineSnapshotList{},
		func(s *virtkit.VirtualMachineSnapshot, found bool) bool {
			return found && s.Status != nil && s.Status.Phase == virtkit.SnapshotFailed
		})
	require.NoError(t, err)
	require.NotNil(t, got.Status.Error)
	assert.Equal(t, "snapshot deadline exceeded", *got.Status.Error.Message)
	assert.False(t, *got.Status.ReadyToUse)
	assert.True(t, virtkit.HasCondition(got.Status.Conditions, virtkit.ConditionProgressing, virtkit.ConditionFalse, "Operation failed"))
}
