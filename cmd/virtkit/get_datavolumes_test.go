package main

import (
	"bytes"
	"testing"
	"time"

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
	st := store.NewMemory()
	assert.Equal(t, "datavolume/scratch created\n", applyString(t, st, blankDV))
	dv := &virtkit.DataVolume{}
	require.NoError(t, st.Get(t.Context(), store.Key{Namespace: "default", Name: "scratch"}, dv))
	dv.Status.Phase, dv.Status.Progress, dv.Status.RestartCount = virtkit.DataVolumeImportInProgress, virtkit.FormatDataVolumeProgress(45.2), 2
	require.NoError(t, st.UpdateStatus(t.Context(), dv))

	for _, alias := range []string{"dv", "datavolumes", "DataVolume"} {
		r, err := lookupResource(alias)
		require.NoError(t, err, alias)
		var out bytes.Buffer
		require.NoError(t, runGet(t.Context(), st, &out, r, "", namespaceFlags{}, "", dv.CreationTimestamp.Add(90*time.Second)))
		assert.Regexp(t, `(?m)^NAMESPACE\s+NAME\s+PHASE\s+PROGRESS\s+RESTARTS\s+AGE\n`+
			`default\s+scratch\s+ImportInProgress\s+45\.20%\s+2\s+90s\n$`, out.String(), alias)
	}
}
