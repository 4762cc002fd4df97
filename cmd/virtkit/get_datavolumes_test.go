package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
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
	st := apiMemory(t)
	c := storeCLI(t, st)
	assert.Equal(t, "datavolume.cdi.kubevirt.io/scratch created\n", applyString(t, c, blankDV))
	dv := &virtkit.DataVolume{}
	require.NoError(t, st.Get(t.Context(), store.Key{Namespace: "default", Name: "scratch"}, dv))
	dv.Status.Phase, dv.Status.Progress, dv.Status.RestartCount = virtkit.DataVolumeImportInProgress, virtkit.FormatDataVolumeProgress(45.2), 2
	require.NoError(t, st.UpdateStatus(t.Context(), dv))

	for _, alias := range []string{"dv", "datavolumes", "DataVolume"} {
		out := c.ok("get", alias, "-A")
		assert.Regexp(t, `(?m)^NAMESPACE\s+NAME\s+PHASE\s+PROGRESS\s+RESTARTS\s+AGE\n`+
			`default\s+scratch\s+ImportInProgress\s+45\.20%\s+2\s+\d+s\n$`, out, alias)
	}
}
