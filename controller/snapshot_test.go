package controller_test

import (
	"context"
	"errors"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/store"
)

// steps records the calls of the fakes, in order.
type steps struct{ log []string }

type fakeVolumes struct {
	*steps
	data map[string]string // volume or snapshot name -> content
}

func (f *fakeVolumes) Snapshot(_ context.Context, v controller.SnapshotVolume, name string) error {
	f.log = append(f.log, "snapshot "+v.Name)
	f.data[name] = f.data[v.Name]
	return nil
}

func (f *fakeVolumes) Restore(_ context.Context, name string, target controller.SnapshotVolume) error {
	f.log = append(f.log, "restore "+name)
	d, ok := f.data[name]
	if !ok {
		return errors.New("no such snapshot")
	}
	f.data[target.Name] = d
	return nil
}

func (f *fakeVolumes) Delete(_ context.Context, name string, _ controller.SnapshotVolume) error {
	f.log = append(f.log, "delete "+name)
	delete(f.data, name)
	return nil
}

type fakeFreezer struct {
	*steps
	err error
}

func (f *fakeFreezer) Freeze(context.Context, string, string) error {
	f.log = append(f.log, "freeze")
	return f.err
}

func (f *fakeFreezer) Unfreeze(context.Context, string, string) error {
	f.log = append(f.log, "thaw")
	return nil
}

// snapshotFixture stores a running VM with one DataVolume disk and a
// connected guest agent, and a snapshot of it.
func snapshotFixture(t *testing.T, vmiPhase virtkit.VirtualMachineInstancePhase, agent bool, conds ...virtkit.Condition) store.Store {
	t.Helper()
	ctx := context.Background()
	st := store.NewMemory()
	always := virtkit.RunStrategyAlways
	vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "default"},
		Spec: virtkit.VirtualMachineSpec{RunStrategy: &always, Template: &virtkit.VirtualMachineInstanceTemplateSpec{
			Spec: virtkit.VirtualMachineInstanceSpec{Volumes: []virtkit.Volume{
				{Name: "root", VolumeSource: virtkit.VolumeSource{DataVolume: &virtkit.DataVolumeSource{Name: "vm-root"}}},
				{Name: "scratch", VolumeSource: virtkit.VolumeSource{PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{ClaimName: "plain"}}},
			}}}}}
	require.NoError(t, st.Create(ctx, vm))
	dv := &virtkit.DataVolume{ObjectMeta: metav1.ObjectMeta{Name: "vm-root", Namespace: "default",
		Annotations: map[string]string{virtkit.DataVolumeStorageClassAnnotation: "local", virtkit.DataVolumeVolumeNodeAnnotation: "n1"}},
		Spec:   virtkit.DataVolumeSpec{Source: &virtkit.DataVolumeImportSource{Blank: &virtkit.DataVolumeBlankImage{}}},
		Status: virtkit.DataVolumeStatus{Phase: virtkit.DataVolumeSucceeded}}
	require.NoError(t, st.Create(ctx, dv))
	if vmiPhase != "" {
		vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "default"},
			Status: virtkit.VirtualMachineInstanceStatus{Phase: vmiPhase}}
		if agent {
			vmi.Status.Conditions = []virtkit.Condition{{Type: virtkit.VirtualMachineInstanceAgentConnected, Status: virtkit.ConditionTrue}}
		}
		vmi.Status.Conditions = append(vmi.Status.Conditions, conds...)
		require.NoError(t, st.Create(ctx, vmi))
	}
	g := virtkit.GroupName
	require.NoError(t, st.Create(ctx, &virtkit.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap", Namespace: "default"},
		Spec: virtkit.VirtualMachineSnapshotSpec{Source: virtkit.TypedLocalObjectReference{APIGroup: &g, Kind: virtkit.KindVirtualMachine, Name: "vm"}}}))
	return st
}

func getSnapshot(t *testing.T, st store.Store) *virtkit.VirtualMachineSnapshot {
	s := &virtkit.VirtualMachineSnapshot{}
	require.NoError(t, st.Get(context.Background(), store.Key{Namespace: "default", Name: "snap"}, s))
	return s
}

