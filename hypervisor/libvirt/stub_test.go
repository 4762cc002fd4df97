//go:build !cgo || !(libvirt || libvirt_dlopen)

package libvirt_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/libvirt"
)

func TestStubNotSupported(t *testing.T) {
	_, err := libvirt.New(context.Background(), libvirt.Options{})
	require.ErrorIs(t, err, hypervisor.ErrNotSupported)
	require.Contains(t, err.Error(), "qemu:///system")
	require.Contains(t, err.Error(), "cgo")

	var h libvirt.Hypervisor
	_, err = h.StartMigration(context.Background(), "vm", hypervisor.MigrationParams{})
	require.ErrorIs(t, err, hypervisor.ErrNotSupported)
	require.Contains(t, err.Error(), "StartMigration")
}
