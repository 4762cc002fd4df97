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

// TestHeldOutDecisions logs virtkit's decisions on the held-out profile
// named by HELDOUT_PROFILE (skipped without it): a debugging aid.
func TestHeldOutDecisions(t *testing.T) {
	name := os.Getenv("HELDOUT_PROFILE")
	if name == "" {
		t.Skip("HELDOUT_PROFILE not set")
	}
	data, err := os.ReadFile("testdata/heldout-profiles.yaml")
	require.NoError(t, err)
	profiles, err := DecodeProfiles(data)
	require.NoError(t, err)
	for _, p := range profiles {
		if p.Name != name {
			continue
		}
		r, err := RunOne(context.Background(), p, "virtkit", Options{})
		require.NoError(t, err)
		for _, d := range r.Decisions {
			t.Logf("%6.1fs it=%d %s", d.Elapsed.Seconds(), d.Iteration.Or(0), d.Action.String())
		}
		t.Logf("%s %s total %.1f s sent %.2f M", r.Outcome, r.Mode, r.TotalSeconds, float64(r.BytesSent)/float64(r.MemoryBytes))
	}
}
