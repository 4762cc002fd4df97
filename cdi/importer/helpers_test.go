package importer_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func fileTime(t *testing.T, dir string) time.Time {
	t.Helper()
	st, err := os.Stat(filepath.Join(dir, "disk.raw"))
	require.NoError(t, err)
	return st.ModTime()
}
