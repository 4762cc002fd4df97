package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Files lists a directory's manifests, sorted, and its subdirectories'
// only when recursive; Read refuses an object without a name.
func TestFilesAndRead(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	for _, f := range []string{"b.yaml", "a.JSON", "notes.txt", "sub/c.yml"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("{}"), 0o644))
	}
	files, err := Files(dir, false)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "a.JSON"), filepath.Join(dir, "b.yaml")}, files)
	files, err = Files(dir, true)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "a.JSON"), filepath.Join(dir, "b.yaml"), filepath.Join(dir, "sub", "c.yml")}, files)
	_, err = Files(filepath.Join(dir, "missing"), false)
	require.Error(t, err)

	objs, err := Read(strings.NewReader("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n"), []string{"-"})
	require.NoError(t, err)
	require.Len(t, objs, 1)
	assert.Equal(t, "a", objs[0].GetName())
	_, err = Read(strings.NewReader("apiVersion: v1\nkind: ConfigMap\n"), []string{"-"})
	require.ErrorContains(t, err, "<stdin>: document 0: apiVersion, kind and metadata.name are required")
}
