package importer_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ulikunitz/xz"

	"github.com/virtkit/virtkit/cdi/importer"
	"github.com/virtkit/virtkit/internal/testenv"
)

// fixtures makes a 4 MiB raw disk with a marker, the same disk as qcow2
// (qemu-img), gzip and xz of the raw one, and an ISO-like file.
func fixtures(t *testing.T) (dir string, marker []byte) {
	t.Helper()
	dir = t.TempDir()
	marker = []byte("virtkit-importer-marker")
	raw := testenv.DiskFixture(t, dir, "disk", 4<<20, 1<<20, string(marker))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(raw)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "disk.raw.gz"), gz.Bytes(), 0o644))
	q, err := os.ReadFile(filepath.Join(dir, "disk.qcow2"))
	require.NoError(t, err)
	var x bytes.Buffer
	xw, err := xz.NewWriter(&x)
	require.NoError(t, err)
	_, _ = xw.Write(q)
	require.NoError(t, xw.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "disk.qcow2.xz"), x.Bytes(), 0o644))
	iso := make([]byte, 64<<10)
	copy(iso[0x8001:], "CD001")
	copy(iso[40<<10:], marker)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "disk.iso"), iso, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "page.html"), []byte("<!DOCTYPE html><html>not found</html>\n"), 0o644))
	return dir, marker
}

func newImporter(t *testing.T) *importer.Importer {
	t.Helper()
	im, err := importer.New(importer.Options{ScratchDir: t.TempDir(), AllowedNetworks: loopback})
	require.NoError(t, err)
	return im
}

func TestImportHTTPFormats(t *testing.T) {
	dir, marker := fixtures(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	im := newImporter(t)
	tests := []struct {
		file        string
		format      importer.Format
		compression importer.Format
		markerAt    int64
	}{
		{"disk.raw", importer.FormatRaw, "", 1 << 20},
		{"disk.qcow2", importer.FormatQcow2, "", 1 << 20},
		{"disk.raw.gz", importer.FormatRaw, importer.FormatGzip, 1 << 20},
		{"disk.qcow2.xz", importer.FormatQcow2, importer.FormatXz, 1 << 20},
		{"disk.iso", importer.FormatISO, "", 40 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "dv", "disk.img")
			var last float64
			res, err := im.Import(context.Background(), importer.Request{
				HTTP: &importer.HTTPSource{URL: srv.URL + "/" + tt.file}, Target: target, Size: 8 << 20, Key: tt.file,
				Progress: func(p float64) { last = p },
			})
			require.NoError(t, err)
			assert.Equal(t, tt.format, res.SourceFormat)
			assert.Equal(t, tt.compression, res.Compression)
			assert.Equal(t, 100.0, last)
			got, err := os.ReadFile(target)
			require.NoError(t, err)
			assert.Len(t, got, 8<<20, "resized to the requested size")
			assert.Equal(t, marker, got[tt.markerAt:tt.markerAt+int64(len(marker))], "content survives conversion")
			_, err = os.Stat(target + ".importing")
			assert.True(t, os.IsNotExist(err), "no temporary file left")
		})
	}
}

func TestImportHTTPBadInput(t *testing.T) {
	dir, _ := fixtures(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	raw, err := os.ReadFile(filepath.Join(dir, "disk.raw"))
	require.NoError(t, err)
	sum := sha256.Sum256(raw)
	im := newImporter(t)
	tests := []struct {
		name      string
		src       importer.HTTPSource
		size      int64
		want      error
		permanent bool
	}{
		{"404", importer.HTTPSource{URL: srv.URL + "/missing.img"}, 8 << 20, importer.ErrBadSource, true},
		{"html page", importer.HTTPSource{URL: srv.URL + "/page.html"}, 8 << 20, importer.ErrNotADisk, true},
		{"size too small", importer.HTTPSource{URL: srv.URL + "/disk.qcow2"}, 1 << 20, importer.ErrTooSmall, true},
		{"bad checksum", importer.HTTPSource{URL: srv.URL + "/disk.raw", Checksum: "sha256:" + hex.EncodeToString(make([]byte, 32))}, 8 << 20, importer.ErrChecksum, true},
		{"unreachable", importer.HTTPSource{URL: closedURL + "/disk.raw"}, 8 << 20, importer.ErrUnreachable, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "disk.img")
			_, err := im.Import(context.Background(), importer.Request{HTTP: &tt.src, Target: target, Size: tt.size, Key: tt.name})
			require.ErrorIs(t, err, tt.want)
			assert.Equal(t, tt.permanent, importer.Permanent(err))
			_, serr := os.Stat(target)
			assert.True(t, os.IsNotExist(serr), "nothing left at the target")
		})
	}
	t.Run("good checksum", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "disk.img")
		_, err := im.Import(context.Background(), importer.Request{HTTP: &importer.HTTPSource{URL: srv.URL + "/disk.raw",
			Checksum: "sha256:" + hex.EncodeToString(sum[:])}, Target: target, Key: "good"})
		require.NoError(t, err)
	})
}

