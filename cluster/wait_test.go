package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

type vmiPred = cluster.Predicate[*virtkit.VirtualMachineInstance]

func TestPredicates(t *testing.T) {
	running := &virtkit.VirtualMachineInstance{}
	running.Status.Phase = virtkit.Running
	running.Status.NodeName = "n1"
	running.Status.Conditions = []virtkit.Condition{{Type: virtkit.VirtualMachineInstanceReady, Status: virtkit.ConditionTrue}}
	scheduling := &virtkit.VirtualMachineInstance{}
	scheduling.Status.Phase = virtkit.Scheduling
	ready := cluster.HasCondition[*virtkit.VirtualMachineInstance](virtkit.VirtualMachineInstanceReady, virtkit.ConditionTrue)
	tests := []struct {
		name  string
		p     vmiPred
		vmi   *virtkit.VirtualMachineInstance
		found bool
		want  bool
	}{
		{"phase", cluster.VMIPhase(virtkit.Running), running, true, true},
		{"other phase", cluster.VMIPhase(virtkit.Running), scheduling, true, false},
		{"missing", cluster.VMIPhase(""), &virtkit.VirtualMachineInstance{}, false, false},
		{"condition", ready, running, true, true},
		{"no condition", ready, scheduling, true, false},
		{"condition of another status", cluster.HasCondition[*virtkit.VirtualMachineInstance](virtkit.VirtualMachineInstanceReady, virtkit.ConditionFalse), running, true, false},
		{"all", cluster.All(cluster.VMIPhase(virtkit.Running), ready, cluster.VMIOnNode("n1")), running, true, true},
		{"all, one fails", cluster.All(cluster.VMIPhase(virtkit.Running), cluster.VMIOnNode("n2")), running, true, false},
		{"empty all needs the object", cluster.All[*virtkit.VirtualMachineInstance](), running, false, false},
		{"any", cluster.Any(cluster.VMIPhase(virtkit.Failed), cluster.VMIReady()), running, true, true},
		{"not", cluster.Not(cluster.Exists[*virtkit.VirtualMachineInstance]()), running, false, true},
		{"plain func", func(v *virtkit.VirtualMachineInstance, found bool) bool { return found && v.Status.NodeName == "n1" }, running, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.p(tt.vmi, tt.found))
		})
	}

	rs := &virtkit.VirtualMachineInstanceReplicaSet{}
	rs.Status.Replicas, rs.Status.ReadyReplicas = 3, 2
	assert.False(t, cluster.ReplicaSetReady(3)(rs, true))
	rs.Status.ReadyReplicas = 3
	assert.True(t, cluster.ReplicaSetReady(3)(rs, true))
	assert.False(t, cluster.ReplicaSetReady(2)(rs, true), "scaling down is not done while 3 exist")

	m := &virtkit.VirtualMachineInstanceMigration{}
	m.Status.Phase = virtkit.MigrationFailed
	assert.False(t, cluster.MigrationSucceeded()(m, true))
	assert.True(t, cluster.MigrationFinished()(m, true))
}

func newVMIObj(name string) *virtkit.VirtualMachineInstance {
	mem := resource.MustParse("64Mi")
	return &virtkit.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": "web"}},
		Spec:       virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &mem}}},
	}
}

func TestWaitTimeoutReportsTheLastStateSeen(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	c, err := cluster.New(cluster.Options{Store: st, NodeNames: []string{"node-a"}})
	require.NoError(t, err)

	vmi := newVMIObj("vm1")
	require.NoError(t, st.Create(ctx, vmi))
	vmi.Status.Phase = virtkit.Scheduling
	vmi.Status.Conditions = []virtkit.Condition{
		{Type: virtkit.VirtualMachineInstanceReady, Status: virtkit.ConditionFalse, Reason: "GuestNotRunning"},
		{Type: virtkit.VirtualMachineInstanceProvisioning, Status: virtkit.ConditionTrue},
	}
	require.NoError(t, st.UpdateStatus(ctx, vmi))

	tests := []struct {
		name    string
		key     string
		wantMsg string
	}{
		{"an object in another state", "vm1", "waiting for default/vm1: last seen phase Scheduling, conditions [Ready=False (GuestNotRunning), " + string(virtkit.VirtualMachineInstanceProvisioning) + "=True]: context deadline exceeded"},
		{"a missing object", "vm2", "waiting for default/vm2: last seen not found: context deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			_, err := c.WaitForVMI(wctx, "default", tt.key, cluster.VMIPhase(virtkit.Running))
			require.Error(t, err)
			assert.Equal(t, tt.wantMsg, err.Error())
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.ErrorIs(t, err, cluster.ErrWaitFailed)
			var we *cluster.WaitError
			require.True(t, errors.As(err, &we))
			assert.Equal(t, "default/"+tt.key, we.What)
		})
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = c.WaitForVMI(cctx, "default", "vm1", cluster.VMIPhase(virtkit.Running))
	assert.ErrorIs(t, err, context.Canceled)
}

