package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// virtkit render: invalid input prints its problems on stderr and ends
// with status 1 (package render does the rendering); a bad flag is an
// ordinary error.
func TestRenderCommandExitStatus(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte(strings.Replace(goodVMI, "devices: {}", "devices:\n      autoattachVSOCK: true", 1)), 0o644))
	cmd := newRootCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"render", "-f", bad})
	err := cmd.ExecuteContext(t.Context())
	var ex exitError
	require.True(t, asExit(err, &ex), "err = %v", err)
	assert.Equal(t, 1, ex.code)
	assert.Contains(t, errOut.String(), "autoattachVSOCK")
	assert.Empty(t, out.String())

	cmd = newRootCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"render", "-f", bad, "--accel", "xen"})
	err = cmd.ExecuteContext(t.Context())
	require.ErrorContains(t, err, `--accel "xen": must be qemu or kvm`)
	assert.False(t, asExit(err, &ex))
}
