package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

func newNodeHealth(t *testing.T, e *env) *NodeHealthReconciler {
	t.Helper()
	r, err := NewNodeHealthReconciler(NodeHealthOptions{
		Store: e.st, Clock: e.clock, MonitorGracePeriod: 40 * time.Second, UnresponsiveGracePeriod: time.Minute,
	})
	require.NoError(t, err)
	return r
}

func (e *env) heartbeat(name string) {
	e.t.Helper()
	n := &virtkit.Node{}
	require.NoError(e.t, e.st.Get(e.ctx, store.Key{Name: name}, n))
	hb := metav1.NewTime(e.clock.Now())
	n.Status.LastHeartbeatTime = &hb
	virtkit.SetCondition(&n.Status.Conditions, virtkit.Condition{Type: virtkit.NodeReady, Status: virtkit.ConditionTrue,
		Reason: virtkit.NodeReasonAgentReady}, hb)
	require.NoError(e.t, e.st.UpdateStatus(e.ctx, n))
}

func (e *env) getNode(name string) *virtkit.Node {
	e.t.Helper()
	n := &virtkit.Node{}
	require.NoError(e.t, e.st.Get(e.ctx, store.Key{Name: name}, n))
	return n
}

func TestNodeHealthFailsVMIsOfSilentNodeAndVMsComeBack(t *testing.T) {
	e := newEnv(t, 1)
	strategies := map[string]virtkit.VirtualMachineRunStrategy{
		"always": virtkit.RunStrategyAlways,
		"rerun":  virtkit.RunStrategyRerunOnFailure,
		"once":   virtkit.RunStrategyOnce,
	}
	for name, rs := range strategies {
		require.NoError(t, e.st.Create(e.ctx, newVM(name, rs)))
	}
	e.settle()
	first := map[string]*virtkit.VirtualMachineInstance{}
	for name := range strategies {
		vmi := e.getVMI(name)
		require.Equal(t, virtkit.Running, vmi.Status.Phase, name)
		require.Equal(t, "n1", vmi.Status.NodeName, name)
		first[name] = vmi
	}
	e.addNode("n2", "4", "8Gi")
	hr := newNodeHealth(t, e)

	res, err := hr.Reconcile(e.ctx, reconcile.Request{Name: "n1"})
	require.NoError(t, err)
	assert.Equal(t, 41*time.Second, res.RequeueAfter, "look again when the grace period ends")

	// n1 falls silent; n2 keeps posting.
	e.clock.Advance(30 * time.Second)
	e.heartbeat("n2")
	_, err = hr.Reconcile(e.ctx, reconcile.Request{Name: "n1"})
	require.NoError(t, err)
	assert.True(t, virtkit.IsConditionTrue(e.getNode("n1").Status.Conditions, virtkit.NodeReady), "still within the grace period")

	e.clock.Advance(15 * time.Second)
	e.heartbeat("n2")
	res, err = hr.Reconcile(e.ctx, reconcile.Request{Name: "n1"})
	require.NoError(t, err)
	assert.True(t, virtkit.HasCondition(e.getNode("n1").Status.Conditions, virtkit.NodeReady, virtkit.ConditionFalse, virtkit.NodeReasonHeartbeatTimeout))
	assert.Equal(t, 56*time.Second, res.RequeueAfter, "look again when the unresponsive grace ends")
	for name := range strategies {
		assert.Equal(t, virtkit.Running, e.getVMI(name).Status.Phase, "%s: VMIs wait for the unresponsive grace", name)
	}
	_, err = hr.Reconcile(e.ctx, reconcile.Request{Name: "n2"})
	require.NoError(t, err)
	assert.True(t, virtkit.IsConditionTrue(e.getNode("n2").Status.Conditions, virtkit.NodeReady), "n2 posts heartbeats")

	e.clock.Advance(time.Minute)
	e.heartbeat("n2")
	_, err = hr.Reconcile(e.ctx, reconcile.Request{Name: "n1"})
	require.NoError(t, err)
	for name := range strategies {
		vmi := e.getVMI(name)
		assert.Equal(t, virtkit.Failed, vmi.Status.Phase, name)
		assert.Equal(t, virtkit.NodeUnresponsiveReason, vmi.Status.Reason, name)
		assert.NotContains(t, vmi.Finalizers, virtkit.NodeAgentFinalizer, name)
	}

	e.settle()
	for _, tc := range []struct {
		name     string
		replaced bool
	}{
		{"always", true},
		{"rerun", true},
		{"once", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := e.getVMI(tc.name)
			require.NotNil(t, vmi)
			if !tc.replaced {
				assert.Equal(t, first[tc.name].UID, vmi.UID)
				assert.Equal(t, virtkit.Failed, vmi.Status.Phase)
				assert.Equal(t, virtkit.NodeUnresponsiveReason, vmi.Status.Reason)
				return
			}
			assert.NotEqual(t, first[tc.name].UID, vmi.UID)
			assert.Equal(t, "n2", vmi.Status.NodeName, "never placed on the not-ready node")
			assert.Equal(t, virtkit.Running, vmi.Status.Phase)
		})
	}

	// n1 comes back: its heartbeat counts again from now.
	e.heartbeat("n1")
	res, err = hr.Reconcile(e.ctx, reconcile.Request{Name: "n1"})
	require.NoError(t, err)
	assert.Equal(t, 41*time.Second, res.RequeueAfter)
	assert.True(t, virtkit.IsConditionTrue(e.getNode("n1").Status.Conditions, virtkit.NodeReady))
}

