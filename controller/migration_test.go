package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// migEnv drives the migration reconciler synchronously over a memory
// store; tests play the node agents by writing the VMI's migrationState.
type migEnv struct {
	t     *testing.T
	ctx   context.Context
	st    *store.Memory
	clock *clock
	r     *MigrationReconciler
}

func newMigEnv(t *testing.T, cfg *virtkit.MigrationConfiguration, nodes ...string) *migEnv {
	t.Helper()
	c := &clock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	st, err := store.NewMemoryWithOptions(store.Options{Clock: c})
	require.NoError(t, err)
	r, err := NewMigrationReconciler(ReconcilerOptions{Store: st, Clock: c}, MigrationOptions{Config: cfg})
	require.NoError(t, err)
	e := &migEnv{t: t, ctx: context.Background(), st: st, clock: c, r: r}
	for _, n := range nodes {
		e.addNode(n, nil)
	}
	return e
}

func (e *migEnv) addNode(name string, lbls map[string]string) {
	e.t.Helper()
	hb := metav1.NewTime(e.clock.Now())
	l := map[string]string{virtkit.HostnameLabel: name}
	for k, v := range lbls {
		l[k] = v
	}
	require.NoError(e.t, e.st.Create(e.ctx, &virtkit.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l},
		Status: virtkit.NodeStatus{
			Allocatable:       virtkit.ResourceList{virtkit.ResourceCPU: resource.MustParse("8"), virtkit.ResourceMemory: resource.MustParse("32Gi")},
			Conditions:        []virtkit.Condition{{Type: virtkit.NodeReady, Status: virtkit.ConditionTrue}},
			LastHeartbeatTime: &hb,
		},
	}))
}

// runningVMI stores a VMI as a node agent would have left it: Running on
// node, LiveMigratable as given.
func (e *migEnv) runningVMI(name, node string, migratable bool) *virtkit.VirtualMachineInstance {
	e.t.Helper()
	mem := resource.MustParse("64Mi")
	vmi := &virtkit.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{virtkit.NodeNameLabel: node, "app": name}},
		Spec:       virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &mem}}},
	}
	require.NoError(e.t, e.st.Create(e.ctx, vmi))
	now := metav1.NewTime(e.clock.Now())
	vmi.Status.NodeName = node
	vmi.SetPhase(virtkit.Running, now)
	lm := virtkit.Condition{Type: virtkit.VirtualMachineInstanceIsMigratable, Status: virtkit.ConditionTrue}
	if !migratable {
		lm = virtkit.Condition{Type: virtkit.VirtualMachineInstanceIsMigratable, Status: virtkit.ConditionFalse,
			Reason: virtkit.InterfaceNotLiveMigratableReason, Message: "bridge on the pod network"}
	}
	virtkit.SetCondition(&vmi.Status.Conditions, lm, now)
	vmi.SetActivePod(types.UID("pod-"+node), node)
	require.NoError(e.t, e.st.UpdateStatus(e.ctx, vmi))
	return vmi
}

func (e *migEnv) migrate(vmiName string) *virtkit.VirtualMachineInstanceMigration {
	e.t.Helper()
	m := &virtkit.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: vmiName + "-"},
		Spec:       virtkit.VirtualMachineInstanceMigrationSpec{VMIName: vmiName},
	}
	require.NoError(e.t, e.st.Create(e.ctx, m))
	e.clock.Advance(time.Second) // distinct creation times
	return m
}

// settle reconciles every migration until nothing changes.
func (e *migEnv) settle() {
	e.t.Helper()
	last := ""
	for range 50 {
		migs := &virtkit.VirtualMachineInstanceMigrationList{}
		require.NoError(e.t, e.st.List(e.ctx, migs, store.ListOptions{}))
		for _, m := range migs.Items {
			_, err := e.r.Reconcile(e.ctx, reconcile.Request{Namespace: m.Namespace, Name: m.Name})
			require.NoError(e.t, err, m.Name)
		}
		fp := e.fingerprint()
		if fp == last {
			return
		}
		last = fp
	}
	e.t.Fatal("migrations did not settle")
}

