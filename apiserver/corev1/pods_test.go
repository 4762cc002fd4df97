package corev1_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/virtkit/virtkit"
	apicorev1 "github.com/virtkit/virtkit/apiserver/corev1"
	"github.com/virtkit/virtkit/store"
)

func launcherVMI(name string, phase virtkit.VirtualMachineInstancePhase, node string) *virtkit.VirtualMachineInstance {
	vmi := &virtkit.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Labels: map[string]string{"app": "web"}},
		Status: virtkit.VirtualMachineInstanceStatus{Phase: phase, NodeName: node},
	}
	if phase == virtkit.Running {
		vmi.Status.Conditions = []virtkit.Condition{{Type: virtkit.VirtualMachineInstanceReady, Status: virtkit.ConditionTrue}}
	}
	return vmi
}

func TestLauncherPods(t *testing.T) {
	now := metav1.Now()
	type want struct{ node, phase, status, ready string }
	tests := []struct {
		name   string
		vmi    func() *virtkit.VirtualMachineInstance
		want   []want
		status []string
	}{
		{name: "not placed", vmi: func() *virtkit.VirtualMachineInstance { return launcherVMI("a", virtkit.Pending, "") }},
		{name: "scheduling", vmi: func() *virtkit.VirtualMachineInstance { return launcherVMI("a", virtkit.Scheduling, "n1") },
			want: []want{{"n1", "Pending", "ContainerCreating", "False"}}},
		{name: "scheduled", vmi: func() *virtkit.VirtualMachineInstance { return launcherVMI("a", virtkit.Scheduled, "n1") },
			want: []want{{"n1", "Running", "Running", "False"}}},
		{name: "running", vmi: func() *virtkit.VirtualMachineInstance { return launcherVMI("a", virtkit.Running, "n1") },
			want: []want{{"n1", "Running", "Running", "True"}}},
		{name: "migrating", vmi: func() *virtkit.VirtualMachineInstance {
			v := launcherVMI("a", virtkit.Running, "n1")
			v.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{SourceNode: "n1", TargetNode: "n2", StartTimestamp: &now}
			return v
		}, want: []want{{"n1", "Running", "Running", "True"}, {"n2", "Running", "Running", "False"}}},
		{name: "migration ended", vmi: func() *virtkit.VirtualMachineInstance {
			v := launcherVMI("a", virtkit.Running, "n2")
			v.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{SourceNode: "n1", TargetNode: "n2", Completed: true}
			return v
		}, want: []want{{"n2", "Running", "Running", "True"}}},
		{name: "succeeded", vmi: func() *virtkit.VirtualMachineInstance { return launcherVMI("a", virtkit.Succeeded, "n1") }},
		{name: "stopping", vmi: func() *virtkit.VirtualMachineInstance {
			v := launcherVMI("a", virtkit.Running, "n1")
			v.DeletionTimestamp = &now
			return v
		}, want: []want{{"n1", "Running", "Terminating", "True"}}},
		{name: "failed while deleted", vmi: func() *virtkit.VirtualMachineInstance {
			v := launcherVMI("a", virtkit.Failed, "n1")
			v.DeletionTimestamp = &now
			return v
		}, want: []want{{"n1", "Failed", "Terminating", "False"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vmi := tt.vmi()
			pods := apicorev1.LauncherPods(vmi)
			require.Len(t, pods, len(tt.want))
			for i, w := range tt.want {
				p := pods[i]
				assert.Equal(t, apicorev1.LauncherPodName("a", vmi.UID, w.node), p.Name)
				assert.Regexp(t, `^virt-launcher-a-[bcdfghjklmnpqrstvwxz2456789]{5}$`, p.Name)
				assert.Equal(t, "default", p.Namespace)
				assert.Equal(t, w.node, p.Spec.NodeName)
				assert.Equal(t, corev1.PodPhase(w.phase), p.Status.Phase)
				assert.Equal(t, map[string]string{"app": "web", "kubevirt.io": "virt-launcher", "kubevirt.io/created-by": "uid-a", "vm.kubevirt.io/name": "a"}, p.Labels)
				ref := metav1.GetControllerOf(p)
				require.NotNil(t, ref)
				assert.Equal(t, metav1.OwnerReference{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: "a", UID: "uid-a",
					Controller: new(true), BlockOwnerDeletion: new(true)}, *ref)
				require.Len(t, p.Spec.Containers, 1)
				assert.Equal(t, "compute", p.Spec.Containers[0].Name)
				var ready corev1.ConditionStatus
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodReady {
						ready = c.Status
					}
				}
				assert.Equal(t, corev1.ConditionStatus(w.ready), ready)
				assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, string(p.UID))
			}
			if len(pods) == 2 {
				assert.NotEqual(t, pods[0].Name, pods[1].Name)
				assert.NotEqual(t, pods[0].UID, pods[1].UID)
			}
		})
	}
	// Stable for a VMI on a node; a new VMI of the same name has new pods.
	assert.Equal(t, apicorev1.LauncherPodName("a", "u1", "n1"), apicorev1.LauncherPodName("a", "u1", "n1"))
	assert.NotEqual(t, apicorev1.LauncherPodName("a", "u1", "n1"), apicorev1.LauncherPodName("a", "u2", "n1"))
}

