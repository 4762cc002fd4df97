package domain

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/internal/testenv"
)

func TestQcow2QemuImg(t *testing.T) {
	qemuImg := testenv.LookTool(t, "qemu-img", "Debian qemu-utils")
	dir := t.TempDir()
	base := filepath.Join(dir, "base.raw")
	require.NoError(t, os.WriteFile(base, make([]byte, 1<<20), 0o644))
	for _, tc := range []struct {
		name          string
		size          uint64
		backing, bfmt string
	}{
		{"small", 1 << 20, "", ""},
		{"odd", 1<<30 + 512, "", ""},
		{"large", 5 << 40, "", ""},
		{"overlay", 1 << 20, base, "raw"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, writeQcow2(&buf, tc.size, tc.backing, tc.bfmt))
			p := filepath.Join(dir, tc.name+".qcow2")
			require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
			out, err := exec.Command(qemuImg, "check", p).CombinedOutput()
			require.NoError(t, err, string(out))
			out, err = exec.Command(qemuImg, "info", "--output=json", p).Output()
			require.NoError(t, err)
			var info struct {
				VirtualSize   uint64 `json:"virtual-size"`
				Format        string `json:"format"`
				BackingFile   string `json:"backing-filename"`
				BackingFormat string `json:"backing-filename-format"`
			}
			require.NoError(t, json.Unmarshal(out, &info))
			assert.Equal(t, tc.size, info.VirtualSize)
			assert.Equal(t, "qcow2", info.Format)
			assert.Equal(t, tc.backing, info.BackingFile)
			assert.Equal(t, tc.bfmt, info.BackingFormat)
			got, ok := qcow2VirtualSize(buf.Bytes())
			assert.True(t, ok)
			assert.Equal(t, tc.size, got)
		})
	}
}

func TestQcow2Rejects(t *testing.T) {
	assert.Error(t, writeQcow2(&bytes.Buffer{}, 0, "", ""))
	_, ok := qcow2VirtualSize([]byte("not a qcow2 header, not at all....."))
	assert.False(t, ok)
}

func TestDiskLetters(t *testing.T) {
	for i, want := range map[int]string{0: "a", 1: "b", 25: "z", 26: "aa", 27: "ab", 51: "az", 52: "ba", 701: "zz", 702: "aaa"} {
		assert.Equal(t, want, diskLetters(i), i)
	}
	a := newTargetAllocator("vdb")
	n, _ := a.allocate("vd")
	assert.Equal(t, "vda", n)
	n, _ = a.allocate("vd")
	assert.Equal(t, "vdc", n)
	n, _ = a.allocate("sd")
	assert.Equal(t, "sda", n)
	assert.False(t, a.reserve("sda"))
	assert.True(t, a.reserve("sdz"))
}