// TestImportHTTPResumes cuts the first transfer half way; the second
// attempt asks for the rest with a Range request.
func TestImportHTTPResumes(t *testing.T) {
	dir, marker := fixtures(t)
	raw, err := os.ReadFile(filepath.Join(dir, "disk.raw"))
	require.NoError(t, err)
	var ranges []string
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ranges = append(ranges, r.Header.Get("Range"))
		if calls.Add(1) == 1 {
			w.Header().Set("Content-Length", "4194304")
			_, _ = w.Write(raw[:len(raw)/2])
			panic(http.ErrAbortHandler) // cut the connection
		}
		http.ServeContent(w, r, "disk.raw", fileTime(t, dir), bytes.NewReader(raw))
	}))
	defer srv.Close()
	im := newImporter(t)
	target := filepath.Join(t.TempDir(), "disk.img")
	req := importer.Request{HTTP: &importer.HTTPSource{URL: srv.URL + "/disk.raw"}, Target: target, Key: "resume"}
	_, err = im.Import(context.Background(), req)
	require.Error(t, err)
	assert.False(t, importer.Permanent(err))
	_, serr := os.Stat(target)
	require.True(t, os.IsNotExist(serr), "a cut transfer leaves no target")
	_, err = im.Import(context.Background(), req)
	require.NoError(t, err)
	require.Len(t, ranges, 2)
	assert.Empty(t, ranges[0])
	assert.Regexp(t, `^bytes=[1-9][0-9]*-$`, ranges[1], "the retry resumes")
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, raw, got)
	assert.Equal(t, marker, got[1<<20:1<<20+len(marker)])
}

func TestImportBlankAndClone(t *testing.T) {
	dir, marker := fixtures(t)
	im := newImporter(t)
	out := t.TempDir()
	_, err := im.Import(context.Background(), importer.Request{Blank: true, Target: filepath.Join(out, "blank.img"), Size: 3 << 20, Key: "b"})
	require.NoError(t, err)
	st, err := os.Stat(filepath.Join(out, "blank.img"))
	require.NoError(t, err)
	assert.Equal(t, int64(3<<20), st.Size())

	_, err = im.Import(context.Background(), importer.Request{ClonePath: filepath.Join(dir, "disk.raw"), Target: filepath.Join(out, "clone.img"), Size: 6 << 20, Key: "c"})
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(out, "clone.img"))
	require.NoError(t, err)
	assert.Len(t, got, 6<<20)
	assert.Equal(t, marker, got[1<<20:1<<20+len(marker)])

	_, err = im.Import(context.Background(), importer.Request{Target: filepath.Join(out, "x.img"), Key: "n"})
	require.ErrorIs(t, err, importer.ErrNoSource)
}

// HTTPS: the server's certificate must be trusted by the client; an
// untrusted one is refused, a trusted one imports.
func TestImportHTTPS(t *testing.T) {
	dir, marker := fixtures(t)
	srv := httptest.NewTLSServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	target := filepath.Join(t.TempDir(), "disk.img")
	_, err := newImporter(t).Import(context.Background(), importer.Request{HTTP: &importer.HTTPSource{URL: srv.URL + "/disk.qcow2"}, Target: target, Key: "untrusted"})
	require.ErrorIs(t, err, importer.ErrUnreachable)
	assert.Contains(t, err.Error(), "certificate")

	im, err := importer.New(importer.Options{ScratchDir: t.TempDir(), HTTPClient: srv.Client(), AllowedNetworks: loopback})
	require.NoError(t, err)
	_, err = im.Import(context.Background(), importer.Request{HTTP: &importer.HTTPSource{URL: srv.URL + "/disk.qcow2",
		Headers: []string{"X-Test: 1"}}, Target: target, Key: "trusted"})
	require.NoError(t, err)
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, marker, got[1<<20:1<<20+len(marker)])
}

// A server that stops sending is cut off after the idle timeout; the
// attempt is transient and the next one resumes.
func TestImportHTTPStalledServer(t *testing.T) {
	dir, _ := fixtures(t)
	raw, err := os.ReadFile(filepath.Join(dir, "disk.raw"))
	require.NoError(t, err)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "4194304")
		_, _ = w.Write(raw[:1<<20])
		w.(http.Flusher).Flush()
		select { // stall
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	im, err := importer.New(importer.Options{ScratchDir: t.TempDir(), IdleTimeout: 200 * time.Millisecond, AllowedNetworks: loopback})
	require.NoError(t, err)
	_, err = im.Import(context.Background(), importer.Request{HTTP: &importer.HTTPSource{URL: srv.URL + "/disk.raw"},
		Target: filepath.Join(t.TempDir(), "disk.img"), Key: "stall"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stalled after 1048576 bytes")
	assert.False(t, importer.Permanent(err))
}