func (e *migEnv) fingerprint() string {
	var parts []string
	migs := &virtkit.VirtualMachineInstanceMigrationList{}
	require.NoError(e.t, e.st.List(e.ctx, migs, store.ListOptions{}))
	for _, m := range migs.Items {
		parts = append(parts, m.Name+"@"+m.ResourceVersion)
	}
	vmis := &virtkit.VirtualMachineInstanceList{}
	require.NoError(e.t, e.st.List(e.ctx, vmis, store.ListOptions{}))
	for _, v := range vmis.Items {
		parts = append(parts, v.Name+"@"+v.ResourceVersion)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func (e *migEnv) mig(m *virtkit.VirtualMachineInstanceMigration) *virtkit.VirtualMachineInstanceMigration {
	e.t.Helper()
	out := &virtkit.VirtualMachineInstanceMigration{}
	require.NoError(e.t, e.st.Get(e.ctx, store.KeyOf(m), out))
	return out
}

func (e *migEnv) vmi(name string) *virtkit.VirtualMachineInstance {
	e.t.Helper()
	out := &virtkit.VirtualMachineInstance{}
	require.NoError(e.t, e.st.Get(e.ctx, store.Key{Namespace: "default", Name: name}, out))
	return out
}

// agentWrites plays a node agent: fn edits the VMI's migrationState.
func (e *migEnv) agentWrites(name string, fn func(v *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState)) {
	e.t.Helper()
	v := e.vmi(name)
	require.NotNil(e.t, v.Status.MigrationState)
	fn(v, v.Status.MigrationState)
	require.NoError(e.t, e.st.UpdateStatus(e.ctx, v))
}

func (e *migEnv) phases(migs ...*virtkit.VirtualMachineInstanceMigration) []virtkit.VirtualMachineInstanceMigrationPhase {
	var out []virtkit.VirtualMachineInstanceMigrationPhase
	for _, m := range migs {
		out = append(out, e.mig(m).Status.Phase)
	}
	return out
}

func TestMigrationPhaseMachine(t *testing.T) {
	e := newMigEnv(t, nil, "n1", "n2")
	e.runningVMI("vm", "n1", true)
	m := e.migrate("vm")
	e.settle()

	got := e.mig(m)
	assert.Equal(t, virtkit.MigrationPreparingTarget, got.Status.Phase, "handed off, waiting for the target")
	assert.Contains(t, got.Finalizers, virtkit.VirtualMachineInstanceMigrationFinalizer)
	assert.Equal(t, "vm", got.Labels[virtkit.MigrationSelectorLabel])
	vmi := e.vmi("vm")
	ms := vmi.Status.MigrationState
	require.NotNil(t, ms)
	assert.Equal(t, got.UID, ms.MigrationUID)
	assert.Equal(t, "n1", ms.SourceNode)
	assert.Equal(t, "n2", ms.TargetNode, "never the source")
	assert.Equal(t, "n2", vmi.Labels[virtkit.MigrationTargetNodeNameLabel])
	require.NotNil(t, ms.MigrationConfiguration)
	assert.Equal(t, uint32(5), *ms.MigrationConfiguration.ParallelMigrationsPerCluster)

	e.agentWrites("vm", func(_ *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) {
		ms.TargetNodeAddress = "n2"
	})
	e.settle()
	assert.Equal(t, virtkit.MigrationTargetReady, e.mig(m).Status.Phase)

	e.agentWrites("vm", func(_ *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) {
		now := metav1.NewTime(e.clock.Now())
		ms.StartTimestamp = &now
		ms.Mode = virtkit.MigrationPreCopy
	})
	e.settle()
	assert.Equal(t, virtkit.MigrationRunning, e.mig(m).Status.Phase)
	assert.Equal(t, virtkit.MigrationPreCopy, e.mig(m).Status.MigrationState.Mode, "the VMIM follows the VMI's state")

	e.agentWrites("vm", func(v *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) {
		now := metav1.NewTime(e.clock.Now())
		ms.EndTimestamp = &now
		ms.Completed = true
		v.Status.NodeName = "n2"
	})
	e.settle()
	got = e.mig(m)
	assert.Equal(t, virtkit.MigrationSucceeded, got.Status.Phase)
	assert.NotContains(t, got.Finalizers, virtkit.VirtualMachineInstanceMigrationFinalizer)
	require.NotNil(t, got.Status.MigrationState)
	assert.True(t, got.Status.MigrationState.Completed)
	assert.NotNil(t, got.Status.MigrationState.EndTimestamp)
	var seen []virtkit.VirtualMachineInstanceMigrationPhase
	for _, p := range got.Status.PhaseTransitionTimestamps {
		seen = append(seen, p.Phase)
	}
	assert.Equal(t, []virtkit.VirtualMachineInstanceMigrationPhase{
		virtkit.MigrationPending, virtkit.MigrationScheduling, virtkit.MigrationScheduled, virtkit.MigrationPreparingTarget,
		virtkit.MigrationTargetReady, virtkit.MigrationRunning, virtkit.MigrationSucceeded,
	}, seen)
}

func TestMigrationAdmissionFailures(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(e *migEnv)
		vmi    string
		reason string
	}{
		{name: "VMI missing", vmi: "ghost", reason: virtkit.MigrationReasonVMIMissing},
		{name: "not LiveMigratable", vmi: "bridged", setup: func(e *migEnv) { e.runningVMI("bridged", "n1", false) },
			reason: "Cannot migrate VMI, Reason: InterfaceNotLiveMigratable"},
		{name: "not running", vmi: "pending", setup: func(e *migEnv) {
			require.NoError(t, e.st.Create(e.ctx, &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "default"}}))
		}, reason: virtkit.MigrationReasonNotRunning},
		{name: "final", vmi: "done", setup: func(e *migEnv) {
			v := e.runningVMI("done", "n1", true)
			v.SetPhase(virtkit.Succeeded, metav1.NewTime(e.clock.Now()))
			require.NoError(t, e.st.UpdateStatus(e.ctx, v))
		}, reason: virtkit.MigrationReasonVMIFinal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newMigEnv(t, nil, "n1", "n2")
			if tt.setup != nil {
				tt.setup(e)
			}
			m := e.migrate(tt.vmi)
			e.settle()
			got := e.mig(m)
			assert.Equal(t, virtkit.MigrationFailed, got.Status.Phase)
			require.NotNil(t, got.Status.MigrationState)
			assert.True(t, got.Status.MigrationState.Failed)
			assert.Contains(t, got.Status.MigrationState.FailureReason, tt.reason)
			assert.Empty(t, got.Finalizers)
		})
	}
}

