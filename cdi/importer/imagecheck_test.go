package importer_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cdi/importer"
	"github.com/virtkit/virtkit/internal/testenv"
)

const hostSecret = "HOST-SECRET-must-never-reach-a-tenant-disk"

// hostileImages writes a "host" file holding a secret and qcow2 images
// that name it as their external data file (raw and not) or as their
// backing file, plus a gzip of the data-file one. It returns the image
// directory and the host file.
func hostileImages(t *testing.T) (dir, secret string) {
	t.Helper()
	qemuImg := testenv.LookTool(t, "qemu-img", "qemu-utils")
	dir, host := t.TempDir(), t.TempDir()
	secret = filepath.Join(host, "secret")
	run := func(args ...string) {
		t.Helper()
		out, err := exec.Command(qemuImg, args...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	run("create", "-f", "qcow2", "-o", "data_file="+secret+",data_file_raw=on", filepath.Join(dir, "datafile-raw.qcow2"), "1M")
	run("create", "-f", "qcow2", "-o", "data_file="+secret, filepath.Join(dir, "datafile.qcow2"), "1M")
	// qemu-img create truncated the data file: the host's content comes
	// after, as it would on a real host.
	content := bytes.Repeat([]byte(hostSecret+"\n"), 1<<20/len(hostSecret))
	require.NoError(t, os.WriteFile(secret, content, 0o600))
	run("create", "-f", "qcow2", "-b", secret, "-F", "raw", filepath.Join(dir, "backing.qcow2"), "1M")
	q, err := os.ReadFile(filepath.Join(dir, "datafile-raw.qcow2"))
	require.NoError(t, err)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(q)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "datafile-raw.qcow2.gz"), gz.Bytes(), 0o644))
	return dir, secret
}

// noSecretUnder fails when any file under the directories holds the secret.
func noSecretUnder(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return nil
			}
			b, rerr := os.ReadFile(p)
			require.NoError(t, rerr)
			assert.NotContains(t, string(b), hostSecret, "host file content in %s", p)
			return nil
		})
	}
}

// An image that names a host file as its external data file or backing
// file is refused, over HTTP and compressed, and the host file's content
// never reaches the target or the scratch directory.
func TestImportRefusesExternalReferences(t *testing.T) {
	dir, _ := hostileImages(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	scratch := t.TempDir()
	im, err := importer.New(importer.Options{ScratchDir: scratch, AllowedNetworks: loopback})
	require.NoError(t, err)
	tests := []struct{ file, reason string }{
		{"datafile-raw.qcow2", "external data file"},
		{"datafile.qcow2", "external data file"},
		{"datafile-raw.qcow2.gz", "external data file"},
		{"backing.qcow2", "backing file"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			out := t.TempDir()
			target := filepath.Join(out, "disk.img")
			_, err := im.Import(context.Background(), importer.Request{HTTP: &importer.HTTPSource{URL: srv.URL + "/" + tt.file},
				Target: target, Size: 8 << 20, Key: tt.file})
			require.ErrorIs(t, err, importer.ErrExternalReference)
			assert.True(t, importer.Permanent(err))
			assert.Contains(t, err.Error(), tt.reason)
			_, serr := os.Stat(target)
			assert.True(t, os.IsNotExist(serr), "no target")
			noSecretUnder(t, out, scratch)
		})
	}
}

// A clone copies a raw disk byte for byte: a guest that wrote a qcow2
// header naming a host file into its disk gets that header back, never the
// host file.
func TestImportCloneIsRaw(t *testing.T) {
	dir, _ := hostileImages(t)
	out := t.TempDir()
	src := filepath.Join(dir, "datafile-raw.qcow2")
	want, err := os.ReadFile(src)
	require.NoError(t, err)
	im := newImporter(t)
	target := filepath.Join(out, "clone.img")
	_, err = im.Import(context.Background(), importer.Request{ClonePath: src, Target: target, Size: 8 << 20, Key: "clone"})
	require.NoError(t, err)
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, want, got[:len(want)], "the clone holds the source's bytes")
	noSecretUnder(t, out)
}

// Convert itself never opens a backing file, whatever the header names.
func TestQemuImgConvertIgnoresBackingFile(t *testing.T) {
	dir, _ := hostileImages(t)
	out := filepath.Join(t.TempDir(), "out.raw")
	require.NoError(t, importer.QemuImg{}.Convert(context.Background(), filepath.Join(dir, "backing.qcow2"), importer.FormatQcow2, out))
	noSecretUnder(t, filepath.Dir(out))
}
