package controller

import (
	"context"
	"errors"

	"github.com/virtkit/virtkit/cdi/export"
)

// ErrExport wraps the export reconciler's failures a user can act on.
var ErrExport = errors.New("export")

// ExportVolume is one volume an export server serves: its name in the
// URLs and the file holding its raw image.
type ExportVolume = export.Volume

// ExportEndpoint is where an export server serves an export.
type ExportEndpoint = export.Endpoint

// ExportServers runs the export servers (KubeVirt's exporter pods): one
// per export, serving its volumes to whoever presents its token.
// *export.Manager implements it.
type ExportServers interface {
	// Ensure makes sure a server serves export namespace/name with
	// token and volumes (replacing one serving anything else) and
	// returns its endpoint.
	Ensure(ctx context.Context, namespace, name string, token []byte, volumes []ExportVolume) (ExportEndpoint, error)
	// Stop stops the server of export namespace/name; none running is
	// not an error.
	Stop(ctx context.Context, namespace, name string) error
	// Running reports whether a server serves export namespace/name.
	Running(namespace, name string) bool
}

// ExportVolumeLocator finds the disk files of volumes and of volume
// snapshots (cdi.FileExportVolumes over the storage classes).
type ExportVolumeLocator interface {
	// VolumePath is the disk file of volume v.
	VolumePath(ctx context.Context, v SnapshotVolume) (string, error)
	// SnapshotPath is the disk file of the snapshot name of volume v.
	SnapshotPath(ctx context.Context, v SnapshotVolume, name string) (string, error)
}