func TestMigrationAnotherInFlight(t *testing.T) {
	e := newMigEnv(t, nil, "n1", "n2")
	e.runningVMI("vm", "n1", true)
	first := e.migrate("vm")
	e.settle()
	second := e.migrate("vm")
	e.settle()
	assert.Equal(t, []virtkit.VirtualMachineInstanceMigrationPhase{virtkit.MigrationPreparingTarget, virtkit.MigrationFailed}, e.phases(first, second))
	assert.Contains(t, e.mig(second).Status.MigrationState.FailureReason, virtkit.MigrationReasonInFlight)
	assert.Equal(t, e.mig(first).UID, e.vmi("vm").Status.MigrationState.MigrationUID, "the first keeps the VMI")
}

func TestMigrationParallelLimits(t *testing.T) {
	t.Run("per cluster", func(t *testing.T) {
		e := newMigEnv(t, &virtkit.MigrationConfiguration{ParallelMigrationsPerCluster: ptrTo[uint32](2)}, "n1", "n2", "n3", "n4")
		var migs []*virtkit.VirtualMachineInstanceMigration
		for i, n := range []string{"n1", "n2", "n3"} {
			name := fmt.Sprintf("vm%d", i)
			e.runningVMI(name, n, true)
			migs = append(migs, e.migrate(name))
		}
		e.settle()
		assert.Equal(t, []virtkit.VirtualMachineInstanceMigrationPhase{
			virtkit.MigrationPreparingTarget, virtkit.MigrationPreparingTarget, virtkit.MigrationPending,
		}, e.phases(migs...))
		// The first ends; the waiting one takes its slot.
		e.agentWrites("vm0", func(_ *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) {
			ms.Failed, ms.Completed, ms.FailureReason = true, true, "test"
		})
		e.settle()
		assert.Equal(t, []virtkit.VirtualMachineInstanceMigrationPhase{
			virtkit.MigrationFailed, virtkit.MigrationPreparingTarget, virtkit.MigrationPreparingTarget,
		}, e.phases(migs...))
	})
	t.Run("outbound per node (default 2)", func(t *testing.T) {
		e := newMigEnv(t, nil, "n1", "n2")
		var migs []*virtkit.VirtualMachineInstanceMigration
		for i := range 3 {
			name := fmt.Sprintf("vm%d", i)
			e.runningVMI(name, "n1", true)
			migs = append(migs, e.migrate(name))
		}
		other := e.runningVMI("other", "n2", true)
		om := e.migrate(other.Name)
		e.settle()
		assert.Equal(t, []virtkit.VirtualMachineInstanceMigrationPhase{
			virtkit.MigrationPreparingTarget, virtkit.MigrationPreparingTarget, virtkit.MigrationPending, virtkit.MigrationPreparingTarget,
		}, e.phases(append(migs, om)...), "n2's outbound migration is not held by n1's")
	})
}

