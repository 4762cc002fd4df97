package cdi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/virtkit/virtkit/cdi/storage"
)

// InUseCopier copies the disk of a volume that a running guest may be
// writing, as the disk was at one moment (a hypervisor's point-in-time
// copy, hypervisor.DiskBackuper on libvirt). It is what makes
// FileSnapshots' snapshot of a running VM's volume the equivalent of a CSI
// volume snapshot: consistent with the guest's filesystems when they are
// frozen through the guest agent, crash-consistent when they are not.
type InUseCopier interface {
	// CopyInUse copies the volume's disk file src to the new file dst
	// when a running guest uses the volume, and reports handled; when
	// none does (nothing writes the file) it returns handled false and
	// the caller copies the file itself.
	CopyInUse(ctx context.Context, volume storage.SnapshotVolume, src, dst string) (handled bool, err error)
}

// snapshotInUse takes the snapshot dst of the volume at src through
// s.InUse. The copy goes to a temporary file beside the volume (its
// directory is one the hypervisor can reach, as it reaches the volume),
// is made sparse, and is renamed into place complete. handled is false
// when no running guest uses the volume.
func (s *FileSnapshots) snapshotInUse(ctx context.Context, volume storage.SnapshotVolume, src, dst string) (handled bool, err error) {
	// Volume names never start with a dot: no clash with a volume.
	tmp := filepath.Join(filepath.Dir(src), "."+filepath.Base(dst)+".inuse-tmp")
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	handled, err = s.InUse.CopyInUse(ctx, volume, src, tmp)
	if !handled || err != nil {
		_ = os.Remove(tmp)
		if err != nil {
			return handled, fmt.Errorf("copy of the in-use volume %s/%s: %w", volume.Namespace, volume.Name, err)
		}
		return false, nil
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.Remove(tmp)
		}
	}()
	if _, err := storage.Sparsify(ctx, tmp); err != nil {
		return true, fmt.Errorf("snapshot of volume %s/%s: %w", volume.Namespace, volume.Name, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		return true, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return true, err
	}
	ok = true
	return true, nil
}