func TestNodeHealthKeepsStoppedReason(t *testing.T) {
	e := newEnv(t, 1)
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
	e.settle()
	n := e.getNode("n1")
	virtkit.SetCondition(&n.Status.Conditions, virtkit.Condition{Type: virtkit.NodeReady, Status: virtkit.ConditionFalse,
		Reason: virtkit.NodeReasonAgentStopped}, metav1.NewTime(e.clock.Now()))
	require.NoError(t, e.st.UpdateStatus(e.ctx, n))
	hr := newNodeHealth(t, e)
	_, err := hr.Reconcile(e.ctx, reconcile.Request{Name: "n1"})
	require.NoError(t, err)
	e.clock.Advance(101 * time.Second)
	_, err = hr.Reconcile(e.ctx, reconcile.Request{Name: "n1"})
	require.NoError(t, err)
	assert.True(t, virtkit.HasCondition(e.getNode("n1").Status.Conditions, virtkit.NodeReady, virtkit.ConditionFalse, virtkit.NodeReasonAgentStopped))
	vmi := e.getVMI("vm")
	assert.Equal(t, virtkit.Failed, vmi.Status.Phase, "a stopped agent leaves its guests unmanaged too")
	assert.Equal(t, virtkit.NodeUnresponsiveReason, vmi.Status.Reason)
}

func TestNodeHealthDeletedNodeOfLiveAgentIsNotDead(t *testing.T) {
	e := newEnv(t, 1)
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
	e.settle()
	before := e.getVMI("vm")
	hr := newNodeHealth(t, e)
	_, err := hr.Reconcile(e.ctx, reconcile.Request{Name: "n1"})
	require.NoError(t, err)

	require.NoError(t, e.st.Delete(e.ctx, e.getNode("n1"), store.DeleteOptions{}))
	e.clock.Advance(5 * time.Second)
	res, err := hr.Reconcile(e.ctx, reconcile.Request{Name: "n1"})
	require.NoError(t, err)
	assert.Equal(t, 96*time.Second, res.RequeueAfter, "a missing Node gets the grace of a silent one (40 s + 1 min from the last heartbeat)")
	vmi := e.getVMI("vm")
	assert.Equal(t, virtkit.Running, vmi.Status.Phase, "a deleted Node is not a dead node")
	assert.Contains(t, vmi.Finalizers, virtkit.NodeAgentFinalizer)

	// The live agent registers the Node again with its next heartbeat.
	require.NoError(t, e.st.Create(e.ctx, &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}))
	e.heartbeat("n1")
	e.clock.Advance(99 * time.Second)
	e.heartbeat("n1")
	res, err = hr.Reconcile(e.ctx, reconcile.Request{Name: "n1"})
	require.NoError(t, err)
	assert.Equal(t, 41*time.Second, res.RequeueAfter)
	vmi = e.getVMI("vm")
	assert.Equal(t, virtkit.Running, vmi.Status.Phase)
	assert.Equal(t, before.UID, vmi.UID, "never restarted")
}

func TestNodeHealthDeletedNodeWithoutAgentFailsAfterGrace(t *testing.T) {
	e := newEnv(t, 1)
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
	e.settle()
	require.NoError(t, e.st.Delete(e.ctx, e.getNode("n1"), store.DeleteOptions{}))
	hr := newNodeHealth(t, e)
	_, err := hr.Reconcile(e.ctx, reconcile.Request{Name: "n1"})
	require.NoError(t, err)
	assert.Equal(t, virtkit.Running, e.getVMI("vm").Status.Phase)
	e.clock.Advance(99 * time.Second)
	_, err = hr.Reconcile(e.ctx, reconcile.Request{Name: "n1"})
	require.NoError(t, err)
	assert.Equal(t, virtkit.Running, e.getVMI("vm").Status.Phase, "within the grace")
	e.clock.Advance(2 * time.Second)
	_, err = hr.Reconcile(e.ctx, reconcile.Request{Name: "n1"})
	require.NoError(t, err)
	vmi := e.getVMI("vm")
	assert.Equal(t, virtkit.Failed, vmi.Status.Phase)
	assert.Equal(t, virtkit.NodeUnresponsiveReason, vmi.Status.Reason)
	assert.NotContains(t, vmi.Finalizers, virtkit.NodeAgentFinalizer)
}

