package cdi_test

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cdi"
	"github.com/virtkit/virtkit/cdi/oci"
	"github.com/virtkit/virtkit/cdi/oci/ocitest"
	"github.com/virtkit/virtkit/cdi/storage"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/store"
)

func TestResolver(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := ocitest.ContainerDisk(map[string][]byte{"disk/disk.img": make([]byte, 1<<20),
		"boot/vmlinuz": []byte("kernel"), "boot/initrd.img": []byte("initrd")})
	require.NoError(t, err)
	require.NoError(t, ocitest.Push(host+"/vm/disk:v1", img, nil))

	ctx := context.Background()
	st := store.NewMemory()
	dir := t.TempDir()
	classes := storage.Classes{List: []storage.Class{storage.Local{Dir: func(n string) string { return filepath.Join(dir, n) }}}}
	p, err := oci.New(oci.Options{CacheDir: t.TempDir(), AllowedNetworks: loopback})
	require.NoError(t, err)
	secrets := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(secrets, "ns", "regcred"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(secrets, "ns", "regcred", ".dockerconfigjson"), []byte(`{"auths":{"other.example":{"auth":"dTpw"}}}`), 0o600))
	r := &cdi.Resolver{Base: &domain.DirResolver{Dir: dir, Create: true}, Node: "n1", Store: st, Classes: classes, Puller: p, Secrets: oci.SecretDir(secrets)}

	// containerDisk: pulled, booted through an overlay of the cached disk.
	hv, err := r.ResolveVolume(ctx, domain.VolumeRequest{Namespace: "ns", VMIName: "v", UID: "u", Volume: "root",
		Kind: domain.VolumeContainerDisk, Image: host + "/vm/disk:v1"})
	require.NoError(t, err)
	assert.Equal(t, "qcow2", hv.Format)
	assert.FileExists(t, hv.Path)
	assert.FileExists(t, hv.BackingPath)
	assert.Equal(t, "raw", hv.BackingFormat)

	// A pull failure is an image pull error for the node agent.
	_, err = r.ResolveVolume(ctx, domain.VolumeRequest{Namespace: "ns", VMIName: "v", Volume: "root",
		Kind: domain.VolumeContainerDisk, Image: host + "/vm/missing:v1"})
	require.ErrorIs(t, err, domain.ErrImagePull)
	require.ErrorIs(t, err, oci.ErrNotFound)
	_, err = r.ResolveVolume(ctx, domain.VolumeRequest{Namespace: "ns", VMIName: "v", Volume: "root",
		Kind: domain.VolumeContainerDisk, Image: host + "/vm/disk:v1", ImagePullSecret: "regcred"})
	require.ErrorIs(t, err, domain.ErrImagePull)
	require.ErrorIs(t, err, oci.ErrNoCredentials, "the secret names another registry")
	_, err = r.ResolveVolume(ctx, domain.VolumeRequest{Namespace: "ns", VMIName: "v", Volume: "root",
		Kind: domain.VolumeContainerDisk, Image: host + "/vm/disk:v1", ImagePullSecret: "absent"})
	require.ErrorIs(t, err, domain.ErrImagePull)

	// kernelBoot.container: kernel and initrd pulled from the image.
	k, err := r.ResolveKernel(ctx, domain.KernelRequest{Namespace: "ns", VMIName: "v", Image: host + "/vm/disk:v1",
		KernelPath: "/boot/vmlinuz", InitrdPath: "/boot/initrd.img"})
	require.NoError(t, err)
	b, err := os.ReadFile(k.Kernel)
	require.NoError(t, err)
	assert.Equal(t, "kernel", string(b))
	b, err = os.ReadFile(k.Initrd)
	require.NoError(t, err)
	assert.Equal(t, "initrd", string(b))

	// dataVolume: the storage class's file once Succeeded; refused before.
	dv := &virtkit.DataVolume{ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: "ns"}}
	require.NoError(t, st.Create(ctx, dv))
	_, err = r.ResolveVolume(ctx, domain.VolumeRequest{Namespace: "ns", VMIName: "v", Volume: "d", Kind: domain.VolumeDataVolume, ClaimName: "root"})
	require.ErrorIs(t, err, domain.ErrNotResolved)
	dv.Annotations = map[string]string{virtkit.DataVolumeStorageClassAnnotation: storage.LocalClass, virtkit.DataVolumeVolumeNodeAnnotation: "n1"}
	require.NoError(t, st.Update(ctx, dv))
	dv.Status.Phase = virtkit.DataVolumeSucceeded
	require.NoError(t, st.UpdateStatus(ctx, dv))
	target := filepath.Join(dir, "n1", "dv", "ns", "root.img")
	require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o755))
	require.NoError(t, os.WriteFile(target, make([]byte, 1<<20), 0o644))
	hv, err = r.ResolveVolume(ctx, domain.VolumeRequest{Namespace: "ns", VMIName: "v", Volume: "d", Kind: domain.VolumeDataVolume, ClaimName: "root"})
	require.NoError(t, err)
	assert.Equal(t, target, hv.Path)
	assert.Equal(t, "raw", hv.Format)
	// A plain claim (no DataVolume of that name) keeps the base layout.
	hv, err = (&cdi.Resolver{Base: &domain.DirResolver{Dir: dir}, Node: "n1", Store: st, Classes: classes}).ResolveVolume(ctx,
		domain.VolumeRequest{Namespace: "ns", VMIName: "v", Volume: "p", Kind: domain.VolumePersistentVolumeClaim, ClaimName: "plain"})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "pvc", "ns", "plain.img"), hv.Path)
}

// A volume migration's source asks for a destination DataVolume as the
// migration target sees it: the target's local file, named without being
// opened here; a DataVolume on a third node is refused.
func TestResolverMigrationTargetNode(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	dir := t.TempDir()
	classes := storage.Classes{List: []storage.Class{storage.Local{Dir: func(n string) string { return filepath.Join(dir, n) }}}}
	r := &cdi.Resolver{Base: &domain.DirResolver{Dir: dir, Create: true}, Node: "n1", Store: st, Classes: classes}
	for name, node := range map[string]string{"on-n2": "n2", "on-n3": "n3"} {
		dv := &virtkit.DataVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Annotations: map[string]string{
			virtkit.DataVolumeStorageClassAnnotation: storage.LocalClass, virtkit.DataVolumeVolumeNodeAnnotation: node}}}
		require.NoError(t, st.Create(ctx, dv))
		dv.Status.Phase = virtkit.DataVolumeSucceeded
		require.NoError(t, st.UpdateStatus(ctx, dv))
	}
	req := domain.VolumeRequest{Namespace: "ns", VMIName: "v", Volume: "d", Kind: domain.VolumePersistentVolumeClaim, ClaimName: "on-n2"}

	_, err := r.ResolveVolume(ctx, req)
	require.ErrorIs(t, err, domain.ErrNotResolved, "not this node's disk")

	req.Node = "n2"
	hv, err := r.ResolveVolume(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, domain.HostVolume{Type: domain.SourceFile, Path: filepath.Join(dir, "n2", "dv", "ns", "on-n2.img"), Format: "raw"}, hv,
		"the target's file, not opened (it is on the other host)")

	req.ClaimName = "on-n3"
	_, err = r.ResolveVolume(ctx, req)
	require.ErrorIs(t, err, domain.ErrNotResolved)
	assert.Contains(t, err.Error(), "lives on node n3, not on node n2")
}
