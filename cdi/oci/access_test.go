package oci_test

import (
	"context"
	"os"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cdi/oci"
	"github.com/virtkit/virtkit/cdi/oci/ocitest"
)

// A private image in the node's cache reaches only pulls whose credentials
// the registry accepts: after one tenant pulled it with the pull secret,
// another tenant's pull without credentials, with wrong ones, by digest or
// with policy Never gets nothing from the cache; a pull with credentials
// the registry accepts (the same ones, or the same account written
// differently) is served from the cache.
func TestPullCacheServesPrivateImageOnlyToAcceptedCredentials(t *testing.T) {
	reg := ocitest.Start(t, "virtkit", "s3cret")
	disk := []byte("QFI\xfb private tenant disk")
	push(t, reg.Host+"/vm/private:v1", map[string][]byte{"disk/disk.qcow2": disk}, reg)
	ctx := context.Background()
	p := newPuller(t)
	image := reg.Host + "/vm/private:v1"
	first, err := p.Pull(ctx, oci.Request{Image: image, Auth: reg.Auth(), Policy: oci.PullIfNotPresent})
	require.NoError(t, err)
	require.False(t, first.Cached)

	wrong := authn.FromConfig(authn.AuthConfig{Username: "virtkit", Password: "guess"})
	sameAccount := authn.FromConfig(authn.AuthConfig{Auth: "dmlydGtpdDpzM2NyZXQ="}) // virtkit:s3cret
	tests := []struct {
		name string
		req  oci.Request
		want error
	}{
		{"anonymous", oci.Request{Image: image, Policy: oci.PullIfNotPresent}, oci.ErrUnauthorized},
		{"wrong password", oci.Request{Image: image, Auth: wrong, Policy: oci.PullIfNotPresent}, oci.ErrUnauthorized},
		{"anonymous by digest", oci.Request{Image: reg.Host + "/vm/private@" + first.Digest}, oci.ErrUnauthorized},
		{"anonymous, policy Never", oci.Request{Image: image, Policy: oci.PullNever}, oci.ErrNotPresent},
		{"wrong password, policy Never", oci.Request{Image: image, Auth: wrong, Policy: oci.PullNever}, oci.ErrNotPresent},
		{"same credentials", oci.Request{Image: image, Auth: reg.Auth(), Policy: oci.PullIfNotPresent}, nil},
		{"same credentials, policy Never", oci.Request{Image: image, Auth: reg.Auth(), Policy: oci.PullNever}, nil},
		{"same account, other form", oci.Request{Image: image, Auth: sameAccount, Policy: oci.PullIfNotPresent}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := p.Pull(ctx, tt.req)
			if tt.want != nil {
				require.ErrorIs(t, err, tt.want)
				assert.Empty(t, res.Path)
				return
			}
			require.NoError(t, err)
			assert.True(t, res.Cached, "served from the cache")
			got, err := os.ReadFile(res.Path)
			require.NoError(t, err)
			assert.Equal(t, disk, got)
		})
	}
}
