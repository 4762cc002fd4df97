package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/store"
)

// newCloneEnv is newSnapEnv whose cluster has stopped (ctx done) before
// the test's directories are removed.
func newCloneEnv(t *testing.T, ctx context.Context, opts cluster.Options) *snapEnv {
	t.Helper()
	e := &snapEnv{t: t, storageDir: t.TempDir()}
	opts.Storage.Dir = e.storageDir
	c, err := cluster.New(opts)
	require.NoError(t, err)
	e.c = c
	stopped := make(chan struct{})
	go func() { _ = c.Start(ctx); close(stopped) }()
	t.Cleanup(func() { <-stopped })
	return e
}

// clone applies a VirtualMachineClone and waits for it to succeed or fail.
func (e *snapEnv) clone(ctx context.Context, cl *virtkit.VirtualMachineClone) *virtkit.VirtualMachineClone {
	e.t.Helper()
	cl.Namespace = "default"
	require.NoError(e.t, e.c.Apply(ctx, cl))
	got, err := cluster.WaitFor(ctx, e.c.Store(), store.Key{Namespace: "default", Name: cl.Name},
		func() *virtkit.VirtualMachineClone { return &virtkit.VirtualMachineClone{} }, &virtkit.VirtualMachineCloneList{},
		func(c *virtkit.VirtualMachineClone, found bool) bool {
			return found && (c.Status.Phase == virtkit.CloneSucceeded || c.Status.Phase == virtkit.CloneFailed)
		})
	require.NoError(e.t, err)
	return got
}

func (e *snapEnv) gone(ctx context.Context, obj func() virtkit.Object, list virtkit.ObjectList, name string) {
	e.t.Helper()
	_, err := cluster.WaitFor(ctx, e.c.Store(), store.Key{Namespace: "default", Name: name}, obj, list,
		func(_ virtkit.Object, found bool) bool { return !found })
	require.NoError(e.t, err, "%s is deleted", name)
}

func vmRef(name string) *virtkit.TypedLocalObjectReference {
	g := virtkit.GroupName
	return &virtkit.TypedLocalObjectReference{APIGroup: &g, Kind: virtkit.KindVirtualMachine, Name: name}
}

// A clone of a stopped VM snapshots it, restores the snapshot into the
// target and makes the clone's changes: labels and annotations through
// the filters, the given MAC and SMBIOS serial, a firmware UUID of the
// target's own. The target's disk holds the source's data; the
// intermediate snapshot and restore are deleted; the target boots.
func TestCloneStoppedVM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	e := newCloneEnv(t, ctx, cluster.Options{})
	e.applyVM(ctx, "src", "Halted")
	e.writeOffline(ctx, "src-root", "c1")
	var src *virtkit.VirtualMachine
	require.Eventually(t, func() bool { // the VM controller writes the VM too
		src = e.vm(ctx, "src")
		src.Labels = map[string]string{"app": "db", "team": "a", "app.kubernetes.io/name": "db"}
		src.Annotations = map[string]string{"keep/x": "1", "drop": "2"}
		src.Spec.Template.ObjectMeta.Labels = map[string]string{"kubevirt.io/size": "small", "other": "o"}
		src.Spec.Template.Spec.Domain.Firmware.Serial = "serial-1"
		err := e.c.Store().Update(ctx, src)
		require.True(t, err == nil || errors.Is(err, store.ErrConflict), "update: %v", err)
		return err == nil
	}, 30*time.Second, 10*time.Millisecond)

	serial := "serial-2"
	cl := e.clone(ctx, &virtkit.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Name: "copy"},
		Spec: virtkit.VirtualMachineCloneSpec{
			Source:            vmRef("src"),
			Target:            vmRef("src-copy"),
			LabelFilters:      []string{"*", "!app.kubernetes.io/*"},
			AnnotationFilters: []string{"keep/*"},
			Template:          virtkit.VirtualMachineCloneTemplateFilters{LabelFilters: []string{"kubevirt.io/*"}},
			NewMacAddresses:   map[string]string{"default": "02:00:00:00:00:bb"},
			NewSMBiosSerial:   &serial,
		}})
	require.Equal(t, virtkit.CloneSucceeded, cl.Status.Phase, "conditions: %+v", cl.Status.Conditions)
	require.NotNil(t, cl.Status.TargetName)
	assert.Equal(t, "src-copy", *cl.Status.TargetName)
	assert.Nil(t, cl.Status.SnapshotName, "cleared once done")
	assert.Nil(t, cl.Status.RestoreName)
	assert.NotNil(t, cl.Status.CreationTime)
	assert.True(t, virtkit.HasCondition(cl.Status.Conditions, virtkit.ConditionReady, virtkit.ConditionTrue, "Ready"))
	assert.True(t, virtkit.HasCondition(cl.Status.Conditions, virtkit.ConditionProgressing, virtkit.ConditionFalse, "Ready"))
	for _, reason := range []string{controller.EventReasonCloneSnapshotCreated, controller.EventReasonCloneSnapshotReady,
		controller.EventReasonCloneRestoreCreated, controller.EventReasonCloneRestoreReady, controller.EventReasonCloneTargetVMCreated} {
		e.hasEvent(ctx, reason)
	}

	target := e.vm(ctx, "src-copy")
	assert.Equal(t, map[string]string{"app": "db", "team": "a"}, target.Labels)
	assert.Equal(t, "1", target.Annotations["keep/x"])
	assert.NotContains(t, target.Annotations, "drop")
	assert.Equal(t, map[string]string{"kubevirt.io/size": "small"}, target.Spec.Template.ObjectMeta.Labels)
	d := target.Spec.Template.Spec.Domain
	assert.Equal(t, "02:00:00:00:00:bb", d.Devices.Interfaces[0].MacAddress)
	assert.Equal(t, "02:00:00:00:00:aa", src.Spec.Template.Spec.Domain.Devices.Interfaces[0].MacAddress)
	assert.NotEqual(t, src.Spec.Template.Spec.Domain.Firmware.UUID, d.Firmware.UUID)
	assert.Equal(t, virtkit.FirmwareUUIDForVM("src-copy"), d.Firmware.UUID)
	assert.Equal(t, "serial-2", d.Firmware.Serial)
	assert.Equal(t, virtkit.RunStrategyHalted, *target.Spec.RunStrategy)

	disk := target.Spec.Template.Spec.Volumes[0].DataVolume.Name
	assert.NotEqual(t, "src-root", disk)
	assert.Equal(t, "c1", e.readMarker(ctx, disk), "the target's disk holds the source's data")
	e.writeOffline(ctx, disk, "t2")
	assert.Equal(t, "c1", e.readMarker(ctx, "src-root"), "the disks are copies")

	e.gone(ctx, func() virtkit.Object { return &virtkit.VirtualMachineSnapshot{} }, &virtkit.VirtualMachineSnapshotList{}, "tmp-snapshot-"+string(cl.UID))
	e.gone(ctx, func() virtkit.Object { return &virtkit.VirtualMachineRestore{} }, &virtkit.VirtualMachineRestoreList{}, "tmp-restore-"+string(cl.UID))

	require.NoError(t, actions.Start(ctx, e.c.Store(), store.Key{Namespace: "default", Name: "src-copy"}, actions.StartOptions{}))
	vmi, err := e.c.WaitForVMI(ctx, "default", "src-copy", cluster.VMIPhaseIs(virtkit.Running))
	require.NoError(t, err)
	assert.Equal(t, "02:00:00:00:00:bb", vmi.Spec.Domain.Devices.Interfaces[0].MacAddress)
	assert.Equal(t, virtkit.FirmwareUUIDForVM("src-copy"), vmi.Spec.Domain.Firmware.UUID)
	host, domain := e.simHost(ctx, "src-copy")
	xml, err := host.XML(ctx, domain)
	require.NoError(t, err)
	assert.Contains(t, xml, disk+".img")
}

