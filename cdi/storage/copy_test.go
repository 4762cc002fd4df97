package storage_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cdi/storage"
)

// allocated is the bytes the file occupies on disk.
func allocated(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Skip("no block counts on this platform")
	}
	return st.Blocks * 512
}

// A copy has the source's bytes and size, keeps a sparse image sparse and
// leaves no temporary file behind.
func TestCopyFileSparse(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.img")
	f, err := os.Create(src)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(64<<20))
	_, err = f.WriteAt([]byte("head"), 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("tail"), 64<<20-4)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	dst := filepath.Join(dir, "snap", "dst.img")
	require.NoError(t, storage.CopyFile(context.Background(), src, dst))
	got, err := os.ReadFile(dst)
	require.NoError(t, err)
	want, err := os.ReadFile(src)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Less(t, allocated(t, dst), int64(8<<20), "the holes stay holes")
	entries, err := os.ReadDir(filepath.Dir(dst))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left")

	// Overwriting replaces the whole content.
	require.NoError(t, os.WriteFile(src, []byte("short"), 0o600))
	require.NoError(t, storage.CopyFile(context.Background(), src, dst))
	got, err = os.ReadFile(dst)
	require.NoError(t, err)
	assert.Equal(t, "short", string(got))
}

func TestCopyFileErrors(t *testing.T) {
	dir := t.TempDir()
	assert.ErrorIs(t, storage.CopyFile(context.Background(), filepath.Join(dir, "missing"), filepath.Join(dir, "x")), os.ErrNotExist)
	assert.Error(t, storage.CopyFile(context.Background(), dir, filepath.Join(dir, "x")), "a directory is no image")
	src := filepath.Join(dir, "src")
	require.NoError(t, os.WriteFile(src, make([]byte, 4<<20), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := storage.CopyFile(ctx, src, filepath.Join(dir, "y"))
	if err != nil { // a reflink needs no loop, so only a byte copy sees ctx
		assert.ErrorIs(t, err, context.Canceled)
		_, serr := os.Stat(filepath.Join(dir, "y"))
		assert.ErrorIs(t, serr, os.ErrNotExist, "a cancelled copy leaves nothing")
	}
}