func TestNodeHealthWaitsForTheNodesFence(t *testing.T) {
	for _, tc := range []struct {
		name       string
		annotation string
		failAfter  time.Duration // since the last heartbeat change
	}{
		{"no fence timeout: the configured grace", "", 100 * time.Second},
		{"a fence timeout within the grace changes nothing", "1m", 100 * time.Second},
		{"a longer fence timeout extends the grace to 1.5x", "2m", 180 * time.Second},
		{"an unreadable fence timeout is ignored", "soon", 100 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1)
			require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
			e.settle()
			if tc.annotation != "" {
				n := e.getNode("n1")
				n.Annotations = map[string]string{virtkit.FenceTimeoutAnnotation: tc.annotation}
				require.NoError(t, e.st.Update(e.ctx, n))
			}
			hr := newNodeHealth(t, e)
			_, err := hr.Reconcile(e.ctx, reconcile.Request{Name: "n1"})
			require.NoError(t, err)
			e.clock.Advance(tc.failAfter - time.Second)
			_, err = hr.Reconcile(e.ctx, reconcile.Request{Name: "n1"})
			require.NoError(t, err)
			assert.Equal(t, virtkit.Running, e.getVMI("vm").Status.Phase, "a second before")
			e.clock.Advance(2 * time.Second)
			_, err = hr.Reconcile(e.ctx, reconcile.Request{Name: "n1"})
			require.NoError(t, err)
			assert.Equal(t, virtkit.Failed, e.getVMI("vm").Status.Phase, "a second after")
		})
	}
}

func TestNodeHealthMissingUnknownNodeAssumesTheLongestFence(t *testing.T) {
	e := newEnv(t, 1)
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
	e.settle()
	e.addNode("n2", "4", "8Gi")
	n2 := e.getNode("n2")
	n2.Annotations = map[string]string{virtkit.FenceTimeoutAnnotation: "2m"}
	require.NoError(t, e.st.Update(e.ctx, n2))
	e.heartbeat("n2")
	// n1 is deleted before this reconciler ever saw it.
	require.NoError(t, e.st.Delete(e.ctx, e.getNode("n1"), store.DeleteOptions{}))
	hr := newNodeHealth(t, e)
	_, err := hr.Reconcile(e.ctx, reconcile.Request{Name: "n2"})
	require.NoError(t, err)
	res, err := hr.Reconcile(e.ctx, reconcile.Request{Name: "n1"})
	require.NoError(t, err)
	assert.Equal(t, 181*time.Second, res.RequeueAfter, "1.5 x the 2 min fence n2 published, not the 100 s grace")
	e.clock.Advance(170 * time.Second)
	e.heartbeat("n2")
	_, err = hr.Reconcile(e.ctx, reconcile.Request{Name: "n1"})
	require.NoError(t, err)
	assert.Equal(t, virtkit.Running, e.getVMI("vm").Status.Phase)
	e.clock.Advance(11 * time.Second)
	_, err = hr.Reconcile(e.ctx, reconcile.Request{Name: "n1"})
	require.NoError(t, err)
	assert.Equal(t, virtkit.Failed, e.getVMI("vm").Status.Phase)
}

func TestMinNodeGrace(t *testing.T) {
	assert.Equal(t, time.Duration(0), virtkit.MinNodeGrace(0))
	assert.Equal(t, 90*time.Second, virtkit.MinNodeGrace(time.Minute))
	d, err := virtkit.ParseFenceTimeout("1m")
	require.NoError(t, err)
	assert.Equal(t, time.Minute, d)
	for _, bad := range []string{"", "-1s", "0s", "1 minute"} {
		_, err := virtkit.ParseFenceTimeout(bad)
		assert.Error(t, err, bad)
	}
}

func TestNodeHealthNeverReportedNode(t *testing.T) {
	e := newEnv(t, 0)
	require.NoError(t, e.st.Create(e.ctx, &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "quiet"}}))
	hr := newNodeHealth(t, e)
	res, err := hr.Reconcile(e.ctx, reconcile.Request{Name: "quiet"})
	require.NoError(t, err)
	assert.Zero(t, res.RequeueAfter)
	e.clock.Advance(time.Hour)
	_, err = hr.Reconcile(e.ctx, reconcile.Request{Name: "quiet"})
	require.NoError(t, err)
	assert.Empty(t, e.getNode("quiet").Status.Conditions, "no heartbeat yet: nothing to judge")
}

func TestNodeHealthOptions(t *testing.T) {
	st := store.NewMemory()
	for _, tc := range []struct {
		name string
		opts NodeHealthOptions
		ok   bool
	}{
		{"defaults", NodeHealthOptions{Store: st}, true},
		{"no store", NodeHealthOptions{}, false},
		{"negative monitor grace", NodeHealthOptions{Store: st, MonitorGracePeriod: -time.Second}, false},
		{"negative unresponsive grace", NodeHealthOptions{Store: st, UnresponsiveGracePeriod: -time.Second}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewNodeHealthReconciler(tc.opts)
			if !tc.ok {
				require.ErrorIs(t, err, virtkit.ErrInvalidOptions)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, DefaultNodeMonitorGracePeriod, r.o.MonitorGracePeriod)
			assert.Equal(t, DefaultNodeUnresponsiveGracePeriod, r.o.UnresponsiveGracePeriod)
		})
	}
}
