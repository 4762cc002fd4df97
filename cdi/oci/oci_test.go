package oci_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cdi/oci"
	"github.com/virtkit/virtkit/cdi/oci/ocitest"
)

func push(t *testing.T, ref string, files map[string][]byte, r *ocitest.Registry) {
	t.Helper()
	img, err := ocitest.ContainerDisk(files)
	require.NoError(t, err)
	var auth = r.Auth()
	require.NoError(t, ocitest.Push(ref, img, auth))
}

func newPuller(t *testing.T) *oci.Puller {
	t.Helper()
	p, err := oci.New(oci.Options{CacheDir: t.TempDir(), AllowedNetworks: loopback})
	require.NoError(t, err)
	return p
}

// In-process registry (go-containerregistry's pkg/registry): extraction,
// digest cache, pull policies and the errors.
func TestPullPoliciesAndCache(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	reg := &ocitest.Registry{Host: host}
	disk := []byte("QFI\xfb pretend qcow2 bytes")
	push(t, host+"/vm/disk:v1", map[string][]byte{"disk/disk.qcow2": disk}, reg)
	push(t, host+"/vm/two:v1", map[string][]byte{"disk/a.img": []byte("a"), "disk/b.img": []byte("bbb")}, reg)
	push(t, host+"/vm/empty:v1", map[string][]byte{"etc/hostname": []byte("x")}, reg)
	ctx := context.Background()
	p := newPuller(t)

	res, err := p.Pull(ctx, oci.Request{Image: "docker://" + host + "/vm/disk:v1"})
	require.NoError(t, err)
	assert.False(t, res.Cached)
	got, err := os.ReadFile(res.Path)
	require.NoError(t, err)
	assert.Equal(t, disk, got)
	assert.True(t, strings.HasPrefix(res.Digest, "sha256:"))

	again, err := p.Pull(ctx, oci.Request{Image: host + "/vm/disk:v1", Policy: oci.PullIfNotPresent})
	require.NoError(t, err)
	assert.True(t, again.Cached)
	assert.Equal(t, res.Path, again.Path)

	byDigest, err := p.Pull(ctx, oci.Request{Image: host + "/vm/disk@" + res.Digest})
	require.NoError(t, err)
	assert.True(t, byDigest.Cached, "the cache is keyed by digest")

	srv.Close() // Never and IfNotPresent answer from the cache without the registry
	_, err = p.Pull(ctx, oci.Request{Image: host + "/vm/disk:v1", Policy: oci.PullNever})
	require.NoError(t, err)
	_, err = p.Pull(ctx, oci.Request{Image: host + "/vm/disk:v1", Policy: oci.PullAlways})
	require.ErrorIs(t, err, oci.ErrPull, "Always asks the registry")
	_, err = p.Pull(ctx, oci.Request{Image: host + "/vm/other:v1", Policy: oci.PullNever})
	require.ErrorIs(t, err, oci.ErrNotPresent)

	srv2 := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv2.Close()
	host2 := strings.TrimPrefix(srv2.URL, "http://")
	reg2 := &ocitest.Registry{Host: host2}
	push(t, host2+"/vm/two:v1", map[string][]byte{"disk/a.img": []byte("a"), "disk/b.img": []byte("bbb")}, reg2)
	push(t, host2+"/vm/empty:v1", map[string][]byte{"etc/hostname": []byte("x")}, reg2)
	tests := []struct {
		name string
		req  oci.Request
		want error
		body string
	}{
		{"path selects a disk", oci.Request{Image: host2 + "/vm/two:v1", Path: "/disk/b.img"}, nil, "bbb"},
		{"no disk", oci.Request{Image: host2 + "/vm/empty:v1"}, oci.ErrNoDisk, ""},
		{"missing path", oci.Request{Image: host2 + "/vm/two:v1", Path: "disk/c.img"}, oci.ErrNoDisk, ""},
		{"unknown image", oci.Request{Image: host2 + "/vm/nope:v1"}, oci.ErrNotFound, ""},
		{"bad reference", oci.Request{Image: "UPPER/Case::x"}, oci.ErrPull, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := newPuller(t).Pull(ctx, tt.req)
			if tt.want != nil {
				require.ErrorIs(t, err, tt.want)
				require.ErrorIs(t, err, oci.ErrPull)
				return
			}
			require.NoError(t, err)
			b, err := os.ReadFile(res.Path)
			require.NoError(t, err)
			assert.Equal(t, tt.body, string(b))
		})
	}
}

