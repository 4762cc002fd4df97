package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube/kubetest"
	"github.com/virtkit/virtkit/store"
)

const blankDV = `apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata: {name: scratch}
spec:
  source:
    blank: {}
  storage:
    resources:
      requests:
        storage: 1Gi
`

func TestGetDataVolumes(t *testing.T) {
	st := kubetest.NewMemory(t)
	out, errOut, err := applyString(t, kubetest.Serve(t, st), blankDV)
	require.NoError(t, err, errOut)
	assert.Equal(t, "datavolume.cdi.kubevirt.io/scratch created\n", out)
	dv := &virtkit.DataVolume{}
	require.NoError(t, st.Get(t.Context(), store.Key{Namespace: "default", Name: "scratch"}, dv))
	dv.Status.Phase, dv.Status.Progress, dv.Status.RestartCount = virtkit.DataVolumeImportInProgress, virtkit.FormatDataVolumeProgress(45.2), 2
	require.NoError(t, st.UpdateStatus(t.Context(), dv))

	api := serveAt(t, st, dv.CreationTimestamp.Add(90*time.Second))
	for _, alias := range []string{"dv", "datavolumes", "DataVolume"} {
		var out bytes.Buffer
		require.NoError(t, runGet(t, api, &out, alias, "", namespaceFlags{allNamespaces: true}, ""))
		assert.Regexp(t, `(?m)^NAMESPACE\s+NAME\s+PHASE\s+PROGRESS\s+RESTARTS\s+AGE\n`+
			`default\s+scratch\s+ImportInProgress\s+45\.20%\s+2\s+90s\n$`, out.String(), alias)
	}
}
