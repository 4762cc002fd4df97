package storage

import "path/filepath"

// VolumeSnapshotPath is where the volume snapshot named snapshot of the
// volume whose disk file is volumePath lives: in a .snapshots directory
// next to the volume (volume names are DNS names, which never start with
// a dot, so the directory cannot clash with a volume).
func VolumeSnapshotPath(volumePath, snapshot string) string {
	return filepath.Join(filepath.Dir(volumePath), ".snapshots", Sanitize(snapshot)+".img")
}
