package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// virtkit ssh refuses contradictory flags before it reaches the API.
func TestSSHFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"user twice", []string{"ssh", "-l", "alice", "bob@vmi/vm-0"}, `--username "alice" and "bob"@ in the target differ`},
		{"command twice", []string{"ssh", "-c", "id", "vmi/vm-0", "--", "uname"}, "--command and a COMMAND after -- are exclusive"},
		{"bad port", []string{"ssh", "-p", "0", "vmi/vm-0"}, "--port: 0 is not a port"},
		{"bad target", []string{"ssh", "pod/vm-0"}, `want vmi/NAME or vm/NAME`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newRootCmd()
			var out, errOut bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&errOut)
			cmd.SetArgs(append(tc.args, "--kubeconfig", "/nonexistent/kubeconfig"))
			require.Error(t, cmd.Execute())
			assert.Contains(t, errOut.String(), tc.want)
		})
	}
}
