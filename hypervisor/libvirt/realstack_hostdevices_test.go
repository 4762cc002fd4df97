//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package libvirt_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
)

// TestRealHostDevices lists a real host's PCI devices through libvirt's
// node devices: every host has some, each with an address and IDs.
func TestRealHostDevices(t *testing.T) {
	h := openReal(t, libvirttest.SourceURI)
	devs, err := h.HostDevices(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, devs.PCI)
	addr := regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)
	id := regexp.MustCompile(`^[0-9a-f]{4}$`)
	for _, d := range devs.PCI {
		assert.Regexp(t, addr, d.Address)
		assert.Regexp(t, id, d.VendorID)
		assert.Regexp(t, id, d.DeviceID)
	}
}
