package node_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/store"
)

// startCPUCluster runs sim hosts with the given (modelled) CPUs on one
// network.
func startCPUCluster(t *testing.T, cpus map[string]sim.CPU, mo controller.MigrationOptions) *migCluster {
	t.Helper()
	names := make([]string, 0, len(cpus))
	for name := range cpus {
		names = append(names, name)
	}
	return startMigClusterHosts(t, names, func(name string) sim.Options { return sim.Options{Name: name, CPU: cpus[name]} },
		sim.Link{Bandwidth: 2 << 30}, mo, nil)
}

// The node agents publish their hosts' (modelled) CPUs as Node labels, and
// the migration controller only targets nodes that can run the guest's
// CPU: a host-model guest moves to the node with the source's host model,
// a host-passthrough guest with no identical CPU elsewhere pends with the
// reason.
func TestMigrationTargetsFollowTheCPUModelOnSim(t *testing.T) {
	skylake := sim.DefaultCPU()
	skylakeNoAVX := sim.DefaultCPU()
	skylakeNoAVX.Features = skylakeNoAVX.Features[1:]
	epyc := sim.CPU{HostModel: "EPYC", Vendor: "AMD", UsableModels: []string{"qemu64", "EPYC"}, Features: []string{"svm", "npt"}}
	c := startCPUCluster(t, map[string]sim.CPU{"intel-a": skylake, "amd-1": epyc, "amd-2": epyc, "intel-b": skylakeNoAVX},
		controller.MigrationOptions{UnschedulableTimeout: time.Hour})

	// Every agent published its CPU.
	for _, name := range []string{"intel-a", "amd-1", "amd-2", "intel-b"} {
		n := &virtkit.Node{}
		_, err := cluster.WaitFor(c.ctx, c.Store(), store.Key{Name: name}, func() *virtkit.Node { return &virtkit.Node{} }, &virtkit.NodeList{},
			func(got *virtkit.Node, found bool) bool {
				*n = *got
				return found && got.Labels[virtkit.HostCPUSourceLabel] != ""
			})
		require.NoError(t, err, name)
		assert.Equal(t, virtkit.HostCPUSourceModelled, n.Labels[virtkit.HostCPUSourceLabel], name)
		assert.NotEmpty(t, n.Labels[virtkit.HostCPUSignatureLabel], name)
	}

	onIntelA := func(name, model string) *virtkit.VirtualMachineInstance {
		vmi := migratableVMI(name, "128Mi")
		vmi.Spec.NodeSelector = map[string]string{virtkit.HostnameLabel: "intel-a"}
		vmi.Spec.Domain.CPU = &virtkit.CPU{Model: model}
		got := c.runningVMI(t, vmi)
		// Placed: the pin goes, so only the CPU restricts the target.
		for {
			cur := &virtkit.VirtualMachineInstance{}
			require.NoError(t, c.Store().Get(c.ctx, store.KeyOf(got), cur))
			cur.Spec.NodeSelector = nil
			err := c.Store().Update(c.ctx, cur)
			if !errors.Is(err, store.ErrConflict) {
				require.NoError(t, err)
				return cur
			}
		}
	}

	hm := onIntelA("hm", virtkit.CPUModeHostModel)
	mig, err := actions.Migrate(c.ctx, c.Store(), store.KeyOf(hm), actions.MigrateOptions{})
	require.NoError(t, err)
	done := c.waitMigration(t, mig, "final", isReleased)
	require.Equal(t, virtkit.MigrationSucceeded, done.Status.Phase, "state: %+v", done.Status.MigrationState)
	assert.Equal(t, "intel-b", done.Status.MigrationState.TargetNode, "the only other node that runs Skylake-Client-IBRS")

	pt := onIntelA("pt", virtkit.CPUModeHostPassthrough)
	mig, err = actions.Migrate(c.ctx, c.Store(), store.KeyOf(pt), actions.MigrateOptions{})
	require.NoError(t, err)
	pending := c.waitMigration(t, mig, "unschedulable", func(m *virtkit.VirtualMachineInstanceMigration, found bool) bool {
		return found && virtkit.GetCondition(m.Status.Conditions, virtkit.VirtualMachineInstancePodScheduled) != nil
	})
	assert.Equal(t, virtkit.MigrationScheduling, pending.Status.Phase)
	cond := virtkit.GetCondition(pending.Status.Conditions, virtkit.VirtualMachineInstancePodScheduled)
	assert.Equal(t, virtkit.ConditionFalse, cond.Status)
	assert.Contains(t, cond.Message, "host-passthrough needs the source's exact host CPU")
}
