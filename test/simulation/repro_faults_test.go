package simulation

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Shrunk seeds of the node-agent faults (crash-agent, partition, freeze),
// replayed with every operation enabled: each broke an invariant before
// the fix named in its comment.
func TestReproAgentFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the cluster once per reproduction")
	}
	for _, tc := range []struct {
		file string
		why  string
	}{
		{
			// The source agent died after the switchover, before it
			// recorded the outcome; restarted, it failed the migration
			// ("the source node agent restarted") and the VMI ("domain
			// disappeared") while the guest ran on the target, which kept
			// it: ground-truth and leaked-domain. The restarted source now
			// records the end of a migration whose guest left, and the
			// target takes the VMI over.
			file: "source-agent-died-after-switchover.json",
			why:  "a restarted source agent whose guest left records the migration's end",
		},
		{
			// A migration admitted while the VMI was being deleted kept
			// the old incarnation's node as its source; the VM created the
			// VMI again on another node and the migration was handed off
			// to it with the stale source, so neither node acted and it
			// stayed in TargetReady for good. It now fails once the VMI is
			// no longer on its source.
			file: "migration-of-replaced-vmi.json",
			why:  "a migration whose VMI left its source node fails",
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r, err := ReadRepro(filepath.Join("testdata", "repro", tc.file))
			require.NoError(t, err)
			out, err := Run(context.Background(), Config{Seed: r.Seed, Disabled: map[string]string{}}, r.Ops)
			require.NoError(t, err)
			assert.Empty(t, out.Violations, "%s: %s", tc.file, tc.why)
		})
	}
}