// The copy of an online VM's volumes happens between the guest's freeze and
// its thaw; a plain claim (no DataVolume) is excluded.
func TestSnapshotFreezesAroundTheCopy(t *testing.T) {
	tests := []struct {
		name        string
		phase       virtkit.VirtualMachineInstancePhase
		agent       bool
		log         []string
		indications []virtkit.Indication
		conds       []virtkit.Condition
	}{
		{"offline", "", false, []string{"snapshot vm-root"}, nil, nil},
		{"online with agent", virtkit.Running, true, []string{"freeze", "snapshot vm-root", "thaw"},
			[]virtkit.Indication{virtkit.SnapshotIndicationOnline, virtkit.SnapshotIndicationGuestAgent}, nil},
		{"online without agent", virtkit.Running, false, []string{"snapshot vm-root"},
			[]virtkit.Indication{virtkit.SnapshotIndicationOnline, virtkit.SnapshotIndicationNoGuestAgent}, nil},
		{"VMI not running yet", virtkit.Scheduling, true, []string{"snapshot vm-root"}, nil, nil},
		{"paused", virtkit.Running, true, []string{"snapshot vm-root"},
			[]virtkit.Indication{virtkit.SnapshotIndicationOnline, virtkit.SnapshotIndicationPaused},
			[]virtkit.Condition{{Type: virtkit.VirtualMachineInstancePaused, Status: virtkit.ConditionTrue}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			st := snapshotFixture(t, tt.phase, tt.agent, tt.conds...)
			s := &steps{}
			vols := &fakeVolumes{steps: s, data: map[string]string{"vm-root": "v1"}}
			r, err := controller.NewSnapshotReconciler(controller.ReconcilerOptions{Store: st},
				controller.SnapshotOptions{Volumes: vols, Freezer: &fakeFreezer{steps: s}})
			require.NoError(t, err)
			_, err = r.Reconcile(ctx, controller.Request{Namespace: "default", Name: "snap"})
			require.NoError(t, err)
			assert.Equal(t, tt.log, s.log)
			snap := getSnapshot(t, st)
			assert.Equal(t, virtkit.SnapshotSucceeded, snap.Status.Phase)
			assert.Equal(t, tt.indications, snap.Status.Indications)
			assert.Equal(t, []string{"root"}, snap.Status.SnapshotVolumes.IncludedVolumes)
			assert.Equal(t, []string{"scratch"}, snap.Status.SnapshotVolumes.ExcludedVolumes)
			assert.Equal(t, "v1", vols.data[virtkit.VolumeSnapshotName(string(snap.UID), "root")])
			assert.Contains(t, snap.Finalizers, controller.SnapshotFinalizer)

			// Done is done: another reconcile copies nothing.
			_, err = r.Reconcile(ctx, controller.Request{Namespace: "default", Name: "snap"})
			require.NoError(t, err)
			assert.Equal(t, tt.log, s.log)
		})
	}
}

// A freeze that fails leaves the volumes alone and the snapshot in
// progress with the error, to be tried again.
func TestSnapshotFreezeFailureRetries(t *testing.T) {
	ctx := context.Background()
	st := snapshotFixture(t, virtkit.Running, true)
	s := &steps{}
	r, err := controller.NewSnapshotReconciler(controller.ReconcilerOptions{Store: st}, controller.SnapshotOptions{
		Volumes: &fakeVolumes{steps: s, data: map[string]string{}}, Freezer: &fakeFreezer{steps: s, err: errors.New("agent timed out")}})
	require.NoError(t, err)
	res, err := r.Reconcile(ctx, controller.Request{Namespace: "default", Name: "snap"})
	require.NoError(t, err)
	assert.Positive(t, res.RequeueAfter)
	assert.Equal(t, []string{"freeze"}, s.log)
	snap := getSnapshot(t, st)
	assert.Equal(t, virtkit.SnapshotInProgress, snap.Status.Phase)
	require.NotNil(t, snap.Status.Error)
	assert.Contains(t, *snap.Status.Error.Message, "agent timed out")
}

