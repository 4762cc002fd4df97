//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package libvirt_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
)

// TestRealBackupDisk boots the tiny guest with a second, raw disk holding
// random data and a hole, copies that disk with BackupDisk while the guest
// runs, and checks the copy byte for byte; a second backup onto the same
// target, a disk the domain does not have and a shut-off domain fail with
// the documented errors.
func TestRealBackupDisk(t *testing.T) {
	g := libvirttest.RequireStack(t)
	h := openReal(t, libvirttest.SourceURI)
	dir, uid, gid := libvirttest.QEMUWorkDir(t, "realsnap-backup-")
	disk := filepath.Join(dir, "data.img")
	data := make([]byte, 8<<20)
	_, _ = rand.Read(data[:3<<20])
	_, _ = rand.Read(data[6<<20:])
	require.NoError(t, os.WriteFile(disk, data, 0o600))
	require.NoError(t, os.Chown(disk, uid, gid))

	const name = "realsnap-backup"
	xml := g.DomainXML(name, libvirttest.GuestOptions{})
	xml = strings.Replace(xml, "</devices>", "<disk type='file' device='disk'><driver name='qemu' type='raw'/><source file='"+disk+
		"'/><target dev='vdb' bus='virtio'/></disk>\n  </devices>", 1)
	removeEverywhere(name, h)
	t.Cleanup(func() { removeEverywhere(name, h) })
	ctx, cancel := context.WithTimeout(context.Background(), realBoot+2*time.Minute)
	defer cancel()
	_, err := h.Define(ctx, xml)
	require.NoError(t, err)
	require.NoError(t, h.Start(ctx, name, hypervisor.StartOptions{}))

	target := filepath.Join(dir, "copy.img")
	start := time.Now()
	require.NoError(t, h.BackupDisk(ctx, name, disk, target))
	t.Logf("backup of an 8 MiB disk: %s", time.Since(start).Round(time.Millisecond))
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data, got), "the copy is the disk (%d bytes, want %d)", len(got), len(data))

	err = h.BackupDisk(ctx, name, disk, target)
	assert.Error(t, err, "libvirt refuses an existing target")
	err = h.BackupDisk(ctx, name, filepath.Join(dir, "other.img"), filepath.Join(dir, "other-copy.img"))
	assert.ErrorIs(t, err, hypervisor.ErrInvalidArgument)
	err = h.BackupDisk(ctx, name, "relative.img", target)
	assert.ErrorIs(t, err, hypervisor.ErrInvalidArgument)

	require.NoError(t, h.Destroy(ctx, name))
	err = h.BackupDisk(ctx, name, disk, filepath.Join(dir, "late.img"))
	assert.ErrorIs(t, err, hypervisor.ErrInvalidState, "a shut-off domain: %v", err)
	_, statErr := os.Stat(filepath.Join(dir, "late.img"))
	assert.ErrorIs(t, statErr, os.ErrNotExist)
}
