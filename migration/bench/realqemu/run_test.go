package realqemu

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/migration"
	"github.com/virtkit/virtkit/migration/bench"
)

func TestRunOptionsRequired(t *testing.T) {
	ctx := context.Background()
	ps := []bench.Profile{profile("128Mi", "64Mi", "0")}
	_, err := Run(ctx, ps, []string{"virtkit"}, Options{})
	assert.ErrorContains(t, err, "Options.Source")
	src, dst := sim.New(sim.Options{Name: "a"}), sim.New(sim.Options{Name: "b"})
	_, err = Run(ctx, ps, []string{"virtkit"}, Options{Source: src, Target: dst, TargetURI: "b"})
	assert.ErrorContains(t, err, "Options.Kernel")
	_, err = Run(ctx, ps, []string{"nope"}, Options{Source: src, Target: dst, TargetURI: "b", Kernel: "k", Initrd: "i"})
	assert.ErrorIs(t, err, bench.ErrUnknownPolicy)
	_, err = Run(ctx, []bench.Profile{profile("64Mi", "64Mi", "0")}, []string{"virtkit"}, Options{Source: src, Target: dst, TargetURI: "b", Kernel: "k", Initrd: "i"})
	assert.ErrorIs(t, err, bench.ErrInvalidProfile)
}

// TestRunOnSim drives the runner's whole loop (boot, agent, engine with
// each policy, rows, clean-up on both hosts) over the hypervisor
// interfaces, with sim hosts in real time standing in for the daemons.
func TestRunOnSim(t *testing.T) {
	src, dst := sim.New(sim.Options{Name: "a"}), sim.New(sim.Options{Name: "b"})
	require.NoError(t, sim.NewNetwork().Connect(src, dst, sim.Link{Bandwidth: 1 << 30}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var progress bytes.Buffer
	rows, err := Run(ctx, []bench.Profile{profile("128Mi", "512Mi", "0")}, []string{"virtkit", "kubevirt"}, Options{
		Source: src, Target: dst, TargetURI: "b", Kernel: "/k/vmlinuz", Initrd: "/k/initrd", Progress: &progress,
		MaxTime: 30 * time.Second, LinkBandwidth: 1 << 30,
	})
	require.NoError(t, err)
	require.Len(t, rows, 2)
	for _, r := range rows {
		assert.Equal(t, string(migration.OutcomeSucceeded), r.Outcome, r.Reason)
		assert.Equal(t, 0.25, r.LowerBoundSeconds, "128 MiB at 512 MiB/s")
		assert.NotNil(t, r.DowntimeMs)
	}
	assert.Equal(t, []string{"virtkit", "kubevirt"}, []string{rows[0].Policy, rows[1].Policy})
	assert.Contains(t, progress.String(), "p/virtkit: Succeeded PreCopy")
	// Each run lists the engine's calls: what each policy started the job
	// with (under the 512 MiB/s cap on a link twice as fast, virtkit gives
	// QEMU the configured 300 ms, as KubeVirt does; see the capped-pause
	// rule of the migration package).
	assert.Regexp(t, `(?s)p/virtkit: .*migration calls \(s from the engine's start\): \d+\.\d\d MigrationCapabilities \(\d+ ms\), \d+\.\d\d StartMigration\{bandwidth 512 MiB/s, downtime 300ms\} \(job seen after \d+ ms\)`, progress.String())
	assert.Regexp(t, `(?s)p/kubevirt: .*StartMigration\{bandwidth 512 MiB/s, downtime 300ms\}`, progress.String())
	for _, h := range []*sim.Host{src, dst} {
		doms, err := h.List(ctx)
		require.NoError(t, err)
		assert.Empty(t, doms, "the runner removes its guests from %s", h.Name())
	}
}

// TestRunCapsAMigration: a migration that cannot end is aborted at MaxTime
// and reported as failed with the cap as the reason.
func TestRunCapsAMigration(t *testing.T) {
	src, dst := sim.New(sim.Options{Name: "a"}), sim.New(sim.Options{Name: "b"})
	require.NoError(t, sim.NewNetwork().Connect(src, dst, sim.Link{Bandwidth: 1 << 30}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Nova waits 800 s per GiB; 1 MiB/s for 128 MiB takes minutes.
	var progress bytes.Buffer
	rows, err := Run(ctx, []bench.Profile{profile("128Mi", "1Mi", "0")}, []string{"nova"}, Options{
		Source: src, Target: dst, TargetURI: "b", Kernel: "k", Initrd: "i", MaxTime: 2 * time.Second, Progress: &progress,
	})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, string(migration.OutcomeFailed), rows[0].Outcome)
	assert.Contains(t, rows[0].Reason, "the benchmark's time cap of 2s")
	assert.Contains(t, progress.String(), " Abort, ", "the cap's abort is among the recorded calls")
	doms, err := src.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, doms)
}
