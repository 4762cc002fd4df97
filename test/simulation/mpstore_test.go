package simulation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A node process restarted while it is partitioned from etcd waits for the
// store (it does not exit: no cluster-exited violation), does not serve its
// host meanwhile (a guest fault skips it rather than failing), and joins
// once the partition heals.
func TestMultiProcessRestartWhilePartitioned(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process simulation: not in -short")
	}
	etcdBin, bin := mpBinaries(t)
	const always5s = 4 // apply-vm's n: RunStrategy Always with a 5 s grace period
	ops := []Op{
		{Name: "apply-vm", Target: "vm-0", N: always5s, Advance: 6000},
		{Name: "partition", Target: "node-1", Advance: 500},
		{Name: "crash-agent", Target: "node-1"},
		// Longer than the first attempt's deadline to reach etcd (5 s).
		{Name: "restart-agent", Target: "node-1", Advance: 8000},
		{Name: "crash-guest", Target: "vm-0", Advance: 1000},
		{Name: "heal", Target: "node-1", Advance: 5000},
	}
	out, err := RunMultiProcess(t.Context(), Config{Seed: 1}, ops, MultiProcessOptions{Binary: bin, EtcdBinary: etcdBin,
		Dir: t.TempDir(), TimeScale: 1, MaxPause: 20 * time.Second})
	if err != nil || out.Failed() || len(out.Errors) > 0 {
		t.Logf("processes' logs:\n%s", out.Logs)
	}
	require.NoError(t, err)
	require.Empty(t, out.Violations)
	require.Empty(t, out.Errors)
	t.Log(out.Summary)
}
