package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

func testDataVolume(name string, src virtkit.DataVolumeImportSource) *virtkit.DataVolume {
	return &virtkit.DataVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: virtkit.DataVolumeSpec{Source: &src, Storage: &virtkit.PersistentVolumeClaimSpec{Resources: virtkit.VolumeResourceRequirements{
			Requests: virtkit.ResourceList{virtkit.ResourceStorage: resource.MustParse("1Gi")}}}},
	}
}

func TestDataVolumeReconcilerSchedules(t *testing.T) {
	e := newEnv(t, 0)
	r, err := NewDataVolumeReconciler(ReconcilerOptions{Store: e.st, Clock: e.clock})
	require.NoError(t, err)
	get := func(name string) *virtkit.DataVolume {
		dv := &virtkit.DataVolume{}
		require.NoError(t, e.st.Get(e.ctx, key(name), dv))
		return dv
	}
	require.NoError(t, e.st.Create(e.ctx, testDataVolume("img", virtkit.DataVolumeImportSource{Blank: &virtkit.DataVolumeBlankImage{}})))
	require.NoError(t, e.st.Create(e.ctx, testDataVolume("copy", virtkit.DataVolumeImportSource{PVC: &virtkit.DataVolumeSourcePVC{Name: "img"}})))

	// No ready node: Pending, the claim unbound, retried.
	res, err := r.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "img"})
	require.NoError(t, err)
	assert.Positive(t, res.RequeueAfter)
	dv := get("img")
	assert.Equal(t, virtkit.DataVolumePending, dv.Status.Phase)
	assert.Equal(t, virtkit.ProgressNotAvailable, dv.Status.Progress)
	bound := dv.Status.Condition(virtkit.DataVolumeBound)
	require.NotNil(t, bound)
	assert.Equal(t, virtkit.ConditionFalse, bound.Status)
	assert.Contains(t, bound.Message, "no ready node")

	// The clone waits for its source.
	_, err = r.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "copy"})
	require.NoError(t, err)
	c := get("copy")
	assert.Equal(t, virtkit.DataVolumePending, c.Status.Phase)
	assert.Contains(t, c.Status.Condition(virtkit.DataVolumeBound).Message, "not ready")

	e.addNode("n1", "4", "8Gi")
	e.addNode("n2", "4", "8Gi")
	_, err = r.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "img"})
	require.NoError(t, err)
	dv = get("img")
	assert.Equal(t, virtkit.DataVolumeImportScheduled, dv.Status.Phase)
	assert.Equal(t, "img", dv.Status.ClaimName)
	assert.Equal(t, "n1", dv.Annotations[virtkit.DataVolumeImportNodeAnnotation])
	assert.Equal(t, virtkit.ConditionTrue, dv.Status.Condition(virtkit.DataVolumeBound).Status)

	// The source succeeds on n2 (node-local): the clone runs there.
	dv.Annotations[virtkit.DataVolumeVolumeNodeAnnotation] = "n2"
	require.NoError(t, e.st.Update(e.ctx, dv))
	dv.Status.Phase = virtkit.DataVolumeSucceeded
	require.NoError(t, e.st.UpdateStatus(e.ctx, dv))
	_, err = r.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "copy"})
	require.NoError(t, err)
	c = get("copy")
	assert.Equal(t, virtkit.DataVolumeCloneScheduled, c.Status.Phase)
	assert.Equal(t, "n2", c.Annotations[virtkit.DataVolumeImportNodeAnnotation])
}

func TestTemplateDataVolumeFacts(t *testing.T) {
	tests := []struct {
		name                       string
		phase                      virtkit.DataVolumePhase
		running                    string
		wantErr, wantProv, wantBnd bool
	}{
		{"pending", virtkit.DataVolumePending, "", false, false, true},
		{"importing", virtkit.DataVolumeImportInProgress, "", false, true, false},
		{"import error", virtkit.DataVolumeImportInProgress, virtkit.DataVolumeReasonError, true, false, false},
		{"failed", virtkit.DataVolumeFailed, "", true, false, false},
		{"succeeded", virtkit.DataVolumeSucceeded, "", false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 0)
			vm := newVM("vm", virtkit.RunStrategyAlways)
			vm.Spec.DataVolumeTemplates = []virtkit.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: "root"}}}
			dv := testDataVolume("root", virtkit.DataVolumeImportSource{Blank: &virtkit.DataVolumeBlankImage{}})
			require.NoError(t, e.st.Create(e.ctx, dv))
			dv.Status.Phase = tt.phase
			if tt.running != "" {
				dv.Status.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeRunning, Status: virtkit.ConditionFalse, Reason: tt.running}, metav1.Now())
			}
			require.NoError(t, e.st.UpdateStatus(e.ctx, dv))
			gotErr, gotProv, gotBnd := templateDataVolumeFacts(e.ctx, e.st, vm)
			assert.Equal(t, []bool{tt.wantErr, tt.wantProv, tt.wantBnd}, []bool{gotErr, gotProv, gotBnd})
		})
	}
}

// An import scheduled on a node that stops being ready before it started
// is scheduled again on a ready node.
func TestDataVolumeReconcilerReschedulesFromLostNode(t *testing.T) {
	e := newEnv(t, 2)
	r, err := NewDataVolumeReconciler(ReconcilerOptions{Store: e.st, Clock: e.clock})
	require.NoError(t, err)
	require.NoError(t, e.st.Create(e.ctx, testDataVolume("img", virtkit.DataVolumeImportSource{Blank: &virtkit.DataVolumeBlankImage{}})))
	req := reconcile.Request{Namespace: "default", Name: "img"}
	_, err = r.Reconcile(e.ctx, req)
	require.NoError(t, err)
	dv := &virtkit.DataVolume{}
	require.NoError(t, e.st.Get(e.ctx, key("img"), dv))
	require.Equal(t, "n1", dv.Annotations[virtkit.DataVolumeImportNodeAnnotation])

	n1 := &virtkit.Node{}
	require.NoError(t, e.st.Get(e.ctx, store.Key{Name: "n1"}, n1))
	n1.Status.Conditions[0].Status = virtkit.ConditionFalse
	require.NoError(t, e.st.UpdateStatus(e.ctx, n1))
	_, err = r.Reconcile(e.ctx, req)
	require.NoError(t, err)
	require.NoError(t, e.st.Get(e.ctx, key("img"), dv))
	assert.Equal(t, virtkit.DataVolumeImportScheduled, dv.Status.Phase)
	assert.Equal(t, "n2", dv.Annotations[virtkit.DataVolumeImportNodeAnnotation])
}
