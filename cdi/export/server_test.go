package export_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cdi/export"
)

const token = "s3cr3t-token"

// disk writes a raw image of n random bytes with a hole in the middle.
func disk(t *testing.T, dir, name string, n int) ([]byte, string) {
	t.Helper()
	data := make([]byte, n)
	_, err := rand.Read(data)
	require.NoError(t, err)
	clear(data[n/4 : n/2])
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return data, p
}

func newServer(t *testing.T, dir string, vols ...export.Volume) *export.Server {
	t.Helper()
	ca, err := export.NewCA(nil)
	require.NoError(t, err)
	s, err := export.Listen(export.Options{CA: ca, AllowedDirs: []string{dir}, Token: []byte(token), Volumes: vols,
		ExternalPrefix: export.ExternalPrefix("ns", "exp")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestServerAuthAndFormats(t *testing.T) {
	dir := t.TempDir()
	data, p := disk(t, dir, "vol.img", 3<<20)
	h := newServer(t, dir, export.Volume{Name: "vol", Path: p}).Handler()

	gunzip := func(b []byte) []byte {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		require.NoError(t, err)
		out, err := io.ReadAll(zr)
		require.NoError(t, err)
		return out
	}
	tests := []struct {
		name       string
		target     string
		header     string
		wantStatus int
		wantBody   func([]byte)
	}{
		{name: "no token", target: "/volumes/vol/disk.img", wantStatus: http.StatusUnauthorized},
		{name: "wrong token", target: "/volumes/vol/disk.img", header: "nope", wantStatus: http.StatusUnauthorized},
		{name: "token prefix", target: "/volumes/vol/disk.img", header: token[:4], wantStatus: http.StatusUnauthorized},
		{name: "raw with header", target: "/volumes/vol/disk.img", header: token, wantStatus: http.StatusOK,
			wantBody: func(b []byte) { assert.True(t, bytes.Equal(data, b), "raw body differs") }},
		{name: "raw with query", target: "/volumes/vol/disk.img?x-kubevirt-export-token=" + token, wantStatus: http.StatusOK,
			wantBody: func(b []byte) { assert.True(t, bytes.Equal(data, b), "raw body differs") }},
		{name: "gzip", target: "/volumes/vol/disk.img.gz", header: token, wantStatus: http.StatusOK,
			wantBody: func(b []byte) { assert.True(t, bytes.Equal(data, gunzip(b)), "gunzipped body differs") }},
		{name: "external prefix", target: export.ExternalPrefix("ns", "exp") + "/volumes/vol/disk.img.gz", header: token,
			wantStatus: http.StatusOK, wantBody: func(b []byte) { assert.True(t, bytes.Equal(data, gunzip(b))) }},
		{name: "unknown volume", target: "/volumes/other/disk.img", header: token, wantStatus: http.StatusNotFound},
		{name: "unknown file", target: "/volumes/vol/disk.qcow2", header: token, wantStatus: http.StatusNotFound},
		{name: "tar.gz of a disk image", target: "/volumes/vol/disk.tar.gz", header: token, wantStatus: http.StatusNotFound,
			wantBody: func(b []byte) { assert.Contains(t, string(b), "format tar.gz serves a filesystem claim's files") }},
		{name: "dir of a disk image", target: "/volumes/vol/dir/", header: token, wantStatus: http.StatusNotFound,
			wantBody: func(b []byte) { assert.Contains(t, string(b), "format dir serves a filesystem claim's files") }},
		{name: "tar.gz needs the token", target: "/volumes/vol/disk.tar.gz", wantStatus: http.StatusUnauthorized},
		{name: "traversal", target: "/volumes/../../etc/passwd", header: token, wantStatus: http.StatusNotFound},
		{name: "traversal in name", target: "/volumes/vol/../vol.img", header: token, wantStatus: http.StatusNotFound},
		{name: "ready without token", target: export.ReadyPath, wantStatus: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tt.target, nil)
			if tt.header != "" {
				req.Header.Set(export.TokenHeader, tt.header)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			require.Equal(t, tt.wantStatus, rec.Code, rec.Body.String())
			if tt.wantBody != nil {
				tt.wantBody(rec.Body.Bytes())
			}
		})
	}
}

func TestServerRawRange(t *testing.T) {
	dir := t.TempDir()
	data, p := disk(t, dir, "vol.img", 1<<20)
	h := newServer(t, dir, export.Volume{Name: "vol", Path: p}).Handler()
	req := httptest.NewRequest(http.MethodGet, "/volumes/vol/disk.img", nil)
	req.Header.Set(export.TokenHeader, token)
	req.Header.Set("Range", "bytes=100-199")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusPartialContent, rec.Code)
	assert.Equal(t, data[100:200], rec.Body.Bytes())
}

func TestListenRefusesUnsafeVolumes(t *testing.T) {
	allowed, outside := t.TempDir(), t.TempDir()
	_, in := disk(t, allowed, "in.img", 4096)
	_, out := disk(t, outside, "out.img", 4096)
	link := filepath.Join(allowed, "link.img")
	require.NoError(t, os.Symlink(out, link))
	qcow := filepath.Join(allowed, "q.img")
	require.NoError(t, os.WriteFile(qcow, append([]byte{'Q', 'F', 'I', 0xfb}, make([]byte, 512)...), 0o600))
	sub := filepath.Join(allowed, "dir")
	require.NoError(t, os.Mkdir(sub, 0o700))
	ca, err := export.NewCA(nil)
	require.NoError(t, err)

	tests := []struct {
		name string
		vol  export.Volume
		dirs []string
		want error
	}{
		{"outside the allowed directories", export.Volume{Name: "v", Path: out}, []string{allowed}, export.ErrPathNotAllowed},
		{"no allowed directories", export.Volume{Name: "v", Path: in}, nil, export.ErrPathNotAllowed},
		{"symlink escaping", export.Volume{Name: "v", Path: link}, []string{allowed}, export.ErrPathNotAllowed},
		{"relative path", export.Volume{Name: "v", Path: "in.img"}, []string{allowed}, export.ErrPathNotAllowed},
		{"directory", export.Volume{Name: "v", Path: sub}, []string{allowed}, export.ErrPathNotAllowed},
		{"qcow2", export.Volume{Name: "v", Path: qcow}, []string{allowed}, export.ErrNotRaw},
		{"name with slash", export.Volume{Name: "a/b", Path: in}, []string{allowed}, virtkit.ErrInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := export.Listen(export.Options{CA: ca, AllowedDirs: tt.dirs, Token: []byte(token), Volumes: []export.Volume{tt.vol}})
			require.ErrorIs(t, err, tt.want)
		})
	}
	_, err = export.Listen(export.Options{CA: ca, AllowedDirs: []string{allowed}, Volumes: []export.Volume{{Name: "v", Path: in}}})
	require.ErrorIs(t, err, virtkit.ErrInvalidOptions, "no token")
}