// createVMI writes vmi and its status to the store.
func createVMI(t *testing.T, st store.Store, vmi *virtkit.VirtualMachineInstance) *virtkit.VirtualMachineInstance {
	t.Helper()
	status := vmi.Status
	vmi = vmi.DeepCopy()
	vmi.UID = ""
	require.NoError(t, st.Create(t.Context(), vmi))
	vmi.Status = status
	require.NoError(t, st.UpdateStatus(t.Context(), vmi))
	return vmi
}

func TestServerPods(t *testing.T) {
	ts := newTestServer(t)
	ctx := t.Context()
	pods := ts.client.CoreV1().Pods("default")
	a := createVMI(t, ts.store, launcherVMI("a", virtkit.Running, "n1"))
	createVMI(t, ts.store, launcherVMI("b", virtkit.Running, "n2"))
	createVMI(t, ts.store, launcherVMI("c", virtkit.Pending, ""))

	l, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n1"})
	require.NoError(t, err)
	require.Len(t, l.Items, 1)
	podA := l.Items[0]
	assert.Equal(t, apicorev1.LauncherPodName("a", a.UID, "n1"), podA.Name)
	l, err = pods.List(ctx, metav1.ListOptions{LabelSelector: "kubevirt.io=virt-launcher,vm.kubevirt.io/name=b"})
	require.NoError(t, err)
	require.Len(t, l.Items, 1)
	assert.Equal(t, "n2", l.Items[0].Spec.NodeName)
	l, err = ts.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, l.Items, 2, "the unplaced VMI has no pod")

	got, err := pods.Get(ctx, podA.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, podA.UID, got.UID)
	for _, name := range []string{"virt-launcher-a-bbbbb", "virt-launcher-zz-bbbbb", "a", "virt-launcher-"} {
		_, err = pods.Get(ctx, name, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "%s: %v", name, err)
	}
	_, err = pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, metav1.CreateOptions{})
	assert.True(t, apierrors.IsMethodNotSupported(err), "%v", err)

	// A watch sees a migration's target pod come, and the source's go
	// when the VMI has moved.
	w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: "vm.kubevirt.io/name=a"})
	require.NoError(t, err)
	defer w.Stop()
	next := func() watch.Event {
		t.Helper()
		select {
		case e := <-w.ResultChan():
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event")
			return watch.Event{}
		}
	}
	e := next()
	assert.Equal(t, watch.Added, e.Type)
	assert.Equal(t, podA.Name, e.Object.(*corev1.Pod).Name)

	now := metav1.Now()
	require.NoError(t, ts.store.Get(ctx, store.KeyOf(a), a))
	a.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{SourceNode: "n1", TargetNode: "n2", StartTimestamp: &now}
	require.NoError(t, ts.store.UpdateStatus(ctx, a))
	target := apicorev1.LauncherPodName("a", a.UID, "n2")
	seen := map[string]watch.EventType{}
	for range 2 {
		e = next()
		seen[e.Object.(*corev1.Pod).Name] = e.Type
	}
	assert.Equal(t, map[string]watch.EventType{podA.Name: watch.Modified, target: watch.Added}, seen)

	a.Status.NodeName = "n2"
	a.Status.MigrationState.Completed = true
	require.NoError(t, ts.store.UpdateStatus(ctx, a))
	seen = map[string]watch.EventType{}
	for range 2 {
		e = next()
		seen[e.Object.(*corev1.Pod).Name] = e.Type
	}
	assert.Equal(t, map[string]watch.EventType{podA.Name: watch.Deleted, target: watch.Modified}, seen)
	_, err = pods.Get(ctx, podA.Name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)

	require.NoError(t, ts.store.Delete(ctx, a, store.DeleteOptions{}))
	e = next()
	assert.Equal(t, watch.Deleted, e.Type)
	assert.Equal(t, target, e.Object.(*corev1.Pod).Name)

	// kubectl's table.
	out, err := ts.kubectl(t, "get", "pods", "-o", "wide")
	require.NoError(t, err, out)
	assert.Regexp(t, `(?m)^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES\n`+
		`virt-launcher-b-[a-z0-9]{5}\s+1/1\s+Running\s+0\s+\S+\s+<none>\s+n2\s+<none>\s+<none>\n$`, out)
}

