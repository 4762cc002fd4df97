package importer_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cdi/importer"
	"github.com/virtkit/virtkit/internal/testenv"
)

// Convert called directly, past the importer's header checks, on a qcow2
// whose external data file is a host file: unconfined, qemu-img copies the
// host file into the output (which is what the header checks prevent);
// confined, it cannot open the host file and the output never holds its
// bytes.
func TestQemuImgSandboxConfinesConvert(t *testing.T) {
	dir, _ := hostileImages(t)
	bwrap := testenv.LookTool(t, "bwrap", "bubblewrap")
	tests := []struct {
		name    string
		q       importer.QemuImg
		leaks   bool
		wantErr bool
	}{
		{"bwrap", importer.QemuImg{Sandbox: importer.SandboxBwrap, Bwrap: bwrap}, false, true},
		{"auto", importer.QemuImg{}, false, true},
		{"none", importer.QemuImg{Sandbox: importer.SandboxNone}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.raw")
			err := tt.q.Convert(context.Background(), filepath.Join(dir, "datafile-raw.qcow2"), importer.FormatQcow2, out)
			if tt.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "No such file or directory", "qemu-img did not find the host file")
			} else {
				require.NoError(t, err)
			}
			b, rerr := os.ReadFile(out)
			if rerr != nil {
				require.ErrorIs(t, rerr, os.ErrNotExist)
			}
			assert.Equal(t, tt.leaks, containsSecret(b), "host file content in the output")
		})
	}
}

// A confined qemu-img still does its work: info, convert and resize of a
// clean image, with the image and the output as its only files.
func TestQemuImgSandboxConvertsCleanImage(t *testing.T) {
	testenv.LookTool(t, "bwrap", "bubblewrap")
	src := cleanQcow2(t)
	q := importer.QemuImg{Sandbox: importer.SandboxBwrap}
	mode, err := q.Confinement()
	require.NoError(t, err)
	assert.Equal(t, importer.SandboxBwrap, mode)
	ctx := context.Background()
	info, err := q.Info(ctx, src, importer.FormatQcow2)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<20), info.VirtualSize)
	out := filepath.Join(t.TempDir(), "out.raw")
	require.NoError(t, q.Convert(ctx, src, importer.FormatQcow2, out))
	require.NoError(t, q.Resize(ctx, out, 2<<20))
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Len(t, b, 2<<20)
	assert.Equal(t, byte(0x41), b[0])
	assert.Equal(t, byte(0), b[1<<20])
}

// A sandbox asked for but missing, or unknown, is an error naming the
// field, from Confinement and from New.
func TestQemuImgSandboxUnavailable(t *testing.T) {
	tests := []struct {
		name string
		q    importer.QemuImg
	}{
		{"missing bwrap", importer.QemuImg{Sandbox: importer.SandboxBwrap, Bwrap: filepath.Join(t.TempDir(), "no-bwrap")}},
		{"unknown", importer.QemuImg{Sandbox: "chroot"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.q.Confinement()
			require.ErrorIs(t, err, importer.ErrNoSandbox)
			_, err = importer.New(importer.Options{ScratchDir: t.TempDir(), QemuImg: tt.q})
			require.ErrorIs(t, err, importer.ErrNoSandbox)
			assert.Contains(t, err.Error(), "QemuImg")
		})
	}
	mode, err := importer.QemuImg{Bwrap: filepath.Join(t.TempDir(), "no-bwrap")}.Confinement()
	require.NoError(t, err)
	assert.Equal(t, importer.SandboxNone, mode, "auto falls back when bwrap is missing")
}

func containsSecret(b []byte) bool {
	return bytes.Contains(b, []byte(hostSecret))
}

// cleanQcow2 writes a 1 MiB qcow2 whose first 4 KiB are 'A'.
func cleanQcow2(t *testing.T) string {
	t.Helper()
	qemuImg := testenv.LookTool(t, "qemu-img", "qemu-utils")
	dir := t.TempDir()
	raw := make([]byte, 1<<20)
	copy(raw, bytes.Repeat([]byte{0x41}, 4096))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "in.raw"), raw, 0o644))
	out, err := exec.Command(qemuImg, "convert", "-f", "raw", "-O", "qcow2", filepath.Join(dir, "in.raw"), filepath.Join(dir, "clean.qcow2")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return filepath.Join(dir, "clean.qcow2")
}

// A sandbox that cannot be set up fails the run with ErrNoSandbox, not as
// a bad image.
func TestQemuImgSandboxSetupFailure(t *testing.T) {
	bwrap := testenv.LookTool(t, "bwrap", "bubblewrap")
	src := cleanQcow2(t)
	// A wrapper that passes bwrap an option it refuses.
	wrapper := filepath.Join(t.TempDir(), "bwrap")
	require.NoError(t, os.WriteFile(wrapper, []byte("#!/bin/sh\nexec "+bwrap+" --no-such-option \"$@\"\n"), 0o755))
	q := importer.QemuImg{Sandbox: importer.SandboxBwrap, Bwrap: wrapper}
	_, err := q.Info(context.Background(), src, importer.FormatQcow2)
	require.ErrorIs(t, err, importer.ErrNoSandbox)
	assert.False(t, importer.Permanent(err), "the image is not at fault")
}
