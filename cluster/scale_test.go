package cluster_test

import (
	"context"
	"flag"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cluster"
)

var scaleVMs = flag.Int("scale-vms", 1000, "fleet size for BenchmarkCreateToRunning")

func TestMeasureScaleSmall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := cluster.MeasureScale(ctx, cluster.ScaleOptions{VMs: 40, Nodes: 2})
	require.NoError(t, err)
	require.Equal(t, 40, r.VMs)
	require.Positive(t, r.Throughput)
	require.LessOrEqual(t, r.P50, r.P99)
	require.LessOrEqual(t, r.P99, r.Max)
	require.GreaterOrEqual(t, r.Reconciles, uint64(40*3), "at least VM, VMI and node reconciles per VM")
}

// The protocol's write budget, over a whole create-to-Running of a fleet
// on simulated hosts: the user's VM create, the VM controller's finalizer,
// VMI create and status writes, placement, the node agent's take-over and
// Running, with nothing written in a loop. It counts every VM and VMI write
// through a counting store; the scale benchmark reports the same numbers
// for bigger fleets (BENCHMARKS.md).
func TestScaleWriteBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 300-VM cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const vms = 300
	r, err := cluster.MeasureScale(ctx, cluster.ScaleOptions{VMs: vms, Nodes: 3})
	require.NoError(t, err)
	t.Logf("writes/VM %.2f reconciles/VM %.2f store %+v controllers %+v", r.WritesPerVM, r.ReconcilesPerVM, r.Store, r.Controllers)
	assert.LessOrEqual(t, r.WritesPerVM, 8.0, "VM and VMI writes per VM")
	assert.LessOrEqual(t, r.ReconcilesPerVM, 12.0, "reconciles per VM, all controllers and node agents")
	assert.GreaterOrEqual(t, r.WritesPerVM, 4.0, "at least the create, the VMI create, placement and Running are counted")
}

// BenchmarkCreateToRunning reports create-to-Running for a fleet of VMs on
// four simulated hosts. Run with -benchtime=1x; see BENCHMARKS.md.
func BenchmarkCreateToRunning(b *testing.B) {
	for _, n := range []int{*scaleVMs} {
		b.Run("vms="+strconv.Itoa(n), func(b *testing.B) {
			for range b.N {
				r, err := cluster.MeasureScale(context.Background(), cluster.ScaleOptions{VMs: n, Nodes: 4})
				require.NoError(b, err)
				b.ReportMetric(r.Throughput, "vms/s")
				b.ReportMetric(float64(r.P50.Milliseconds()), "p50-ms")
				b.ReportMetric(float64(r.P99.Milliseconds()), "p99-ms")
				b.ReportMetric(float64(r.HeapPerVMI), "heap-B/vmi")
				b.ReportMetric(r.ReconcilesPerSec, "reconciles/s")
				b.ReportMetric(r.WritesPerVM, "writes/vm")
				b.ReportMetric(r.ReconcilesPerVM, "reconciles/vm")
				b.ReportMetric(float64(r.CPUPerVM.Microseconds()), "cpu-us/vm")
			}
		})
	}
}