func TestDefaultPolicy(t *testing.T) {
	assert.Equal(t, oci.PullAlways, oci.DefaultPolicy("quay.io/x/y"))
	assert.Equal(t, oci.PullAlways, oci.DefaultPolicy("quay.io/x/y:latest"))
	assert.Equal(t, oci.PullIfNotPresent, oci.DefaultPolicy("quay.io/x/y:v1"))
	assert.Equal(t, oci.PullIfNotPresent, oci.DefaultPolicy("127.0.0.1:5000/y:v1"))
}

func dockerConfig(host, user, pass string) []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	return fmt.Appendf(nil, `{"auths":{"%s":{"auth":"%s"}}}`, host, auth)
}

// The real distribution registry (Debian's docker-registry) with basic
// auth: an anonymous pull is refused, the credentials of an
// imagePullSecret-style dockerconfigjson pull the disk.
func TestPullRealRegistryWithPullSecret(t *testing.T) {
	reg := ocitest.Start(t, "virtkit", "s3cret")
	disk := make([]byte, 3<<20)
	copy(disk, "QFI\xfb")
	copy(disk[2<<20:], "tail")
	push(t, reg.Host+"/vm/disk:v1", map[string][]byte{"disk/disk.qcow2": disk}, reg)
	ctx := context.Background()
	p := newPuller(t)

	_, err := p.Pull(ctx, oci.Request{Image: "docker://" + reg.Host + "/vm/disk:v1"})
	require.ErrorIs(t, err, oci.ErrUnauthorized)

	_, err = oci.AuthFor(dockerConfig("other.example:5000", "a", "b"), reg.Host+"/vm/disk:v1")
	require.ErrorIs(t, err, oci.ErrNoCredentials)
	auth, err := oci.AuthFor(dockerConfig(reg.Host, "virtkit", "s3cret"), reg.Host+"/vm/disk:v1")
	require.NoError(t, err)
	res, err := p.Pull(ctx, oci.Request{Image: "docker://" + reg.Host + "/vm/disk:v1", Auth: auth})
	require.NoError(t, err)
	got, err := os.ReadFile(res.Path)
	require.NoError(t, err)
	assert.Equal(t, disk, got)
	again, err := p.Pull(ctx, oci.Request{Image: reg.Host + "/vm/disk:v1", Auth: auth, Policy: oci.PullAlways})
	require.NoError(t, err)
	assert.True(t, again.Cached, "Always re-resolves the digest but reuses the extracted disk")
}

// A multi-platform index: the request's architecture picks the image.
func TestPullPicksArchitecture(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	amd, err := ocitest.ContainerDisk(map[string][]byte{"disk/disk.img": []byte("amd64 disk")})
	require.NoError(t, err)
	arm, err := ocitest.ContainerDisk(map[string][]byte{"disk/disk.img": []byte("arm64 disk")})
	require.NoError(t, err)
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}})
	ref, err := name.ParseReference(host + "/vm/multi:v1")
	require.NoError(t, err)
	require.NoError(t, remote.WriteIndex(ref, idx))
	p := newPuller(t) // one cache: the two platforms must not share an entry
	for _, tt := range []struct{ arch, want string }{{"", "amd64 disk"}, {"arm64", "arm64 disk"}, {"amd64", "amd64 disk"}, {"arm64", "arm64 disk"}} {
		res, err := p.Pull(context.Background(), oci.Request{Image: host + "/vm/multi:v1", Architecture: tt.arch, Policy: oci.PullIfNotPresent})
		require.NoError(t, err, tt.arch)
		b, err := os.ReadFile(res.Path)
		require.NoError(t, err)
		assert.Equal(t, tt.want, string(b), tt.arch)
	}
}
