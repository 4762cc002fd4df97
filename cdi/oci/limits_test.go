package oci_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cdi/oci"
	"github.com/virtkit/virtkit/cdi/oci/ocitest"
)

// A registry on loopback is refused unless its network is allowed, and the
// refused registry sees no request.
func TestPullAddressPolicy(t *testing.T) {
	var hits atomic.Int32
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := ocitest.ContainerDisk(map[string][]byte{"disk/disk.img": []byte("disk bytes")})
	require.NoError(t, err)
	require.NoError(t, ocitest.Push(host+"/vm/disk:v1", img, nil))
	pushed := hits.Load()

	p, err := oci.New(oci.Options{CacheDir: t.TempDir()})
	require.NoError(t, err)
	_, err = p.Pull(context.Background(), oci.Request{Image: host + "/vm/disk:v1"})
	require.ErrorIs(t, err, oci.ErrAddressNotAllowed)
	assert.Equal(t, pushed, hits.Load(), "the registry saw no request")

	_, err = newPuller(t).Pull(context.Background(), oci.Request{Image: host + "/vm/disk:v1"})
	require.NoError(t, err, "allowed explicitly")
}

// A disk whose tar header declares more than the request's bound is
// refused before a byte of it is copied, even when the layer stream is
// short (it would otherwise be read until it ends).
func TestPullRefusesDeclaredSizeOverRequest(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "disk/disk.img", Typeflag: tar.TypeReg, Mode: 0o440, Size: 60 << 30}))
	_, err := tw.Write(bytes.Repeat([]byte{7}, 1<<20)) // 1 MiB of the declared 60 GiB, then the stream ends
	require.NoError(t, err)
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	require.NoError(t, err)
	img, err := mutate.AppendLayers(empty.Image, layer)
	require.NoError(t, err)
	require.NoError(t, ocitest.Push(host+"/vm/huge:v1", img, nil))

	cache := t.TempDir()
	p, err := oci.New(oci.Options{CacheDir: cache, AllowedNetworks: loopback})
	require.NoError(t, err)
	var copied int64
	_, err = p.Pull(context.Background(), oci.Request{Image: host + "/vm/huge:v1", MaxBytes: 8 << 20,
		Progress: func(done, _ int64) { copied = done }})
	require.ErrorIs(t, err, oci.ErrTooLarge)
	assert.Zero(t, copied, "nothing copied")
	parts, _ := filepath.Glob(filepath.Join(cache, "*", "*", ".part-*"))
	assert.Empty(t, parts)
	_, err = os.Stat(cache)
	require.NoError(t, err)
}
