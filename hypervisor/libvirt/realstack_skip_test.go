//go:build !realstack

package libvirt_test

import "testing"

// TestRealStackTier points at the real-stack tests a plain go test does not
// build: they need root, two libvirtd instances and the tiny guest.
func TestRealStackTier(t *testing.T) {
	t.Skip("real-stack tier (real libvirtd + QEMU guest + live migration) not built; run as root: " +
		"hack/realstack/install.sh && hack/realstack/build-guest.sh && hack/realstack/libvirtd.sh start && " +
		"go test -tags realstack,libvirt ./hypervisor/libvirt/")
}
