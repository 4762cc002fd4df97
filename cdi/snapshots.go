package cdi

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/virtkit/virtkit/cdi/storage"
)

// Errors of FileSnapshots.
var (
	// ErrVolumeSnapshotNotFound: a restore names a volume snapshot that
	// does not exist.
	ErrVolumeSnapshotNotFound = errors.New("volume snapshot not found")
	// ErrVolumeNotFound: the volume's disk file is not on this host.
	ErrVolumeNotFound = errors.New("volume disk not found")
)

// FileSnapshots keeps volume snapshots of file-backed DataVolumes as
// files next to the volumes: a snapshot of <class dir>/dv/<ns>/<name>.img
// is <class dir>/dv/<ns>/.snapshots/<snapshot>.img on the same storage
// class and node. Taking one is a reflink where the filesystem has them,
// else a hole-preserving copy (storage.CopyFile); the DataVolumes virtkit
// imports are raw images, so the copy is the whole snapshot. A volume a
// running guest uses is copied through InUse instead, as of one moment
// (a plain copy of a file QEMU writes is torn). It implements
// controller.VolumeSnapshotter for a process that sees the storage
// classes' directories: the embedded cluster, or a shared class.
type FileSnapshots struct {
	// Classes are the storage classes the volumes live on.
	Classes storage.Classes
	// InUse copies volumes that running guests use; nil copies every
	// volume as a file, right only where nothing else writes the files
	// while they are copied (a simulated hypervisor, stopped VMs).
	InUse InUseCopier
}

// Snapshot implements controller.VolumeSnapshotter.
func (s *FileSnapshots) Snapshot(ctx context.Context, volume storage.SnapshotVolume, name string) error {
	src, err := s.volumePath(volume)
	if err != nil {
		return err
	}
	if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("volume %s/%s: %w: %s is not on this host (snapshots of a node-local volume on another host are not supported)",
			volume.Namespace, volume.Name, ErrVolumeNotFound, src)
	}
	dst, err := s.snapshotPath(volume, name)
	if err != nil {
		return err
	}
	if s.InUse != nil {
		handled, err := s.snapshotInUse(ctx, volume, src, dst)
		if err != nil {
			return fmt.Errorf("snapshot %s: %w", name, err)
		}
		if handled {
			return nil
		}
	}
	if err := storage.CopyFile(ctx, src, dst); err != nil {
		return fmt.Errorf("snapshot %s of volume %s/%s: %w", name, volume.Namespace, volume.Name, err)
	}
	return nil
}

// Restore implements controller.VolumeSnapshotter.
func (s *FileSnapshots) Restore(ctx context.Context, name string, target storage.SnapshotVolume) error {
	src, err := s.snapshotPath(target, name)
	if err != nil {
		return err
	}
	if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("restore %s/%s: %w: %s", target.Namespace, target.Name, ErrVolumeSnapshotNotFound, name)
	}
	dst, err := s.volumePath(target)
	if err != nil {
		return err
	}
	if err := storage.CopyFile(ctx, src, dst); err != nil {
		return fmt.Errorf("restore %s/%s from %s: %w", target.Namespace, target.Name, name, err)
	}
	return nil
}

// Delete implements controller.VolumeSnapshotter.
func (s *FileSnapshots) Delete(_ context.Context, name string, volume storage.SnapshotVolume) error {
	p, err := s.snapshotPath(volume, name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func (s *FileSnapshots) volumePath(v storage.SnapshotVolume) (string, error) {
	class, err := s.Classes.Get(v.StorageClass)
	if err != nil {
		return "", fmt.Errorf("volume %s/%s: %w", v.Namespace, v.Name, err)
	}
	if !class.Shared() && v.Node == "" {
		return "", fmt.Errorf("volume %s/%s: storage class %s is node-local and the volume names no node", v.Namespace, v.Name, class.Name())
	}
	return class.Path(v.Node, v.Namespace, v.Name), nil
}

// snapshotPath is where the snapshot name of volumes like v lives
// (storage.VolumeSnapshotPath).
func (s *FileSnapshots) snapshotPath(v storage.SnapshotVolume, name string) (string, error) {
	vp, err := s.volumePath(v)
	if err != nil {
		return "", err
	}
	return storage.VolumeSnapshotPath(vp, name), nil
}