func TestServeTLSAndStop(t *testing.T) {
	dir := t.TempDir()
	data, p := disk(t, dir, "vol.img", 2<<20)
	ca, err := export.NewCA(nil)
	require.NoError(t, err)
	s, err := export.Listen(export.Options{CA: ca, AllowedDirs: []string{dir}, Token: []byte(token),
		Volumes: []export.Volume{{Name: "vol", Path: p}}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}, Timeout: 30 * time.Second}
	req, err := http.NewRequest(http.MethodGet, s.URL()+"/volumes/vol/disk.img", nil)
	require.NoError(t, err)
	req.Header.Set(export.TokenHeader, token)
	resp, err := client.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, bytes.Equal(data, body))

	// A client without the CA does not trust the server.
	_, err = (&http.Client{Timeout: 30 * time.Second}).Get(s.URL() + export.ReadyPath)
	require.Error(t, err)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
}

func TestServerBoundsConcurrentDownloads(t *testing.T) {
	dir := t.TempDir()
	_, p := disk(t, dir, "vol.img", 8<<20)
	ca, err := export.NewCA(nil)
	require.NoError(t, err)
	s, err := export.Listen(export.Options{CA: ca, AllowedDirs: []string{dir}, Token: []byte(token), MaxConcurrent: 1,
		Volumes: []export.Volume{{Name: "vol", Path: p}}})
	require.NoError(t, err)
	defer s.Close()
	h := s.Handler()

	// The first download blocks writing to a pipe nobody reads.
	pr, pw := io.Pipe()
	first := make(chan struct{})
	go func() {
		defer close(first)
		req := httptest.NewRequest(http.MethodGet, "/volumes/vol/disk.img.gz", nil)
		req.Header.Set(export.TokenHeader, token)
		h.ServeHTTP(&pipeWriter{header: http.Header{}, w: pw}, req)
	}()
	buf := make([]byte, 1)
	_, err = pr.Read(buf) // the first download has started
	require.NoError(t, err)

	req := httptest.NewRequest(http.MethodGet, "/volumes/vol/disk.img", nil)
	req.Header.Set(export.TokenHeader, token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)

	_ = pr.CloseWithError(io.ErrClosedPipe)
	<-first
}

type pipeWriter struct {
	header http.Header
	w      io.Writer
}

func (p *pipeWriter) Header() http.Header         { return p.header }
func (p *pipeWriter) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *pipeWriter) WriteHeader(int)             {}
