package importer_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cdi/importer"
	"github.com/virtkit/virtkit/cdi/oci"
	"github.com/virtkit/virtkit/cdi/oci/ocitest"
)

// benchImage writes a qcow2 of size bytes, half of it random data (so
// neither side can skip it as holes), made with qemu-img.
func benchImage(b *testing.B, dir string, size int) string {
	b.Helper()
	if _, err := exec.LookPath("qemu-img"); err != nil {
		b.Skip("qemu-img not installed")
	}
	raw := make([]byte, size)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < size/2; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			raw[i+j] = byte(v >> (8 * j))
		}
	}
	rawPath := filepath.Join(dir, "disk.raw")
	require.NoError(b, os.WriteFile(rawPath, raw, 0o644))
	q := filepath.Join(dir, "disk.qcow2")
	out, err := exec.Command("qemu-img", "convert", "-f", "raw", "-O", "qcow2", rawPath, q).CombinedOutput()
	require.NoError(b, err, string(out))
	return q
}

// BenchmarkHTTPImport compares an HTTP DataVolume import (download from a
// loopback server, detection, qemu-img conversion to raw) with qemu-img
// convert of the same local qcow2: the import's overhead over the floor.
func BenchmarkHTTPImport(b *testing.B) {
	const size = 128 << 20
	dir := b.TempDir()
	q := benchImage(b, dir, size)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	out := b.TempDir()
	b.Run("import-http", func(b *testing.B) {
		im, err := importer.New(importer.Options{ScratchDir: b.TempDir(), AllowedNetworks: loopback})
		require.NoError(b, err)
		b.SetBytes(size)
		for i := 0; b.Loop(); i++ {
			_, err := im.Import(context.Background(), importer.Request{HTTP: &importer.HTTPSource{URL: srv.URL + "/disk.qcow2"},
				Target: filepath.Join(out, "dv.img"), Key: strconv.Itoa(i)})
			require.NoError(b, err)
		}
	})
	b.Run("qemu-img-convert", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			o, err := exec.Command("qemu-img", "convert", "-t", "writeback", "-f", "qcow2", "-O", "raw", q, filepath.Join(out, "plain.img")).CombinedOutput()
			require.NoError(b, err, string(o))
		}
	})
}

// BenchmarkRegistryPull pulls a containerDisk from the real distribution
// registry: cold (empty cache: manifest, layer download, extraction), warm
// with policy Always (manifest round trip, digest cache hit) and warm with
// IfNotPresent (no network).
func BenchmarkRegistryPull(b *testing.B) {
	const size = 64 << 20
	dir := b.TempDir()
	q := benchImage(b, dir, size)
	reg := ocitest.Start(b, "", "")
	data, err := os.ReadFile(q)
	require.NoError(b, err)
	img, err := ocitest.ContainerDisk(map[string][]byte{"disk/disk.qcow2": data})
	require.NoError(b, err)
	ref := reg.Host + "/bench/disk:v1"
	require.NoError(b, ocitest.Push(ref, img, nil))
	ctx := context.Background()
	b.Run("cold", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			p, err := oci.New(oci.Options{CacheDir: b.TempDir(), AllowedNetworks: loopback})
			require.NoError(b, err)
			_, err = p.Pull(ctx, oci.Request{Image: ref})
			require.NoError(b, err)
		}
	})
	for _, policy := range []string{oci.PullAlways, oci.PullIfNotPresent} {
		b.Run("warm-"+policy, func(b *testing.B) {
			p, err := oci.New(oci.Options{CacheDir: b.TempDir(), AllowedNetworks: loopback})
			require.NoError(b, err)
			_, err = p.Pull(ctx, oci.Request{Image: ref})
			require.NoError(b, err)
			for b.Loop() {
				res, err := p.Pull(ctx, oci.Request{Image: ref, Policy: policy})
				require.NoError(b, err)
				if !res.Cached {
					b.Fatal("warm pull was not served from the cache")
				}
			}
		})
	}
}
