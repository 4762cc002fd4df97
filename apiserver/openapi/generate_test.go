package openapi_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGeneratedUpToDate regenerates the definitions and the API rule
// report with hack/openapi-gen.sh into a temporary directory and fails
// when zz_generated.openapi.go or violation_exceptions.list differ from
// it: a type changed without regenerating, or the report changed (a new
// violation, which must be fixed, or a fixed one, which must be dropped
// from the list). It skips when the generator cannot be built (no Go
// toolchain or module cache), unless VIRTKIT_STRICT is set, as in CI.
func TestGeneratedUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs openapi-gen over the module (about 10 s); not in -short")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		skipOrFail(t, "bash not found: %v", err)
	}
	out := t.TempDir()
	cmd := exec.CommandContext(t.Context(), bash, filepath.Join("..", "..", "hack", "openapi-gen.sh"), out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	err = cmd.Run()
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) && exit.ExitCode() == 2 {
		skipOrFail(t, "openapi-gen cannot be built here:\n%s", stderr.String())
	}
	require.NoError(t, err, "hack/openapi-gen.sh:\n%s", stderr.String())

	for _, f := range []struct{ fresh, committed string }{
		{"zz_generated.openapi.go", "zz_generated.openapi.go"},
		{"violations.list", "violation_exceptions.list"},
	} {
		want, err := os.ReadFile(filepath.Join(out, f.fresh))
		require.NoError(t, err)
		got, err := os.ReadFile(f.committed)
		require.NoError(t, err)
		if !assert.True(t, bytes.Equal(want, got), "%s is stale: run hack/openapi-gen.sh", f.committed) {
			t.Logf("first difference:\n%s", firstDiff(string(want), string(got)))
		}
	}
}

func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("VIRTKIT_STRICT") != "" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// firstDiff shows the first line where want and got differ.
func firstDiff(want, got string) string {
	wl, gl := bytes.Split([]byte(want), []byte("\n")), bytes.Split([]byte(got), []byte("\n"))
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g []byte
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if !bytes.Equal(w, g) {
			return "line " + strconv.Itoa(i+1) + ":\n  generated: " + string(w) + "\n  committed: " + string(g)
		}
	}
	return "(none)"
}
