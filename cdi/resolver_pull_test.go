package cdi_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cdi"
	"github.com/virtkit/virtkit/cdi/oci"
	"github.com/virtkit/virtkit/cdi/oci/ocitest"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/store"
)

// A pull slower than the caller's deadline (a node agent's reconcile) goes
// on in the background, and the next call joins it: the layer crosses the
// wire once, where each attempt used to start the download over.
func TestResolverPullOutlivesTheCallersDeadline(t *testing.T) {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	img, err := ocitest.ContainerDisk(map[string][]byte{"disk/disk.img": make([]byte, 1<<20)})
	require.NoError(t, err)
	layers, err := img.Layers()
	require.NoError(t, err)
	layer, err := layers[0].Digest()
	require.NoError(t, err)
	var slow atomic.Bool
	var layerGets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/blobs/"+layer.String()) && slow.Load() {
			layerGets.Add(1)
			time.Sleep(500 * time.Millisecond)
		}
		reg.ServeHTTP(w, req)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	require.NoError(t, ocitest.Push(host+"/vm/slow:v1", img, nil))
	slow.Store(true)

	p, err := oci.New(oci.Options{CacheDir: t.TempDir(), AllowedNetworks: loopback})
	require.NoError(t, err)
	r := &cdi.Resolver{Base: &domain.DirResolver{Dir: t.TempDir(), Create: true}, Node: "n1", Store: store.NewMemory(), Puller: p}
	req := domain.VolumeRequest{Namespace: "ns", VMIName: "v", UID: "u", Volume: "root",
		Kind: domain.VolumeContainerDisk, Image: host + "/vm/slow:v1"}

	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = r.ResolveVolume(short, req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, domain.ErrImagePull, "not a failed pull: it goes on")

	ctx, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	hv, err := r.ResolveVolume(ctx, req)
	require.NoError(t, err)
	assert.FileExists(t, hv.BackingPath)
	assert.Equal(t, int32(1), layerGets.Load(), "the layer crossed the wire once: the second call joined the first pull")

	// A pull that cannot finish within PullTimeout is an image pull error.
	r2 := &cdi.Resolver{Base: &domain.DirResolver{Dir: t.TempDir(), Create: true}, Node: "n1", Store: store.NewMemory(),
		Puller: mustPuller(t), PullTimeout: 200 * time.Millisecond}
	_, err = r2.ResolveVolume(ctx, req)
	require.ErrorIs(t, err, domain.ErrImagePull)
}

func mustPuller(t *testing.T) *oci.Puller {
	t.Helper()
	p, err := oci.New(oci.Options{CacheDir: t.TempDir(), AllowedNetworks: loopback})
	require.NoError(t, err)
	return p
}
