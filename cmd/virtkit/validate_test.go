package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	validatecmd "github.com/virtkit/virtkit/cmd/virtkit/internal/validate"
)

const goodVMI = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: good, namespace: ns}
spec:
  domain:
    devices: {}
    memory: {guest: 64Mi}
`

const badVM = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: bad, namespace: ns}
spec:
  runStrategy: Always
  template:
    spec:
      domain:
        devices:
          disks: [{name: ghost}]
        memory: {guest: 64Mi}
`

const unknownField = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: vsock}
spec:
  domain:
    devices:
      autoattachVSOCK: true
`

func runValidate(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := newValidateCmd()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true // as the root command sets them
	var out, stderr bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&stderr)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestValidateCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	good := write("a-good.yaml", goodVMI)
	write("b-bad.yml", badVM)
	write("c-gpu.json.yaml", unknownField)
	write("ignored.txt", "not a manifest")

	out, err := runValidate(t, "", "-f", good)
	require.NoError(t, err)
	assert.Equal(t, "OK VirtualMachineInstance ns/good\n", out)

	out, err = runValidate(t, "", "-f", dir)
	var ex exitError
	require.ErrorAs(t, err, &ex)
	assert.Equal(t, 1, ex.code)
	assert.Equal(t, strings.Join([]string{
		"OK VirtualMachineInstance ns/good",
		`VirtualMachine ns/bad: spec.template.spec.domain.devices.disks[0].name: NotFound: Not found: "ghost"`,
		"VirtualMachineInstance vsock: spec.domain.devices.autoattachVSOCK: NotSupported: not supported: a KubeVirt field for VSOCK, which virtkit does not model: it needs vhost-vsock on the host and a CID allocator across nodes, which virtkit does not have",
	}, "\n")+"\n", out)

	out, err = runValidate(t, goodVMI+"---\n"+badVM, "-f", "-", "--output", "json")
	require.ErrorAs(t, err, &ex)
	var findings []validatecmd.Finding
	require.NoError(t, json.Unmarshal([]byte(out), &findings))
	require.Len(t, findings, 2)
	assert.True(t, findings[0].OK)
	assert.Equal(t, "-", findings[0].File)
	assert.False(t, findings[1].OK)
	assert.Equal(t, "spec.template.spec.domain.devices.disks[0].name", findings[1].Field)
	assert.Equal(t, "NotFound", findings[1].Type)

	out, err = runValidate(t, "", "-f", filepath.Join(dir, "missing.yaml"))
	require.ErrorAs(t, err, &ex)
	assert.Contains(t, out, "InvalidManifest")

	_, err = runValidate(t, "")
	require.Error(t, err)
	_, err = runValidate(t, "", "-f", good, "-o", "xml")
	require.Error(t, err)
}

func TestValidateCommandCorpus(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "kubevirt-examples")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("conformance corpus %s not found: it is vendored in the repository: %v", dir, err)
	}
	out, err := runValidate(t, "", "-f", dir)
	var ex exitError
	require.ErrorAs(t, err, &ex, "vmi-usb.yaml and vmi-host-disk.yaml need feature gates KubeVirt's default configuration leaves off")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	assert.Len(t, lines, 26)
	assert.Equal(t, 24, strings.Count(out, "OK "))
	assert.Contains(t, out, "VirtualMachineInstance vmi-usb: spec.domain.devices.hostDevices: Invalid: Invalid value: 1: Host Devices feature gate is not enabled in kubevirt-config")
	assert.Contains(t, out, "VirtualMachineInstance vmi-host-disk: spec.volumes[0]: Invalid: Invalid value: \"host-disk\": HostDisk feature gate is not enabled")
}
