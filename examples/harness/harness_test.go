// Package harness shows virtkit inside someone else's `go test`: the test
// starts an embedded control plane, creates VMs the way the code under test
// would, and asserts on the status KubeVirt would report. No daemon, no
// root: the hosts are simulated.
package harness

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
)

// startCluster is the harness: one call, cleaned up with the test.
func startCluster(t *testing.T, nodes int) *cluster.Cluster {
	t.Helper()
	c, err := cluster.New(cluster.Options{Nodes: nodes})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	// Placement uses the nodes that are Ready when a VMI is scheduled; wait
	// for all of them so the test sees the whole fleet, as a real cluster
	// would after its hosts have joined.
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	require.NoError(t, c.WaitNodesReady(wctx))
	return c
}

// newVM is what the code under test might build in Go rather than YAML.
func newVM(name string, strategy virtkit.VirtualMachineRunStrategy) *virtkit.VirtualMachine {
	mem := resource.MustParse("256Mi")
	return &virtkit.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant-a"},
		Spec: virtkit.VirtualMachineSpec{
			RunStrategy: &strategy,
			Template: &virtkit.VirtualMachineInstanceTemplateSpec{
				Spec: virtkit.VirtualMachineInstanceSpec{
					Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &mem}},
				},
			},
		},
	}
}

func TestFleetComesUpSpreadOverNodes(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	names := []string{"web-1", "web-2", "web-3", "db-1"}
	for _, n := range names {
		require.NoError(t, c.Apply(ctx, newVM(n, virtkit.RunStrategyAlways)))
	}
	nodes := map[string]int{}
	for _, n := range names {
		vm, err := c.WaitForVM(ctx, "tenant-a", n, func(vm *virtkit.VirtualMachine, found bool) bool {
			return found && vm.Status.Ready
		})
		require.NoError(t, err)
		require.Equal(t, virtkit.VirtualMachineStatusRunning, vm.Status.PrintableStatus)
		vmi, err := c.WaitForVMI(ctx, "tenant-a", n, cluster.VMIPhaseIs(virtkit.Running))
		require.NoError(t, err)
		nodes[vmi.Status.NodeName]++
	}
	// Least-allocated scoring spreads four equal guests over three hosts.
	require.Len(t, nodes, 3)
}

func TestHaltedVMHasNoInstance(t *testing.T) {
	c := startCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, c.Apply(ctx, newVM("idle", virtkit.RunStrategyHalted)))
	vm, err := c.WaitForVM(ctx, "tenant-a", "idle", cluster.VMPrintableStatusIs(virtkit.VirtualMachineStatusStopped))
	require.NoError(t, err)
	require.False(t, vm.Status.Created)
}
