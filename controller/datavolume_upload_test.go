package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// An upload DataVolume is bound on a node and waits there in UploadReady
// (CDI's upload server pod running) instead of being scheduled for an
// import.
func TestDataVolumeReconcilerUploadReady(t *testing.T) {
	e := newEnv(t, 0)
	r, err := NewDataVolumeReconciler(ReconcilerOptions{Store: e.st, Clock: e.clock})
	require.NoError(t, err)
	e.addNode("n1", "4", "8Gi")
	require.NoError(t, e.st.Create(e.ctx, testDataVolume("up", virtkit.DataVolumeImportSource{Upload: &virtkit.DataVolumeSourceUpload{}})))
	_, err = r.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "up"})
	require.NoError(t, err)
	dv := &virtkit.DataVolume{}
	require.NoError(t, e.st.Get(e.ctx, key("up"), dv))
	assert.Equal(t, virtkit.DataVolumeUploadReady, dv.Status.Phase)
	assert.Equal(t, "n1", dv.Annotations[virtkit.DataVolumeImportNodeAnnotation])
	assert.Equal(t, virtkit.ConditionTrue, dv.Status.Condition(virtkit.DataVolumeBound).Status)
	running := dv.Status.Condition(virtkit.DataVolumeRunning)
	require.NotNil(t, running)
	assert.Equal(t, virtkit.ConditionTrue, running.Status)
	assert.Contains(t, running.Message, "upload ready")

	// Its node goes: the upload waits on another one.
	require.NoError(t, e.st.Delete(e.ctx, &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, store.DeleteOptions{}))
	e.addNode("n2", "4", "8Gi")
	for range 2 {
		_, err = r.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "up"})
		require.NoError(t, err)
	}
	require.NoError(t, e.st.Get(e.ctx, key("up"), dv))
	assert.Equal(t, virtkit.DataVolumeUploadReady, dv.Status.Phase)
	assert.Equal(t, "n2", dv.Annotations[virtkit.DataVolumeImportNodeAnnotation])
}
