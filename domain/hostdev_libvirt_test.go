//go:build libvirt && cgo

package domain_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor/libvirt"
)

// libvirt's test driver parses and keeps the <hostdev> elements of a
// domain with passed-through GPUs and host devices.
func TestHostDevicesDefineOnLibvirtTestDriver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := libvirt.New(ctx, libvirt.Options{URI: "test:///default"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })

	vmi := decodeVMI(t, "testdata/vmi/hostdevices.yaml")
	dom, err := domain.Build(vmi, goldenOptions["hostdevices"])
	require.NoError(t, err)
	doc, err := dom.Marshal()
	require.NoError(t, err)
	id, err := h.Define(ctx, doc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Undefine(context.Background(), id.Name) })
	got, err := h.XML(ctx, id.Name)
	require.NoError(t, err)
	for _, want := range []string{"0x65", "6f0a8a53-4f4a-4c8b-9d58-2a3c1e7e9b10", "0x3d", "type='mdev'", "managed='yes'"} {
		require.Contains(t, got, want)
	}
}
