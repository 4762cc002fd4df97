package importer_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cdi/importer"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// An import stops as soon as its source would exceed the requested size
// (plus room for image metadata), decompressed or not, declared or not,
// and a refused import leaves no scratch space behind.
func TestImportBoundedByRequestedSize(t *testing.T) {
	var bomb bytes.Buffer // 256 MiB of zeros in about 256 KiB
	zw, err := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	require.NoError(t, err)
	zero := make([]byte, 1<<20)
	for range 256 {
		_, _ = zw.Write(zero)
	}
	require.NoError(t, zw.Close())
	noise := bytes.Repeat([]byte{0xa5, 0x01, 0x00, 0xff}, 4<<20) // 16 MiB, binary
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/bomb.raw.gz":
			_, _ = w.Write(bomb.Bytes())
		case "/declared":
			w.Header().Set("Content-Length", "64424509440") // 60 GiB
			_, _ = w.Write(noise[:4096])
		case "/stream":
			w.(http.Flusher).Flush() // chunked: no declared length
			_, _ = w.Write(noise)
		}
	}))
	defer srv.Close()
	scratch := t.TempDir()
	im, err := importer.New(importer.Options{ScratchDir: scratch, AllowedNetworks: loopback})
	require.NoError(t, err)
	limit := im.SourceLimit(1 << 20)
	assert.Less(t, limit, int64(6<<20))
	for _, file := range []string{"bomb.raw.gz", "declared", "stream"} {
		t.Run(file, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "disk.img")
			_, err := im.Import(context.Background(), importer.Request{HTTP: &importer.HTTPSource{URL: srv.URL + "/" + file},
				Target: target, Size: 1 << 20, Key: file})
			require.ErrorIs(t, err, importer.ErrTooLarge)
			assert.True(t, importer.Permanent(err))
			_, serr := os.Stat(filepath.Join(scratch, file))
			assert.True(t, os.IsNotExist(serr), "scratch space removed")
		})
	}
}

// The scratch space of a DataVolume goes when its import fails for good
// and when the DataVolume is deleted; a transient failure keeps it for the
// retry to resume.
func TestWorkerRemovesScratch(t *testing.T) {
	half := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "4194304")
		_, _ = w.Write(bytes.Repeat([]byte{1}, 1<<20))
		panic(http.ErrAbortHandler) // cut: a transient failure
	}))
	defer half.Close()
	scratchOf := func(t *testing.T, e *workerEnv) []string {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(e.scratch, "ns_dv_*"))
		require.NoError(t, err)
		return m
	}
	req := reconcile.Request{Namespace: "ns", Name: "dv"}

	t.Run("deleted", func(t *testing.T) {
		e := newWorkerEnv(t, 5)
		e.scheduled(t, "dv", half.URL+"/disk.raw")
		_, err := e.w.Reconcile(context.Background(), req)
		require.NoError(t, err)
		require.Len(t, scratchOf(t, e), 1, "a transient failure keeps the partial download")
		require.NoError(t, e.st.Delete(context.Background(), e.get(t, "dv"), store.DeleteOptions{}))
		_, err = e.w.Reconcile(context.Background(), req)
		require.NoError(t, err)
		assert.Empty(t, scratchOf(t, e), "deletion removes the scratch space")
	})
	t.Run("failed", func(t *testing.T) {
		e := newWorkerEnv(t, 2)
		e.scheduled(t, "dv", half.URL+"/disk.raw")
		_, err := e.w.Reconcile(context.Background(), req)
		require.NoError(t, err)
		require.Len(t, scratchOf(t, e), 1)
		_, err = e.w.Reconcile(context.Background(), req)
		require.NoError(t, err)
		require.Equal(t, "Failed", string(e.get(t, "dv").Status.Phase))
		assert.Empty(t, scratchOf(t, e), "the last failure removes the scratch space")
	})
}
