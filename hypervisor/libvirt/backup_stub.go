//go:build !cgo || !(libvirt || libvirt_dlopen)

package libvirt

import (
	"context"

	"github.com/virtkit/virtkit/hypervisor"
)

var _ hypervisor.DiskBackuper = (*Hypervisor)(nil)

// BackupDisk fails: see [New].
func (h *Hypervisor) BackupDisk(context.Context, string, string, string) error {
	return errNoCgo("BackupDisk")
}
