package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const itVM = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: %s, namespace: ns}
spec:
  runStrategy: Always
  instancetype: {name: %s%s}
  preference: {name: %s%s}
  template:
    spec:
      domain:
%s        devices:
          disks: [{name: root}]
      volumes:
      - name: root
        containerDisk: {image: quay.io/containerdisks/fedora:41}
`

func itVMManifest(name, it, itKind, pref, prefKind, domain string) string {
	if itKind != "" {
		itKind = ", kind: " + itKind
	}
	if prefKind != "" {
		prefKind = ", kind: " + prefKind
	}
	return fmt.Sprintf(itVM, name, it, itKind, pref, prefKind, domain)
}

const customIT = `apiVersion: instancetype.kubevirt.io/v1beta1
kind: VirtualMachineInstancetype
metadata: {name: tiny, namespace: ns}
spec:
  cpu: {guest: 1}
  memory: {guest: 256Mi}
`

// validate resolves instance types and preferences from the files and
// KubeVirt's common catalogue, and reports conflicts, unmet requirements
// and missing ones at their field paths.
func TestValidateInstancetypes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	itFile := write("a-tiny.yaml", customIT)
	ok := write("ok.yaml", itVMManifest("ok", "u1.small", "", "fedora", "", ""))
	conflict := write("conflict.yaml", itVMManifest("conflict", "u1.small", "", "fedora", "", "        cpu: {sockets: 2}\n"))
	unmet := write("unmet.yaml", itVMManifest("unmet", "tiny", "VirtualMachineInstancetype", "fedora", "", ""))
	missing := write("missing.yaml", itVMManifest("missing", "u9.huge", "", "fedora", "", ""))

	out, err := runValidate(t, "", "-f", ok)
	require.NoError(t, err, out)
	assert.Equal(t, "OK VirtualMachine ns/ok\n", out)

	out, err = runValidate(t, "", "-f", itFile, "-f", conflict, "-f", unmet, "-f", missing)
	var ex exitError
	require.ErrorAs(t, err, &ex)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	assert.Equal(t, "OK VirtualMachineInstancetype ns/tiny", lines[0])
	assert.True(t, strings.HasPrefix(lines[1], "VirtualMachine ns/conflict: spec.template.spec.domain.cpu.sockets: Invalid: "), lines[1])
	assert.True(t, strings.HasPrefix(lines[2], "VirtualMachine ns/unmet: spec.instancetype: Invalid: "), lines[2])
	assert.Contains(t, lines[2], "preference requires 2Gi")
	assert.True(t, strings.HasPrefix(lines[3], "VirtualMachine ns/missing: spec.instancetype.name: NotFound: "), lines[3])

	// Without the instance type's file, tiny is not found; without the
	// catalogue, neither is u1.small.
	out, _ = runValidate(t, "", "-f", unmet)
	assert.Contains(t, out, "VirtualMachine ns/unmet: spec.instancetype.name: NotFound")
	out, _ = runValidate(t, "", "-f", ok, "--no-common-instancetypes")
	assert.Contains(t, out, "VirtualMachine ns/ok: spec.instancetype.name: NotFound")

	// A preference-only VM gives its vCPUs in the preferred topology's
	// field: fedora prefers sockets and requires one vCPU, so cores alone
	// count for nothing.
	prefOnly := strings.Replace(itVMManifest("preferenceonly", "x", "", "fedora", "", "        cpu: {cores: 2}\n        memory: {guest: 2Gi}\n"), "  instancetype: {name: x}\n", "", 1)
	out, _ = runValidate(t, "", "-f", write("prefonly.yaml", prefOnly))
	assert.Contains(t, out, "VirtualMachine ns/preferenceonly: spec.template.spec.domain.cpu.sockets: Invalid")
}
