//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package libvirt_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor/libvirt"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
)

// Both daemons run on this machine's CPU: the TCG domain capabilities name
// the same host model and the host capabilities give the same signature,
// so the migration controller lets a host-passthrough guest move A -> B.
func TestRealHostCPU(t *testing.T) {
	libvirttest.RequireStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got []string
	for _, uri := range []string{libvirttest.SourceURI, libvirttest.PeerURI} {
		h, err := libvirt.New(ctx, libvirt.Options{URI: uri, DomainType: "qemu"})
		require.NoError(t, err)
		t.Cleanup(func() { _ = h.Close() })
		cpu, err := h.HostCPU(ctx)
		require.NoError(t, err, uri)
		require.NotEmpty(t, cpu.HostModel, uri)
		require.NotEmpty(t, cpu.Signature, uri)
		require.Contains(t, cpu.UsableModels, "qemu64", uri)
		require.False(t, cpu.Modelled)
		got = append(got, cpu.HostModel+"/"+cpu.Signature)
	}
	require.Equal(t, got[0], got[1])
}
