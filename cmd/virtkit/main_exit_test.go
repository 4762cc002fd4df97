package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runAsVirtkitEnv makes the test binary run virtkit's main instead of the
// tests, so the process's exit status can be checked.
const runAsVirtkitEnv = "VIRTKIT_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runAsVirtkitEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// virtkitProcess runs virtkit's main in a child process.
func virtkitProcess(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
	cmd.Env = append(os.Environ(), runAsVirtkitEnv+"=1", "KUBECONFIG=")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), errOut.String(), ee.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), errOut.String(), 0
}

// The process exits 0 on success and 1 with kubectl's message on the
// server's errors, as kubectl does.
func TestProcessExitStatus(t *testing.T) {
	kc := startAPIController(t, "--nodes", "1", "--heartbeat-interval", "200ms")
	manifest := filepath.Join(t.TempDir(), "vm.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(apiVM), 0o644))
	out, errOut, code := virtkitProcess(t, "apply", "-f", manifest, "--kubeconfig", kc)
	require.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Equal(t, "virtualmachine.kubevirt.io/vm-api created\n", out)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "vm", "nope"}, "Error from server (NotFound): virtualmachines.kubevirt.io \"nope\" not found\n"},
		{[]string{"delete", "vm", "nope"}, "Error from server (NotFound): virtualmachines.kubevirt.io \"nope\" not found\n"},
		{[]string{"describe", "vm", "nope"}, "Error from server (NotFound): virtualmachines.kubevirt.io \"nope\" not found\n"},
		{[]string{"stop", "nope"}, "Error from server (NotFound): virtualmachines.subresources.kubevirt.io \"nope\" not found\n"},
	} {
		out, errOut, code := virtkitProcess(t, append(tc.args, "--kubeconfig", kc)...)
		assert.Equal(t, 1, code, "%v", tc.args)
		assert.Empty(t, out, "%v", tc.args)
		assert.Equal(t, tc.want, errOut, "%v", tc.args)
	}
	_, errOut, code = virtkitProcess(t, "get", "vms", "--kubeconfig", filepath.Join(t.TempDir(), "none"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "error: ")
}
