package importer_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cdi/importer"
	"github.com/virtkit/virtkit/cdi/oci"
	"github.com/virtkit/virtkit/cdi/oci/ocitest"
)

// A registry DataVolume source on the real distribution registry: the
// qcow2 under /disk/ of a containerDisk image becomes a raw disk of the
// requested size.
func TestImportRegistryRealRegistry(t *testing.T) {
	dir, marker := fixtures(t)
	reg := ocitest.Start(t, "", "")
	q, err := os.ReadFile(filepath.Join(dir, "disk.qcow2"))
	require.NoError(t, err)
	img, err := ocitest.ContainerDisk(map[string][]byte{"disk/disk.qcow2": q})
	require.NoError(t, err)
	require.NoError(t, ocitest.Push(reg.Host+"/vm/disk:v1", img, nil))
	notDisk, err := ocitest.ContainerDisk(map[string][]byte{"disk/readme.txt": []byte("hello, this is not a disk\n")})
	require.NoError(t, err)
	require.NoError(t, ocitest.Push(reg.Host+"/vm/text:v1", notDisk, nil))

	p, err := oci.New(oci.Options{CacheDir: t.TempDir(), AllowedNetworks: loopback})
	require.NoError(t, err)
	im, err := importer.New(importer.Options{ScratchDir: t.TempDir(), Puller: p, AllowedNetworks: loopback})
	require.NoError(t, err)
	target := filepath.Join(t.TempDir(), "disk.img")
	res, err := im.Import(context.Background(), importer.Request{Registry: &importer.RegistrySource{Image: "docker://" + reg.Host + "/vm/disk:v1"},
		Target: target, Size: 6 << 20, Key: "r"})
	require.NoError(t, err)
	assert.Equal(t, importer.FormatQcow2, res.SourceFormat)
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Len(t, got, 6<<20)
	assert.Equal(t, marker, got[1<<20:1<<20+len(marker)])

	_, err = im.Import(context.Background(), importer.Request{Registry: &importer.RegistrySource{Image: "docker://" + reg.Host + "/vm/text:v1"},
		Target: filepath.Join(t.TempDir(), "t.img"), Key: "t"})
	require.ErrorIs(t, err, importer.ErrNotADisk)
	_, err = im.Import(context.Background(), importer.Request{Registry: &importer.RegistrySource{Image: "docker://" + reg.Host + "/vm/missing:v1"},
		Target: filepath.Join(t.TempDir(), "m.img"), Key: "m"})
	require.ErrorIs(t, err, oci.ErrNotFound)
	assert.True(t, importer.Permanent(err))
}

// A containerDisk whose qcow2 names a host file as its external data file
// is refused like an HTTP one; the host file never reaches the target.
func TestImportRegistryRefusesDataFile(t *testing.T) {
	dir, _ := hostileImages(t)
	reg := ocitest.Start(t, "", "")
	q, err := os.ReadFile(filepath.Join(dir, "datafile-raw.qcow2"))
	require.NoError(t, err)
	img, err := ocitest.ContainerDisk(map[string][]byte{"disk/disk.qcow2": q})
	require.NoError(t, err)
	require.NoError(t, ocitest.Push(reg.Host+"/vm/evil:v1", img, nil))
	p, err := oci.New(oci.Options{CacheDir: t.TempDir(), AllowedNetworks: loopback})
	require.NoError(t, err)
	scratch, out := t.TempDir(), t.TempDir()
	im, err := importer.New(importer.Options{ScratchDir: scratch, Puller: p, AllowedNetworks: loopback})
	require.NoError(t, err)
	_, err = im.Import(context.Background(), importer.Request{Registry: &importer.RegistrySource{Image: "docker://" + reg.Host + "/vm/evil:v1"},
		Target: filepath.Join(out, "disk.img"), Size: 8 << 20, Key: "evil"})
	require.ErrorIs(t, err, importer.ErrExternalReference)
	assert.Contains(t, err.Error(), "external data file")
	noSecretUnder(t, out, scratch)
}
