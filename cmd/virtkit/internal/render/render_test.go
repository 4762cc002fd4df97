package render

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const renderManifest = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: first
  namespace: ns
spec:
  domain:
    memory:
      guest: 128Mi
    devices: {}
---
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstanceMigration
metadata:
  name: mig
  namespace: ns
spec:
  vmiName: first
---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: second
  namespace: ns
spec:
  runStrategy: Halted
  template:
    spec:
      domain:
        memory:
          guest: 256Mi
        devices: {}
---
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstanceReplicaSet
metadata:
  name: third
  namespace: ns
spec:
  replicas: 2
  selector:
    matchLabels:
      app: third
  template:
    metadata:
      labels:
        app: third
    spec:
      domain:
        memory:
          guest: 64Mi
        devices: {}
`

// runRender runs render as the command does: Validate, then Run.
func runRender(in io.Reader, out, errOut io.Writer, o Options) error {
	o.In, o.Out, o.ErrOut = in, out, errOut
	if err := o.Validate(); err != nil {
		return err
	}
	return o.Run(context.Background())
}

func writeManifest(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

func TestRender(t *testing.T) {
	var out, errOut bytes.Buffer
	err := runRender(nil, &out, &errOut, Options{File: writeManifest(t, renderManifest), Accel: "kvm"})
	require.NoError(t, err, errOut.String())
	doc := out.String()
	assert.Equal(t, 3, strings.Count(doc, `<domain type="kvm">`))
	first := strings.Index(doc, "<name>ns_first</name>")
	second := strings.Index(doc, "<name>ns_second</name>")
	third := strings.Index(doc, "<name>ns_third</name>")
	assert.True(t, first >= 0 && first < second && second < third, "documents in file order")
	assert.Contains(t, errOut.String(), "VirtualMachineInstanceMigration ns/mig: skipped")

	// Same input, same bytes.
	var again bytes.Buffer
	require.NoError(t, runRender(nil, &again, &bytes.Buffer{}, Options{File: writeManifest(t, renderManifest), Accel: "kvm"}))
	assert.Equal(t, doc, again.String())

	// stdin
	var fromStdin bytes.Buffer
	require.NoError(t, runRender(strings.NewReader(renderManifest), &fromStdin, &bytes.Buffer{}, Options{File: "-", Accel: "kvm"}))
	assert.Equal(t, doc, fromStdin.String())
}

func TestRenderInvalid(t *testing.T) {
	for _, tc := range []struct {
		name, manifest, want string
	}{
		{"validation", strings.Replace(renderManifest, "guest: 128Mi", "guest: 128Mi\n    cpu:\n      model: \"\"\n      dedicatedCpuPlacement: true\n      isolateEmulatorThread: true\n    firmware:\n      bootloader:\n        bios: {}\n        efi: {}", 1), "spec.domain.firmware.bootloader"},
		{"unknown field", strings.Replace(renderManifest, "devices: {}", "devices:\n      autoattachVSOCK: true", 1), "spec.domain.devices.autoattachVSOCK"},
		{"builder", strings.Replace(renderManifest, "devices: {}", "devices:\n      interfaces:\n      - name: x\n        sriov: {}\n  networks:\n  - name: x\n    multus:\n      networkName: vf", 1), "spec.domain.devices.interfaces[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := runRender(nil, &out, &errOut, Options{File: writeManifest(t, tc.manifest), Accel: "qemu"})
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, errOut.String(), tc.want)
			assert.Empty(t, out.String(), "nothing is printed for invalid input")
		})
	}
}

func TestRenderFlags(t *testing.T) {
	for _, o := range []Options{
		{Accel: "xen"},
		{Accel: "qemu", Networks: []string{"nope"}},
		{Accel: "qemu", Networks: []string{"a=weird:x"}},
		{Accel: "qemu", DedicatedCPUs: "3-1"},
	} {
		assert.Error(t, o.Validate(), "%+v", o)
	}
	o := &Options{Accel: "qemu", Networks: []string{"ns/vf=hostdev:0000:3b:02.1", "br=bridge:br0"}, DedicatedCPUs: "2-4,7"}
	opts, err := o.options()
	require.NoError(t, err)
	assert.Equal(t, []uint{2, 3, 4, 7}, opts.DedicatedCPUs)
}