func TestMigrationDeletion(t *testing.T) {
	t.Run("before hand-off: Failed at once", func(t *testing.T) {
		e := newMigEnv(t, &virtkit.MigrationConfiguration{ParallelMigrationsPerCluster: ptrTo[uint32](1)}, "n1", "n2", "n3")
		e.runningVMI("a", "n1", true)
		e.runningVMI("b", "n2", true)
		ma, mb := e.migrate("a"), e.migrate("b")
		e.settle()
		require.Equal(t, virtkit.MigrationPending, e.mig(mb).Status.Phase)
		require.NoError(t, e.st.Delete(e.ctx, mb, store.DeleteOptions{}))
		e.settle()
		err := e.st.Get(e.ctx, store.KeyOf(mb), &virtkit.VirtualMachineInstanceMigration{})
		assert.ErrorIs(t, err, store.ErrNotFound, "failed, finalizer released, gone")
		assert.Nil(t, e.vmi("b").Status.MigrationState, "the VMI was never touched")
		assert.Equal(t, virtkit.MigrationPreparingTarget, e.mig(ma).Status.Phase)
	})
	t.Run("after hand-off: abort requested, then Failed when the source reports", func(t *testing.T) {
		e := newMigEnv(t, nil, "n1", "n2")
		e.runningVMI("vm", "n1", true)
		m := e.migrate("vm")
		e.settle()
		require.NoError(t, e.st.Delete(e.ctx, m, store.DeleteOptions{}))
		e.settle()
		got := e.mig(m)
		assert.Equal(t, virtkit.MigrationPreparingTarget, got.Status.Phase, "waits for the source")
		assert.True(t, virtkit.IsConditionTrue(got.Status.Conditions, virtkit.VirtualMachineInstanceMigrationAbortRequested))
		assert.True(t, e.vmi("vm").Status.MigrationState.AbortRequested)

		e.agentWrites("vm", func(v *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) {
			ms.Failed, ms.Completed = true, true
			ms.AbortStatus = virtkit.MigrationAbortSucceeded
			ms.FailureReason = virtkit.MigrationReasonAborted
			v.SetActivePod("pod-n2", "n2")
		})
		e.settle()
		err := e.st.Get(e.ctx, store.KeyOf(m), &virtkit.VirtualMachineInstanceMigration{})
		assert.ErrorIs(t, err, store.ErrNotFound)
		vmi := e.vmi("vm")
		assert.NotContains(t, vmi.Labels, virtkit.MigrationTargetNodeNameLabel, "the hand-off is undone")
		assert.Equal(t, []string{"n1"}, vmi.ActiveNodes())
		assert.Equal(t, "n1", vmi.Status.NodeName)
	})
}

func TestMigrationTargetDown(t *testing.T) {
	e := newMigEnv(t, nil, "n1", "n2")
	e.runningVMI("vm", "n1", true)
	m := e.migrate("vm")
	e.settle()
	require.NoError(t, e.st.Delete(e.ctx, &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}, store.DeleteOptions{}))
	e.settle()
	got := e.mig(m)
	assert.Equal(t, virtkit.MigrationFailed, got.Status.Phase)
	assert.Equal(t, virtkit.MigrationReasonTargetDown, got.Status.MigrationState.FailureReason)
	ms := e.vmi("vm").Status.MigrationState
	assert.True(t, ms.Failed)
	assert.Equal(t, virtkit.MigrationReasonTargetDown, ms.FailureReason)
}

func TestMigrationKeepsNewestFiveFinished(t *testing.T) {
	e := newMigEnv(t, nil, "n1", "n2")
	e.runningVMI("vm", "n1", false) // every migration fails at admission
	var migs []*virtkit.VirtualMachineInstanceMigration
	for range 7 {
		migs = append(migs, e.migrate("vm"))
		e.settle()
	}
	left := &virtkit.VirtualMachineInstanceMigrationList{}
	require.NoError(t, e.st.List(e.ctx, left, store.ListOptions{}))
	var names []string
	for _, m := range left.Items {
		names = append(names, m.Name)
	}
	var want []string
	for _, m := range migs[2:] {
		want = append(want, m.Name)
	}
	assert.ElementsMatch(t, want, names, "the two oldest are deleted")
}

