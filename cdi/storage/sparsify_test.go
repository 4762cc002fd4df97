package storage_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cdi/storage"
)

// Sparsify keeps the image's bytes and size and frees its zero chunks.
func TestSparsify(t *testing.T) {
	tests := []struct {
		name string
		size int
		data map[int][]byte // offset -> bytes written
	}{
		{name: "zeros only", size: 16 << 20},
		{name: "data at both ends", size: 16 << 20, data: map[int][]byte{0: []byte("head"), 16<<20 - 4: []byte("tail")}},
		{name: "data mid chunk, odd size", size: 5<<20 + 123, data: map[int][]byte{3<<20 + 77: bytes.Repeat([]byte{7}, 1000)}},
		{name: "empty", size: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "copy.img")
			want := make([]byte, tt.size)
			for off, b := range tt.data {
				copy(want[off:], b)
			}
			// Written, not truncated: every block allocated, as a
			// hypervisor's copy leaves it.
			require.NoError(t, os.WriteFile(p, want, 0o600))
			before := allocated(t, p)

			punched, err := storage.Sparsify(context.Background(), p)
			require.NoError(t, err)
			got, err := os.ReadFile(p)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(want, got), "content unchanged")
			if runtime.GOOS == "linux" && tt.size >= 8<<20 {
				assert.Greater(t, punched, int64(0))
				assert.Less(t, allocated(t, p), before-int64(punched)/2, "zero chunks freed")
			}
			if runtime.GOOS == "linux" {
				// Whole 1 MiB chunks of zeros are punched, nothing else.
				var wantPunched int64
				for off := 0; off+1<<20 <= tt.size; off += 1 << 20 {
					if bytes.Equal(want[off:off+1<<20], make([]byte, 1<<20)) {
						wantPunched += 1 << 20
					}
				}
				assert.Equal(t, wantPunched, punched)
			}
		})
	}
}

func TestSparsifyMissingAndCancelled(t *testing.T) {
	_, err := storage.Sparsify(context.Background(), filepath.Join(t.TempDir(), "none.img"))
	require.ErrorIs(t, err, os.ErrNotExist)

	p := filepath.Join(t.TempDir(), "copy.img")
	require.NoError(t, os.WriteFile(p, make([]byte, 4<<20), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = storage.Sparsify(ctx, p)
	require.ErrorIs(t, err, context.Canceled)
}