// A clone of a VirtualMachineSnapshot restores it directly into a target
// it names <source VM>-clone-<suffix>; the snapshot stays. No MAC is
// copied and the serial is a new one.
func TestCloneFromSnapshot(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	e := newCloneEnv(t, ctx, cluster.Options{})
	e.applyVM(ctx, "base", "Halted")
	e.writeOffline(ctx, "base-root", "b1")
	e.snapshot(ctx, "base-snap", "base")
	e.writeOffline(ctx, "base-root", "b2")

	g := virtkit.SnapshotGroupName
	cl := e.clone(ctx, &virtkit.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Name: "from-snap"},
		Spec: virtkit.VirtualMachineCloneSpec{Source: &virtkit.TypedLocalObjectReference{APIGroup: &g, Kind: virtkit.KindVirtualMachineSnapshot, Name: "base-snap"}}})
	require.Equal(t, virtkit.CloneSucceeded, cl.Status.Phase, "conditions: %+v", cl.Status.Conditions)
	require.NotNil(t, cl.Status.TargetName)
	name := *cl.Status.TargetName
	assert.Equal(t, controller.CloneTargetName("base", string(cl.UID)), name)
	assert.True(t, strings.HasPrefix(name, "base-clone-") && len(name) == len("base-clone-")+5, name)

	target := e.vm(ctx, name)
	assert.Empty(t, target.Spec.Template.Spec.Domain.Devices.Interfaces[0].MacAddress)
	assert.Equal(t, string(cl.UID), target.Spec.Template.Spec.Domain.Firmware.Serial, "a new serial")
	assert.Equal(t, virtkit.FirmwareUUIDForVM(name), target.Spec.Template.Spec.Domain.Firmware.UUID)
	assert.Equal(t, "b1", e.readMarker(ctx, target.Spec.Template.Spec.Volumes[0].DataVolume.Name), "the snapshot's data")
	require.NoError(t, e.c.Store().Get(ctx, store.Key{Namespace: "default", Name: "base-snap"}, &virtkit.VirtualMachineSnapshot{}),
		"a snapshot source stays")
	e.gone(ctx, func() virtkit.Object { return &virtkit.VirtualMachineRestore{} }, &virtkit.VirtualMachineRestoreList{}, "tmp-restore-"+string(cl.UID))
	assert.False(t, e.c.Store().Get(ctx, store.Key{Namespace: "default", Name: "tmp-snapshot-" + string(cl.UID)}, &virtkit.VirtualMachineSnapshot{}) == nil,
		"no snapshot of its own")
}

