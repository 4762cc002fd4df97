package cdi_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cdi"
	"github.com/virtkit/virtkit/cdi/storage"
	"github.com/virtkit/virtkit/controller"
)

// A volume snapshot keeps the volume's data of the moment: later writes do
// not reach it, a restore makes a new volume with it, and Delete removes
// it (twice is fine).
func TestFileSnapshots(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	classes := storage.Classes{List: []storage.Class{
		storage.Local{Dir: func(n string) string { return filepath.Join(dir, n) }},
		storage.SharedDir{Dir: filepath.Join(dir, "shared")},
	}}
	s := &cdi.FileSnapshots{Classes: classes}
	for _, tc := range []struct {
		class, node string
	}{{storage.LocalClass, "node-1"}, {storage.SharedClass, ""}} {
		t.Run(tc.class, func(t *testing.T) {
			vol := controller.SnapshotVolume{Namespace: "default", Name: "root", StorageClass: tc.class, Node: tc.node}
			class, err := classes.Get(tc.class)
			require.NoError(t, err)
			path := class.Path(tc.node, "default", "root")
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o750))
			require.NoError(t, os.WriteFile(path, []byte("v1"), 0o600))

			require.NoError(t, s.Snapshot(ctx, vol, "snap-1"))
			require.NoError(t, os.WriteFile(path, []byte("v2"), 0o600))

			target := vol
			target.Name = "restored"
			require.NoError(t, s.Restore(ctx, "snap-1", target))
			got, err := os.ReadFile(class.Path(tc.node, "default", "restored"))
			require.NoError(t, err)
			assert.Equal(t, "v1", string(got))
			got, err = os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, "v2", string(got), "the volume keeps its own data")

			require.NoError(t, s.Delete(ctx, "snap-1", vol))
			require.NoError(t, s.Delete(ctx, "snap-1", vol))
			assert.ErrorIs(t, s.Restore(ctx, "snap-1", target), cdi.ErrVolumeSnapshotNotFound)
		})
	}
	_, err := classes.Get("fast")
	require.Error(t, err)
	assert.ErrorIs(t, s.Snapshot(ctx, controller.SnapshotVolume{Namespace: "default", Name: "x", StorageClass: "fast"}, "s"), storage.ErrUnknownClass)
	assert.Error(t, s.Snapshot(ctx, controller.SnapshotVolume{Namespace: "default", Name: "x", StorageClass: storage.LocalClass}, "s"),
		"a node-local volume needs its node")
	assert.ErrorIs(t, s.Snapshot(ctx, controller.SnapshotVolume{Namespace: "default", Name: "x", StorageClass: storage.LocalClass, Node: "node-9"}, "s"),
		cdi.ErrVolumeNotFound)
}

// FileSnapshots is what the snapshot controllers take.
var _ controller.VolumeSnapshotter = (*cdi.FileSnapshots)(nil)
