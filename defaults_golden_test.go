package virtkit

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// TestDefaultsGolden shows what SetDefaults does to whole manifests: the
// defaulted objects, encoded, must equal testdata/defaults-output.golden.yaml
// (regenerate with go test -run TestDefaultsGolden -update .).
func TestDefaultsGolden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "defaults-input.yaml"))
	require.NoError(t, err)
	objs, err := DecodeBytes(in)
	require.NoError(t, err)
	for _, obj := range objs {
		DefaultOptions{NewUUID: fixedUUID}.SetDefaults(obj)
		require.Empty(t, Validate(obj), "%s", obj.GetName())
	}
	var out bytes.Buffer
	require.NoError(t, Encode(&out, objs...))
	golden := filepath.Join("testdata", "defaults-output.golden.yaml")
	if *update {
		require.NoError(t, os.WriteFile(golden, out.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run with -update to create it")
	assert.Equal(t, string(want), out.String())
}