func TestMigrationTargetPlacement(t *testing.T) {
	t.Run("addedNodeSelector restricts the target", func(t *testing.T) {
		e := newMigEnv(t, nil, "n1", "n2")
		e.addNode("n3", map[string]string{"zone": "b"})
		e.runningVMI("vm", "n1", true)
		m := &virtkit.VirtualMachineInstanceMigration{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "to-b"},
			Spec:       virtkit.VirtualMachineInstanceMigrationSpec{VMIName: "vm", AddedNodeSelector: map[string]string{"zone": "b"}},
		}
		require.NoError(t, e.st.Create(e.ctx, m))
		e.settle()
		assert.Equal(t, "n3", e.vmi("vm").Status.MigrationState.TargetNode)
	})
	t.Run("no node but the source: waits in Scheduling, then fails", func(t *testing.T) {
		e := newMigEnv(t, nil, "n1")
		e.runningVMI("vm", "n1", true)
		m := e.migrate("vm")
		e.settle()
		got := e.mig(m)
		assert.Equal(t, virtkit.MigrationScheduling, got.Status.Phase)
		c := virtkit.GetCondition(got.Status.Conditions, virtkit.VirtualMachineInstancePodScheduled)
		require.NotNil(t, c)
		assert.Equal(t, virtkit.ConditionFalse, c.Status)
		e.clock.Advance(6 * time.Minute)
		e.settle()
		assert.Equal(t, virtkit.MigrationFailed, e.mig(m).Status.Phase)
		assert.Contains(t, e.mig(m).Status.MigrationState.FailureReason, virtkit.MigrationReasonUnschedulable)
	})
}

func TestMigrationPolicyAppliedAtHandOff(t *testing.T) {
	e := newMigEnv(t, nil, "n1", "n2")
	e.runningVMI("db", "n1", true)
	bw := resource.MustParse("32Mi")
	require.NoError(t, e.st.Create(e.ctx, &virtkit.MigrationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "slow-db"},
		Spec: virtkit.MigrationPolicySpec{
			Selectors:             &virtkit.Selectors{VirtualMachineInstanceSelector: map[string]string{"app": "db"}},
			BandwidthPerMigration: &bw, AllowPostCopy: ptrTo(true),
		},
	}))
	e.migrate("db")
	e.settle()
	ms := e.vmi("db").Status.MigrationState
	require.NotNil(t, ms.MigrationPolicyName)
	assert.Equal(t, "slow-db", *ms.MigrationPolicyName)
	assert.Equal(t, int64(32<<20), ms.MigrationConfiguration.BandwidthPerMigration.Value())
	assert.True(t, *ms.MigrationConfiguration.AllowPostCopy)
	assert.True(t, *ms.MigrationConfiguration.AllowWorkloadDisruption)
}

func TestEvacuationMigrationBacksOffAfterFailures(t *testing.T) {
	e := newMigEnv(t, nil, "n1", "n2")
	e.runningVMI("vm", "n1", true)
	evac := func() *virtkit.VirtualMachineInstanceMigration {
		m := &virtkit.VirtualMachineInstanceMigration{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "kubevirt-evacuation-",
				Annotations: map[string]string{virtkit.EvacuationMigrationAnnotation: "n1"}},
			Spec: virtkit.VirtualMachineInstanceMigrationSpec{VMIName: "vm"},
		}
		require.NoError(t, e.st.Create(e.ctx, m))
		e.clock.Advance(time.Second)
		return m
	}
	first := evac()
	e.settle()
	require.Equal(t, virtkit.MigrationPreparingTarget, e.mig(first).Status.Phase)
	e.agentWrites("vm", func(_ *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) {
		ms.Failed, ms.Completed, ms.FailureReason = true, true, "target went away"
	})
	e.settle()
	require.Equal(t, virtkit.MigrationFailed, e.mig(first).Status.Phase)

	second := evac()
	e.settle()
	assert.Equal(t, virtkit.MigrationPending, e.mig(second).Status.Phase, "20 s after a failed evacuation")
	res, err := e.r.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: e.mig(second).Name})
	require.NoError(t, err)
	assert.Greater(t, res.RequeueAfter, 15*time.Second)
	assert.LessOrEqual(t, res.RequeueAfter, 20*time.Second)
	e.clock.Advance(20 * time.Second)
	e.settle()
	assert.Equal(t, virtkit.MigrationPreparingTarget, e.mig(second).Status.Phase)

	// A user's migration is not held back by evacuation failures.
	e.agentWrites("vm", func(_ *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) {
		ms.Failed, ms.Completed, ms.FailureReason = true, true, "again"
	})
	e.settle()
	user := e.migrate("vm")
	e.settle()
	assert.Equal(t, virtkit.MigrationPreparingTarget, e.mig(user).Status.Phase)
}

