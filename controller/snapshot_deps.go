package controller

import (
	"context"
	"errors"

	"github.com/virtkit/virtkit/cdi/storage"
)

// ErrSnapshot wraps the failures of the snapshot and restore reconcilers
// that a user can act on (the source is missing, the target runs, ...).
var ErrSnapshot = errors.New("snapshot")

// SnapshotVolume is a claim's data as the storage layer addresses it.
type SnapshotVolume = storage.SnapshotVolume

// VolumeSnapshotter copies volumes to named point-in-time snapshots and
// back (the CSI VolumeSnapshot part of KubeVirt's snapshots). A snapshot
// lives next to its volume: in the volume's namespace, storage class and
// node.
type VolumeSnapshotter interface {
	// Snapshot copies volume's data into the snapshot name, replacing a
	// snapshot of that name.
	Snapshot(ctx context.Context, volume SnapshotVolume, name string) error
	// Restore writes the data of the snapshot name (in target's
	// namespace, storage class and node) as the volume target.
	Restore(ctx context.Context, name string, target SnapshotVolume) error
	// Delete removes the snapshot name taken of volume; a missing one is
	// not an error.
	Delete(ctx context.Context, name string, volume SnapshotVolume) error
}

// GuestFreezer freezes and thaws the filesystems of a running VMI's guest
// through its guest agent (KubeVirt's freeze and unfreeze subresources,
// served by the node running the VMI).
type GuestFreezer interface {
	Freeze(ctx context.Context, namespace, name string) error
	Unfreeze(ctx context.Context, namespace, name string) error
}
