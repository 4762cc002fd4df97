package simulation

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/store"
)

func invariantsOf(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Invariant)
	}
	return out
}

// The checks see what the hosts do behind the control plane's back: a
// copy of a running guest started on a second host is a double run and a
// leaked domain; a crashed guest whose VMI still says Running is caught
// at quiescence only if nobody notices (here the agent does).
func TestCheckerCatchesGroundTruth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := NewHarness(ctx, HarnessOptions{Seed: 11})
	require.NoError(t, err)
	defer func() { require.NoError(t, h.Close()) }()
	u := asUser(ctx)
	require.NoError(t, h.Cluster.Apply(u, newVMI("vmi-0")))
	require.NoError(t, h.Advance(ctx, 10*time.Second))
	chk := newChecker(h)
	vs, err := chk.step(u, 0)
	require.NoError(t, err)
	require.Empty(t, vs)
	vs, err = chk.final(u, 0)
	require.NoError(t, err)
	require.Empty(t, vs, "a settled cluster with one guest breaks nothing")

	vmi := &virtkit.VirtualMachineInstance{}
	require.NoError(t, h.Store.Get(u, store.Key{Namespace: Namespace, Name: "vmi-0"}, vmi))
	xml, err := h.Host(vmi.Status.NodeName).XML(u, "sim_vmi-0")
	require.NoError(t, err)
	other := "node-1"
	if vmi.Status.NodeName == other {
		other = "node-2"
	}
	_, err = h.Host(other).Define(u, xml)
	require.NoError(t, err)
	require.NoError(t, h.Host(other).Start(u, "sim_vmi-0", hypervisor.StartOptions{}))
	require.NoError(t, h.Advance(ctx, time.Second))
	vs, err = chk.step(u, 1)
	require.NoError(t, err)
	assert.Equal(t, []string{InvDoubleRun}, invariantsOf(vs))
	vs, err = chk.final(u, 2)
	require.NoError(t, err)
	assert.Contains(t, invariantsOf(vs), InvLeakedDomain)
}

// Generate is a function of the seed and the switches.
func TestGenerateRepeats(t *testing.T) {
	a := Generate(Config{Seed: 5, Ops: 50})
	assert.Equal(t, a, Generate(Config{Seed: 5, Ops: 50}))
	assert.NotEqual(t, a, Generate(Config{Seed: 6, Ops: 50}))
	for _, op := range Generate(Config{Seed: 5, Ops: 200, Disabled: map[string]string{"migrate": "off"}}) {
		assert.NotEqual(t, "migrate", op.Name)
	}
}

// Without the hosts' watchdogs, an agent that stays down past the node
// health grace periods leaves its guest running while the VM controller
// starts the VMI again elsewhere: the checker sees the double run, and
// shrinking drops the steps that do not matter.
func TestShrinkKeepsTheFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the cluster a few dozen times")
	}
	ctx := context.Background()
	repro := []Op{
		{Name: "apply-vm", Target: "vm-0", Advance: 10000},
		{Name: "crash-agent", Target: "node-1", Advance: 400000},
	}
	noise := []Op{
		{Name: "apply-vmi", Target: "vmi-1", Advance: 2000},
		{Name: "apply-rs", Target: "rs-0", N: 1, Advance: 3000},
		{Name: "store-conflicts", N: 10, Advance: 1000},
		{Name: "apply-migration-policy", Target: "mp-0", N: 1, Advance: 1000},
	}
	ops := append(append([]Op{}, repro...), noise...)
	cfg := Config{Seed: 3, NoWatchdog: true}
	out, err := Run(ctx, cfg, ops)
	require.NoError(t, err)
	require.Contains(t, invariantsOf(out.Violations), InvDoubleRun)
	small, runs := Shrink(ctx, cfg, ops, InvDoubleRun, ShrinkBudget{Runs: 40})
	t.Logf("shrunk %d ops to %d in %d runs: %v", len(ops), len(small), runs, small)
	assert.Less(t, len(small), len(ops))
	out, err = Run(ctx, cfg, small)
	require.NoError(t, err)
	assert.Contains(t, invariantsOf(out.Violations), InvDoubleRun, "the shrunk log replays the failure")
}
