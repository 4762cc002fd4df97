package cdi

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/virtkit/virtkit/cdi/storage"
)

// FileExportVolumes locates the disk files VirtualMachineExports serve:
// a DataVolume's file on its storage class (and node, for a node-local
// class), and a volume snapshot's file where FileSnapshots keeps it. It
// implements controller.ExportVolumeLocator for a process that sees the
// storage classes' directories.
type FileExportVolumes struct {
	// Classes are the storage classes the volumes live on.
	Classes storage.Classes
}

// VolumePath implements controller.ExportVolumeLocator.
func (f *FileExportVolumes) VolumePath(_ context.Context, v storage.SnapshotVolume) (string, error) {
	s := FileSnapshots{Classes: f.Classes}
	p, err := s.volumePath(v)
	if err != nil {
		return "", err
	}
	return p, present(p, v, ErrVolumeNotFound)
}

// SnapshotPath implements controller.ExportVolumeLocator.
func (f *FileExportVolumes) SnapshotPath(_ context.Context, v storage.SnapshotVolume, name string) (string, error) {
	s := FileSnapshots{Classes: f.Classes}
	p, err := s.snapshotPath(v, name)
	if err != nil {
		return "", err
	}
	return p, present(p, v, ErrVolumeSnapshotNotFound)
}

func present(p string, v storage.SnapshotVolume, notFound error) error {
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("volume %s/%s: %w: %s is not on this host", v.Namespace, v.Name, notFound, p)
	} else if err != nil {
		return err
	}
	return nil
}