// A clone into an existing VM fails without touching it, as KubeVirt
// refuses to overwrite; a clone of a missing VM or snapshot fails naming
// it.
func TestCloneFailures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	e := newCloneEnv(t, ctx, cluster.Options{Nodes: 1})
	e.applyVM(ctx, "one", "Halted")
	e.applyVM(ctx, "two", "Halted")
	before := e.vm(ctx, "two")

	cl := e.clone(ctx, &virtkit.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Name: "onto-two"},
		Spec: virtkit.VirtualMachineCloneSpec{Source: vmRef("one"), Target: vmRef("two")}})
	assert.Equal(t, virtkit.CloneFailed, cl.Status.Phase)
	assert.True(t, virtkit.HasCondition(cl.Status.Conditions, virtkit.ConditionReady, virtkit.ConditionFalse, "Failed"))
	ready := virtkit.GetCondition(cl.Status.Conditions, virtkit.ConditionReady)
	require.NotNil(t, ready)
	assert.Contains(t, ready.Message, "target VirtualMachine two already exists")
	e.hasEvent(ctx, controller.EventReasonCloneTargetExists)
	after := e.vm(ctx, "two")
	assert.NotContains(t, after.Annotations, virtkit.LastRestoreUIDAnnotation, "the existing VM is not restored into")
	assert.Equal(t, before.Spec.Template.Spec, after.Spec.Template.Spec, "the existing VM is untouched")
	assert.Error(t, e.c.Store().Get(ctx, store.Key{Namespace: "default", Name: "tmp-snapshot-" + string(cl.UID)}, &virtkit.VirtualMachineSnapshot{}),
		"nothing was snapshotted")

	cl = e.clone(ctx, &virtkit.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Name: "of-nothing"},
		Spec: virtkit.VirtualMachineCloneSpec{Source: vmRef("nowhere")}})
	assert.Equal(t, virtkit.CloneFailed, cl.Status.Phase)
	ready = virtkit.GetCondition(cl.Status.Conditions, virtkit.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, "VirtualMachine nowhere does not exist in namespace default", ready.Message)
	e.hasEvent(ctx, controller.EventReasonCloneSourceDoesNotExist)

	g := virtkit.SnapshotGroupName
	cl = e.clone(ctx, &virtkit.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Name: "of-no-snapshot"},
		Spec: virtkit.VirtualMachineCloneSpec{Source: &virtkit.TypedLocalObjectReference{APIGroup: &g, Kind: virtkit.KindVirtualMachineSnapshot, Name: "missing"}}})
	assert.Equal(t, virtkit.CloneFailed, cl.Status.Phase)
	ready = virtkit.GetCondition(cl.Status.Conditions, virtkit.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, "VirtualMachineSnapshot missing does not exist in namespace default", ready.Message)

	// A patch outside spec, labels and annotations is refused naming the
	// field.
	err := e.c.Apply(ctx, &virtkit.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Name: "patched", Namespace: "default"},
		Spec: virtkit.VirtualMachineCloneSpec{Source: vmRef("one"), Patches: []string{`{"op":"add","path":"/metadata/name","value":"y"}`}}})
	require.ErrorIs(t, err, cluster.ErrInvalidObject)
	fes := cluster.FieldErrors(err)
	require.Len(t, fes, 1)
	assert.Equal(t, "spec.patches[0].path", fes[0].Field)
}

// A running VM is cloned from an online snapshot; it keeps running and
// the target gets the data its guest wrote.
func TestCloneRunningVM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	e := newCloneEnv(t, ctx, cluster.Options{})
	e.applyVM(ctx, "live", "Always")
	e.writeOnline(ctx, "live", "l1")
	cl := e.clone(ctx, &virtkit.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Name: "live-clone"},
		Spec: virtkit.VirtualMachineCloneSpec{Source: vmRef("live"), Target: &virtkit.TypedLocalObjectReference{Kind: virtkit.KindVirtualMachine}}})
	require.Equal(t, virtkit.CloneSucceeded, cl.Status.Phase, "conditions: %+v", cl.Status.Conditions)
	require.NotNil(t, cl.Status.TargetName)
	assert.Equal(t, controller.CloneTargetName("live", string(cl.UID)), *cl.Status.TargetName)
	target := e.vm(ctx, *cl.Status.TargetName)
	assert.Equal(t, "l1", e.readMarker(ctx, target.Spec.Template.Spec.Volumes[0].DataVolume.Name))
	assert.Empty(t, target.Spec.Template.Spec.Domain.Devices.Interfaces[0].MacAddress, "the source's MAC is not copied")
	_, err := e.c.WaitForVMI(ctx, "default", "live", cluster.VMIPhaseIs(virtkit.Running))
	require.NoError(t, err, "the source keeps running")
}
