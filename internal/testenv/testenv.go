package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// Strict reports whether missing external pieces must fail tests instead of
// skipping them (VIRTKIT_STRICT=1, set by hack/test.sh).
func Strict() bool { return os.Getenv("VIRTKIT_STRICT") == "1" }

// LookTool returns the path of an external program, skipping the test when it
// is absent (failing under Strict). hint says which package provides it.
func LookTool(t testing.TB, name, hint string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	Unavailable(t, name+" not found ("+hint+"); run hack/test.sh, which installs it")
	return ""
}

// Unavailable skips the test with why, or fails it under Strict.
func Unavailable(t testing.TB, why string) {
	t.Helper()
	if Strict() {
		t.Fatalf("required by the full test suite (VIRTKIT_STRICT=1): %s", why)
	}
	t.Skip(why)
}
