package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const renderConfigManifest = `apiVersion: v1
kind: ConfigMap
metadata: {name: app-config, namespace: ns}
data: {k: v}
---
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: cfg, namespace: ns}
spec:
  domain:
    memory: {guest: 64Mi}
    devices:
      disks: [{name: app-config, disk: {bus: virtio}}]
  volumes:
  - {name: app-config, configMap: {name: app-config}}
`

// render resolves config volumes from the ConfigMaps of its manifest and
// names a missing one.
func TestRenderConfigVolumes(t *testing.T) {
	var out, errOut bytes.Buffer
	err := runRender(nil, &out, &errOut, Options{File: writeManifest(t, renderConfigManifest), Accel: "qemu"})
	require.NoError(t, err, errOut.String())
	assert.Contains(t, out.String(), `<source file="/var/lib/virtkit/vmis/ns_cfg/app-config.iso">`)
	assert.Empty(t, errOut.String(), "config objects are not reported as skipped")

	out.Reset()
	errOut.Reset()
	noCM := renderConfigManifest[strings.Index(renderConfigManifest, "---\n")+4:]
	err = runRender(nil, &out, &errOut, Options{File: writeManifest(t, noCM), Accel: "qemu"})
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, errOut.String(), "spec.volumes[0].configMap: configMap ns/app-config not found")
}
