package bench

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHeldOut runs every policy on the held-out adversarial profiles
// (testdata/heldout-profiles.yaml, none of which the policy is tuned on)
// with libvirt's capabilities and logs the comparison; -v shows it.
func TestHeldOut(t *testing.T) {
	data, err := os.ReadFile("testdata/heldout-profiles.yaml")
	require.NoError(t, err)
	profiles, err := DecodeProfiles(data)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(profiles), 15)
	rows, err := Run(context.Background(), profiles, PolicyNames(), Options{})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, WriteComparison(&buf, profiles, rows))
	t.Log("\n" + buf.String())
	buf.Reset()
	require.NoError(t, WriteTable(&buf, rows))
	t.Log("\n" + buf.String())
}
