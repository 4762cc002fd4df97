package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
)

// An upload DataVolume is bound on a node and waits there in UploadReady
// (CDI's upload server pod running) instead of being scheduled for an
// import.
func TestDataVolumeReconcilerUploadReady(t *testing.T) {
	e := newEnv(t, 0)
	r, err := NewDataVolumeReconciler(ReconcilerOptions{Store: e.st, Now: e.clock.Now})
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
}