func TestServerEviction(t *testing.T) {
	strategy := func(s virtkit.EvictionStrategy) *virtkit.EvictionStrategy { return &s }
	tests := []struct {
		name       string
		strategy   *virtkit.EvictionStrategy
		cluster    *virtkit.EvictionStrategy // the KubeVirt object's default
		migratable bool
		dryRun     bool
		wantCode   int32 // 0: evicted
		wantMsg    string
		wantMark   bool
		wantGone   bool
	}{
		{name: "None", strategy: strategy(virtkit.EvictionStrategyNone), wantGone: true},
		{name: "no strategy, no KubeVirt object", wantGone: true},
		{name: "cluster default LiveMigrate", cluster: strategy(virtkit.EvictionStrategyLiveMigrate), migratable: true,
			wantCode: 429, wantMsg: `Eviction triggered evacuation of VMI "default/a"`, wantMark: true},
		{name: "own strategy over the cluster's", strategy: strategy(virtkit.EvictionStrategyNone), cluster: strategy(virtkit.EvictionStrategyLiveMigrate),
			migratable: true, wantGone: true},
		{name: "LiveMigrate", strategy: strategy(virtkit.EvictionStrategyLiveMigrate), migratable: true,
			wantCode: 429, wantMsg: `Eviction triggered evacuation of VMI "default/a"`, wantMark: true},
		{name: "LiveMigrate dry run", strategy: strategy(virtkit.EvictionStrategyLiveMigrate), migratable: true, dryRun: true,
			wantCode: 429, wantMsg: `Eviction triggered evacuation of VMI "default/a"`},
		{name: "LiveMigrate not migratable", strategy: strategy(virtkit.EvictionStrategyLiveMigrate),
			wantCode: 429, wantMsg: "is configured with an eviction strategy but is not live-migratable"},
		{name: "LiveMigrateIfPossible migratable", strategy: strategy(virtkit.EvictionStrategyLiveMigrateIfPossible), migratable: true,
			wantCode: 429, wantMsg: "Eviction triggered evacuation", wantMark: true},
		{name: "LiveMigrateIfPossible not migratable", strategy: strategy(virtkit.EvictionStrategyLiveMigrateIfPossible), wantGone: true},
		{name: "None dry run", strategy: strategy(virtkit.EvictionStrategyNone), dryRun: true},
		{name: "External", strategy: strategy(virtkit.EvictionStrategyExternal),
			wantCode: 429, wantMsg: "Eviction triggered evacuation", wantMark: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t)
			ctx := t.Context()
			if tt.cluster != nil {
				kv := virtkit.DefaultKubeVirt()
				kv.Spec.Configuration.EvictionStrategy = tt.cluster
				require.NoError(t, ts.store.Create(ctx, kv))
			}
			v := launcherVMI("a", virtkit.Running, "n1")
			v.Spec.EvictionStrategy = tt.strategy
			if tt.migratable {
				v.Status.Conditions = append(v.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstanceIsMigratable, Status: virtkit.ConditionTrue})
			}
			// A finalizer keeps a deleted VMI, as a node agent's does
			// while the guest shuts down.
			v.Finalizers = []string{"test/hold"}
			v = createVMI(t, ts.store, v)
			ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: apicorev1.LauncherPodName("a", v.UID, "n1"), Namespace: "default"}}
			if tt.dryRun {
				ev.DeleteOptions = &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
			}
			err := ts.client.CoreV1().Pods("default").EvictV1(ctx, ev)
			if tt.wantCode == 0 {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.True(t, apierrors.IsTooManyRequests(err), "%v", err)
				assert.Contains(t, err.Error(), tt.wantMsg)
			}
			got := &virtkit.VirtualMachineInstance{}
			err = ts.store.Get(ctx, store.KeyOf(v), got)
			require.NoError(t, err)
			if tt.wantGone {
				assert.NotNil(t, got.DeletionTimestamp, "the VMI is deleted")
				c := virtkit.GetCondition(got.Status.Conditions, virtkit.VirtualMachineInstanceEvictionRequested)
				require.NotNil(t, c)
				assert.Equal(t, virtkit.ConditionTrue, c.Status)
				assert.Contains(t, c.Message, "shut down by the eviction of its launcher pod on node n1")
				return
			}
			assert.Nil(t, virtkit.GetCondition(got.Status.Conditions, virtkit.VirtualMachineInstanceEvictionRequested), "the control plane sets the condition of a mark")
			assert.Nil(t, got.DeletionTimestamp)
			if tt.wantMark {
				assert.Equal(t, "n1", got.Status.EvacuationNodeName)
			} else {
				assert.Empty(t, got.Status.EvacuationNodeName)
			}
		})
	}
}

func TestServerEvictionRefusals(t *testing.T) {
	ts := newTestServer(t)
	ctx := t.Context()
	pods := ts.client.CoreV1().Pods("default")
	now := metav1.Now()
	v := launcherVMI("a", virtkit.Running, "n1")
	v.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{SourceNode: "n1", TargetNode: "n2", StartTimestamp: &now}
	v = createVMI(t, ts.store, v)

	err := pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "virt-launcher-nope-bbbbb", Namespace: "default"}})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)

	err = pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: apicorev1.LauncherPodName("a", v.UID, "n2"), Namespace: "default"}})
	assert.True(t, apierrors.IsTooManyRequests(err), "a migration's target: %v", err)
	assert.Contains(t, err.Error(), "target of a running migration")

	wrong := types.UID("other")
	err = pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: apicorev1.LauncherPodName("a", v.UID, "n1"), Namespace: "default"},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}}})
	assert.True(t, apierrors.IsConflict(err), "%v", err)
	require.NoError(t, ts.store.Get(ctx, store.KeyOf(v), v))
	assert.Nil(t, v.DeletionTimestamp, "a refused eviction deletes nothing")
}