// Without a volume snapshotter a VM with DataVolumes cannot be snapshotted:
// the snapshot says so and fails at its deadline.
func TestSnapshotWithoutVolumeSnapshotter(t *testing.T) {
	ctx := context.Background()
	st := snapshotFixture(t, "", false)
	now := time.Now()
	clk := testingclock.NewFakePassiveClock(now)
	r, err := controller.NewSnapshotReconciler(controller.ReconcilerOptions{Store: st, Clock: clk}, controller.SnapshotOptions{})
	require.NoError(t, err)
	_, err = r.Reconcile(ctx, controller.Request{Namespace: "default", Name: "snap"})
	require.NoError(t, err)
	snap := getSnapshot(t, st)
	require.NotNil(t, snap.Status.Error)
	assert.Contains(t, *snap.Status.Error.Message, "not supported")
	clk.SetTime(now.Add(6 * time.Minute))
	_, err = r.Reconcile(ctx, controller.Request{Namespace: "default", Name: "snap"})
	require.NoError(t, err)
	snap = getSnapshot(t, st)
	assert.Equal(t, virtkit.SnapshotFailed, snap.Status.Phase)
	assert.Equal(t, "snapshot deadline exceeded", *snap.Status.Error.Message)
}

// A restore into a stopped VM whose VMI has not gone yet waits for it.
func TestRestoreWaitsForTheVMIToGo(t *testing.T) {
	ctx := context.Background()
	st := snapshotFixture(t, virtkit.Running, false)
	s := &steps{}
	so := controller.SnapshotOptions{Volumes: &fakeVolumes{steps: s, data: map[string]string{"vm-root": "v1"}}}
	sr, err := controller.NewSnapshotReconciler(controller.ReconcilerOptions{Store: st}, so)
	require.NoError(t, err)
	_, err = sr.Reconcile(ctx, controller.Request{Namespace: "default", Name: "snap"})
	require.NoError(t, err)
	vm := &virtkit.VirtualMachine{}
	require.NoError(t, st.Get(ctx, store.Key{Namespace: "default", Name: "vm"}, vm))
	halted := virtkit.RunStrategyHalted
	vm.Spec.RunStrategy = &halted
	require.NoError(t, st.Update(ctx, vm))
	g := virtkit.GroupName
	require.NoError(t, st.Create(ctx, &virtkit.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "default"},
		Spec: virtkit.VirtualMachineRestoreSpec{VirtualMachineSnapshotName: "snap",
			Target: virtkit.TypedLocalObjectReference{APIGroup: &g, Kind: virtkit.KindVirtualMachine, Name: "vm"}}}))
	rr, err := controller.NewRestoreReconciler(controller.ReconcilerOptions{Store: st}, so)
	require.NoError(t, err)
	res, err := rr.Reconcile(ctx, controller.Request{Namespace: "default", Name: "r"})
	require.NoError(t, err)
	assert.Positive(t, res.RequeueAfter)
	rs := &virtkit.VirtualMachineRestore{}
	require.NoError(t, st.Get(ctx, store.Key{Namespace: "default", Name: "r"}, rs))
	assert.False(t, *rs.Status.Complete)
	assert.Contains(t, virtkit.GetCondition(rs.Status.Conditions, virtkit.ConditionReady).Message, "still exists")
	assert.Equal(t, []string{"snapshot vm-root"}, s.log, "nothing restored yet")

	vmi := &virtkit.VirtualMachineInstance{}
	require.NoError(t, st.Get(ctx, store.Key{Namespace: "default", Name: "vm"}, vmi))
	require.NoError(t, st.Delete(ctx, vmi, store.DeleteOptions{}))
	_, err = rr.Reconcile(ctx, controller.Request{Namespace: "default", Name: "r"})
	require.NoError(t, err)
	require.NoError(t, st.Get(ctx, store.Key{Namespace: "default", Name: "r"}, rs))
	assert.True(t, *rs.Status.Complete)
	require.Len(t, rs.Status.Restores, 1)
	dv := &virtkit.DataVolume{}
	require.NoError(t, st.Get(ctx, store.Key{Namespace: "default", Name: rs.Status.Restores[0].PersistentVolumeClaim}, dv))
	assert.Equal(t, virtkit.DataVolumeSucceeded, dv.Status.Phase)
	assert.Equal(t, "n1", dv.Annotations[virtkit.DataVolumeVolumeNodeAnnotation], "restored where the snapshot lives")
	assert.Equal(t, "v1", so.Volumes.(*fakeVolumes).data[dv.Name])
}
