package cdi_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cdi"
	"github.com/virtkit/virtkit/cdi/storage"
)

// fakeInUse stands in for a hypervisor's point-in-time copy: it writes
// content to dst (not the file's current bytes, so the test sees which
// path made the snapshot) and records its calls.
type fakeInUse struct {
	handled bool
	err     error
	content []byte
	calls   []string // src -> dst
	dstDirs []string
}

func (f *fakeInUse) CopyInUse(_ context.Context, v storage.SnapshotVolume, src, dst string) (bool, error) {
	f.calls = append(f.calls, v.Namespace+"/"+v.Name+": "+src+" -> "+filepath.Base(dst))
	f.dstDirs = append(f.dstDirs, filepath.Dir(dst))
	if !f.handled {
		return false, nil
	}
	if f.err != nil {
		// A failed copy may leave a partial file behind.
		_ = os.WriteFile(dst, []byte("partial"), 0o600)
		return true, f.err
	}
	return true, os.WriteFile(dst, f.content, 0o600)
}

// A volume a running guest uses is snapshotted through InUse: the copy is
// made beside the volume (where the hypervisor reaches), lands in the
// snapshot's place, sparse, and restores like any other; a volume no guest
// uses is copied as a file; a failed copy fails the snapshot and leaves
// nothing behind.
func TestFileSnapshotsInUse(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	classes := storage.Classes{List: []storage.Class{storage.Local{Dir: func(n string) string { return filepath.Join(dir, n) }}}}
	vol := storage.SnapshotVolume{Namespace: "default", Name: "root", StorageClass: storage.LocalClass, Node: "node-1"}
	path := classes.List[0].Path("node-1", "default", "root")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o750))
	require.NoError(t, os.WriteFile(path, []byte("on disk"), 0o600))
	snapshots := filepath.Join(filepath.Dir(path), ".snapshots")

	tests := []struct {
		name     string
		inUse    *fakeInUse
		want     string // the snapshot's content; "" when it must fail
		wantErr  error
		snapshot string
	}{
		{name: "running guest", inUse: &fakeInUse{handled: true, content: []byte("as of the backup")}, want: "as of the backup", snapshot: "s1"},
		{name: "no running guest", inUse: &fakeInUse{}, want: "on disk", snapshot: "s2"},
		{name: "copy fails", inUse: &fakeInUse{handled: true, err: errBackup}, wantErr: errBackup, snapshot: "s3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &cdi.FileSnapshots{Classes: classes, InUse: tt.inUse}
			err := s.Snapshot(ctx, vol, tt.snapshot)
			require.Len(t, tt.inUse.calls, 1)
			assert.True(t, strings.HasPrefix(tt.inUse.calls[0], "default/root: "+path+" -> ."), tt.inUse.calls[0])
			assert.Equal(t, filepath.Dir(path), tt.inUse.dstDirs[0], "the copy is made beside the volume")
			leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*inuse-tmp"))
			assert.Empty(t, leftovers, "no temporary copy is left behind")
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				_, err := os.Stat(filepath.Join(snapshots, tt.snapshot+".img"))
				assert.ErrorIs(t, err, os.ErrNotExist)
				return
			}
			require.NoError(t, err)
			target := vol
			target.Name = "restored-" + tt.snapshot
			require.NoError(t, s.Restore(ctx, tt.snapshot, target))
			got, err := os.ReadFile(classes.List[0].Path("node-1", "default", target.Name))
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
}

var errBackup = errors.New("backup job failed")
