package importer_test

import (
	"net/netip"
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

// loopback lets tests reach their servers on loopback, which the address
// policy refuses by default.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