// A migration driven through its phases by another writer: the wait sees
// each change through its watch and returns the object in the phase asked
// for; a migration that fails ends the wait for success at once.
func TestWaitForMigration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := store.NewMemory()
	c, err := cluster.New(cluster.Options{Store: st, NodeNames: []string{"node-a"}})
	require.NoError(t, err)

	drive := func(name string, phases ...virtkit.VirtualMachineInstanceMigrationPhase) {
		m := &virtkit.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: virtkit.VirtualMachineInstanceMigrationSpec{VMIName: "vm1"}}
		require.NoError(t, st.Create(ctx, m))
		go func() {
			for _, p := range phases {
				time.Sleep(5 * time.Millisecond)
				m.Status.Phase = p
				if err := st.UpdateStatus(ctx, m); err != nil {
					return
				}
			}
		}()
	}

	drive("ok", virtkit.MigrationScheduling, virtkit.MigrationRunning, virtkit.MigrationSucceeded)
	got, err := c.WaitForMigration(ctx, "default", "ok", cluster.MigrationSucceeded())
	require.NoError(t, err)
	assert.Equal(t, virtkit.MigrationSucceeded, got.Status.Phase)

	drive("bad", virtkit.MigrationScheduling, virtkit.MigrationFailed)
	_, err = c.WaitForMigration(ctx, "default", "bad", cluster.MigrationSucceeded())
	require.ErrorIs(t, err, cluster.ErrFinalState)
	assert.ErrorIs(t, err, cluster.ErrWaitFailed)
	assert.Contains(t, err.Error(), "waiting for default/bad: last seen phase Failed")
	require.NoError(t, ctx.Err(), "it did not wait for the deadline")

	got, err = c.WaitForMigration(ctx, "default", "bad", cluster.MigrationFinished())
	require.NoError(t, err, "a final phase the condition accepts is returned")
	assert.Equal(t, virtkit.MigrationFailed, got.Status.Phase)
}

// On a running cluster of simulated hosts: the nodes come up, and a
// replica set's VMIs become ready.
func TestWaitNodesReadyAndReplicaSet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cluster.New(cluster.Options{NodeNames: []string{"node-a", "node-b"}})
	require.NoError(t, err)

	early, cancelEarly := context.WithTimeout(ctx, 20*time.Millisecond)
	err = c.WaitNodesReady(early)
	cancelEarly()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, "waiting for nodes ready: last seen node-a not registered; node-b not registered: context deadline exceeded", err.Error())

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(runCtx) }()
	defer func() {
		stop()
		require.NoError(t, <-done)
	}()
	require.NoError(t, c.WaitNodesReady(ctx))
	ok, err := c.NodesReady(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "the one-shot check agrees")

	replicas := int32(2)
	tmpl := newVMIObj("")
	rs := &virtkit.VirtualMachineInstanceReplicaSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstanceReplicaSet},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: virtkit.VirtualMachineInstanceReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: &virtkit.VirtualMachineInstanceTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec},
		},
	}
	require.NoError(t, c.Apply(ctx, rs))
	got, err := c.WaitForReplicaSet(ctx, "default", "web", cluster.ReplicaSetReady(2))
	require.NoError(t, err)
	assert.Equal(t, int32(2), got.Status.ReadyReplicas)
}
