package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// DiskFixture writes dir/name.raw, size bytes of zeros with marker at
// offset at, and the same disk as dir/name.qcow2 (made by qemu-img), and
// returns the raw disk's bytes. It skips the test when qemu-img is missing.
func DiskFixture(t testing.TB, dir, name string, size, at int, marker string) []byte {
	t.Helper()
	if _, err := exec.LookPath("qemu-img"); err != nil {
		Unavailable(t, "qemu-img not installed (hack/realstack/install.sh installs qemu-utils)")
	}
	raw := make([]byte, size)
	copy(raw[at:], marker)
	rawPath := filepath.Join(dir, name+".raw")
	if err := os.WriteFile(rawPath, raw, 0o644); err != nil {
		t.Fatalf("disk fixture: %v", err)
	}
	out, err := exec.Command("qemu-img", "convert", "-f", "raw", "-O", "qcow2", rawPath, filepath.Join(dir, name+".qcow2")).CombinedOutput()
	if err != nil {
		t.Fatalf("disk fixture: qemu-img convert: %v: %s", err, out)
	}
	return raw
}
