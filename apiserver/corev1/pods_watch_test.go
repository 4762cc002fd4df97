package corev1_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/virtkit/virtkit"
	apicorev1 "github.com/virtkit/virtkit/apiserver/corev1"
	"github.com/virtkit/virtkit/store"
)

// podEvent is a watch event by type and pod name.
type podEvent struct {
	Type watch.EventType
	Name string
}

// resumedEvents watches pods from rv and returns the first n events.
func resumedEvents(t *testing.T, pods typedcorev1.PodInterface, opts metav1.ListOptions, n int) []podEvent {
	t.Helper()
	w, err := pods.Watch(t.Context(), opts)
	require.NoError(t, err)
	defer w.Stop()
	var out []podEvent
	for len(out) < n {
		select {
		case e, ok := <-w.ResultChan():
			require.True(t, ok, "the watch ended after %v", out)
			p, isPod := e.Object.(*corev1.Pod)
			require.True(t, isPod, "%s %#v", e.Type, e.Object)
			out = append(out, podEvent{e.Type, p.Name})
		case <-time.After(10 * time.Second):
			t.Fatalf("no watch event after %v", out)
		}
	}
	select { // and nothing more
	case e := <-w.ResultChan():
		t.Fatalf("unexpected %s after %v", e.Type, out)
	case <-time.After(200 * time.Millisecond):
	}
	return out
}

// A watch resumed from a listed resourceVersion reports what changed
// since, as a watch of stored objects does, though the pods derive from
// the VMIs: the source pod of a migration that completed after the list
// is deleted, a VMI that ended takes its pod with it, a pod that stops
// matching the selector is deleted, and a pod that appeared since is
// added.
func TestServerPodsWatchResumed(t *testing.T) {
	ts := newTestServer(t)
	ctx := t.Context()
	pods := ts.client.CoreV1().Pods("default")
	update := func(vmi *virtkit.VirtualMachineInstance, change func(*virtkit.VirtualMachineInstance)) {
		t.Helper()
		require.NoError(t, ts.store.Get(ctx, store.KeyOf(vmi), vmi))
		change(vmi)
		require.NoError(t, ts.store.UpdateStatus(ctx, vmi))
	}
	now := metav1.Now()
	a := createVMI(t, ts.store, launcherVMI("a", virtkit.Running, "n1"))
	b := createVMI(t, ts.store, launcherVMI("b", virtkit.Running, "n1"))
	c := createVMI(t, ts.store, launcherVMI("c", virtkit.Pending, ""))
	update(a, func(v *virtkit.VirtualMachineInstance) {
		v.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{SourceNode: "n1", TargetNode: "n2", StartTimestamp: &now}
	})
	source, target := apicorev1.LauncherPodName("a", a.UID, "n1"), apicorev1.LauncherPodName("a", a.UID, "n2")

	// The list holds a's pods on n1 and n2 (migrating), b's on n1.
	l, err := pods.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, l.Items, 3)
	rv := l.ResourceVersion

	// After the list: a's migration completes, b succeeds, c is placed.
	update(a, func(v *virtkit.VirtualMachineInstance) {
		v.Status.NodeName = "n2"
		v.Status.MigrationState.Completed = true
	})
	update(b, func(v *virtkit.VirtualMachineInstance) { v.Status.Phase = virtkit.Succeeded })
	update(c, func(v *virtkit.VirtualMachineInstance) { v.Status.NodeName, v.Status.Phase = "n2", virtkit.Scheduled })
	podB, podC := apicorev1.LauncherPodName("b", b.UID, "n1"), apicorev1.LauncherPodName("c", c.UID, "n2")

	got := resumedEvents(t, pods, metav1.ListOptions{ResourceVersion: rv}, 4)
	assert.ElementsMatch(t, []podEvent{{watch.Deleted, source}, {watch.Modified, target}}, got[:2], "a's migration completed")
	assert.Equal(t, []podEvent{{watch.Deleted, podB}, {watch.Added, podC}}, got[2:], "b ended, c was placed")

	// With a selector: a pod whose labels stop matching is deleted.
	l, err = pods.List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	require.Len(t, l.Items, 2)
	require.NoError(t, ts.store.Get(ctx, store.KeyOf(c), c))
	c.Labels = map[string]string{"app": "db"}
	require.NoError(t, ts.store.Update(ctx, c))
	got = resumedEvents(t, pods, metav1.ListOptions{ResourceVersion: l.ResourceVersion, LabelSelector: "app=web"}, 1)
	assert.Equal(t, []podEvent{{watch.Deleted, podC}}, got)
}

// A watch resumed from a version before the pods' history began (it
// begins with the first pod list or watch) that needs what a VMI derived
// then is told the version is too old (410 Gone), so the client relists,
// as from a version a watch cache no longer holds.
func TestServerPodsWatchResumedTooOld(t *testing.T) {
	ts := newTestServer(t)
	ctx := t.Context()
	a := createVMI(t, ts.store, launcherVMI("a", virtkit.Running, "n1"))
	old := a.ResourceVersion
	require.NoError(t, ts.store.Get(ctx, store.KeyOf(a), a))
	a.Status.NodeName = "n2"
	require.NoError(t, ts.store.UpdateStatus(ctx, a))

	w, err := ts.client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{ResourceVersion: old})
	require.NoError(t, err)
	defer w.Stop()
	select {
	case e := <-w.ResultChan():
		require.Equal(t, watch.Error, e.Type, "%#v", e.Object)
		st, ok := e.Object.(*metav1.Status)
		require.True(t, ok, "%#v", e.Object)
		assert.Equal(t, int32(410), st.Code, st.Message)
		assert.Equal(t, metav1.StatusReasonExpired, st.Reason)
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}
}
