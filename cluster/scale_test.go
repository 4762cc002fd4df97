package cluster_test

import (
	"context"
	"flag"
	"strconv"
	"testing"
	"time"

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
			}
		})
	}
}