// A migration admitted for a VMI that is then deleted and created again on
// another node fails: the source it recorded no longer runs the VMI, and
// the VMI's node is not that source, so no node agent would ever act on it
// (before the fix it stayed in TargetReady for good).
func TestMigrationOfReplacedVMIFails(t *testing.T) {
	e := newMigEnv(t, nil, "n1", "n2", "n3")
	old := e.runningVMI("vm", "n1", true)
	m := e.migrate("vm")
	// Admitted (Pending, source recorded) but not yet handed off, as when
	// it waits for a slot.
	m = e.mig(m)
	m.SetPhase(virtkit.MigrationPending, metav1.NewTime(e.clock.Now()))
	m.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{MigrationUID: m.UID, SourceNode: "n1"}
	require.NoError(t, e.st.UpdateStatus(e.ctx, m))

	require.NoError(t, e.st.Delete(e.ctx, old, store.DeleteOptions{}))
	e.runningVMI("vm", "n3", true)
	e.settle()

	got := e.mig(m)
	assert.Equal(t, virtkit.MigrationFailed, got.Status.Phase)
	assert.Equal(t, virtkit.MigrationReasonSourceMoved, got.Status.MigrationState.FailureReason)
	if ms := e.vmi("vm").Status.MigrationState; ms != nil && ms.MigrationUID == m.UID {
		assert.True(t, ms.Failed, "the VMI's state of the migration is ended too")
	}
}

// A hand-off whose VMI status write landed but whose target label and
// migration status writes were lost (conflicts, a slow store), after which
// the target was placed again on another node: the VMI's state and label
// must name one target, or neither agent acts and the migration waits in
// PreparingTarget for ever. A target the agents were told (the label
// written) is kept.
func TestMigrationHandOffAfterALostWrite(t *testing.T) {
	for _, tc := range []struct {
		name      string
		labelled  bool
		wantNode  string
		whyTarget string
	}{
		{name: "state written, label lost: the new target", labelled: false, wantNode: "n3",
			whyTarget: "no agent was told of n2"},
		{name: "state and label written: the told target", labelled: true, wantNode: "n2",
			whyTarget: "n2's agent was told"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newMigEnv(t, nil, "n1", "n2", "n3")
			e.runningVMI("vm", "n1", true)
			m := e.migrate("vm")
			// What the lost hand-off left: the VMI's state for n2.
			v := e.vmi("vm")
			v.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{
				MigrationUID: e.mig(m).UID, SourceNode: "n1", TargetNode: "n2",
			}
			require.NoError(t, e.st.UpdateStatus(e.ctx, v))
			if tc.labelled {
				v = e.vmi("vm")
				v.Labels[virtkit.MigrationTargetNodeNameLabel] = "n2"
				require.NoError(t, e.st.Update(e.ctx, v))
			}
			// n2 is cordoned since, so a new placement picks n3.
			n := &virtkit.Node{}
			require.NoError(t, e.st.Get(e.ctx, store.Key{Name: "n2"}, n))
			n.Spec.Unschedulable = true
			require.NoError(t, e.st.Update(e.ctx, n))

			e.settle()
			got := e.vmi("vm")
			require.NotNil(t, got.Status.MigrationState)
			assert.Equal(t, tc.wantNode, got.Status.MigrationState.TargetNode, tc.whyTarget)
			assert.Equal(t, tc.wantNode, got.Labels[virtkit.MigrationTargetNodeNameLabel], "the label names the state's target")
			mig := e.mig(m)
			assert.Equal(t, virtkit.MigrationPreparingTarget, mig.Status.Phase)
			require.NotNil(t, mig.Status.MigrationState)
			assert.Equal(t, tc.wantNode, mig.Status.MigrationState.TargetNode)
		})
	}
}
