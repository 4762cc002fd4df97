package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

const benchVMs = 1000

// BenchmarkCreateToRunning1000 measures create-to-Running of 1,000 VMs
// (runStrategy Always) two ways in the same run: on etcd with one
// `virtkit controller` process and three `virtkit node` processes, and in
// one process on the memory store (cluster.MeasureScale, three simulated
// hosts). Latency runs from a VM's create call to its VMI being
// seen Running, as in cluster.MeasureScale. Run it with -benchtime=1x: one iteration is a whole fleet.
func BenchmarkCreateToRunning1000(b *testing.B) {
	b.Run("etcd-3-node-processes", func(b *testing.B) {
		for range b.N {
			r := measureMultiProcess(b, benchVMs)
			report(b, r.total, r.latencies)
			b.ReportMetric(r.controllerCPU.Seconds(), "controller-cpu-s")
			b.ReportMetric(r.nodesCPU.Seconds(), "nodes-cpu-s")
			b.ReportMetric(r.benchCPU.Seconds(), "etcd+client-cpu-s")
		}
	})
	b.Run("memory-1-process", func(b *testing.B) {
		for range b.N {
			ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
			r, err := cluster.MeasureScale(ctx, cluster.ScaleOptions{VMs: benchVMs, Nodes: 3, Workers: 8})
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(r.Throughput, "vms/s")
			b.ReportMetric(float64(r.P50.Milliseconds()), "p50-ms")
			b.ReportMetric(float64(r.P99.Milliseconds()), "p99-ms")
			b.ReportMetric(r.Total.Seconds(), "total-s")
		}
	})
}

func report(b *testing.B, total time.Duration, lat []time.Duration) {
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	b.ReportMetric(float64(len(lat))/total.Seconds(), "vms/s")
	b.ReportMetric(float64(pct(0.50).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(pct(0.99).Milliseconds()), "p99-ms")
	b.ReportMetric(total.Seconds(), "total-s")
}

type multiResult struct {
	total     time.Duration
	latencies []time.Duration
	// CPU time (user+system) of the controller process, of the three node
	// processes together, and of the benchmark process (embedded etcd
	// server, the creating client and its watch).
	controllerCPU, nodesCPU, benchCPU time.Duration
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchVM(name string) *virtkit.VirtualMachine {
	always := virtkit.RunStrategyAlways
	mem := resource.MustParse("64Mi")
	return &virtkit.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "scale"},
		Spec: virtkit.VirtualMachineSpec{
			RunStrategy: &always,
			Template: &virtkit.VirtualMachineInstanceTemplateSpec{
				Spec: virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &mem}}},
			},
		},
	}
}

func measureMultiProcess(b *testing.B, vms int) multiResult {
	b.StopTimer()
	c := newCluster(b)
	cpu0 := processCPU()
	// VIRTKIT_BENCH_PROFILE_DIR=DIR writes a CPU profile of every process
	// there (controller.pprof, node-a.pprof, ...).
	profile := func(name string) []string {
		if dir := os.Getenv("VIRTKIT_BENCH_PROFILE_DIR"); dir != "" {
			return []string{"--cpu-profile", filepath.Join(dir, name+".pprof")}
		}
		return nil
	}
	ctrl := c.start("controller", append([]string{"controller", "--store", c.store, "--workers", "8", "--leader-ttl", "5s"},
		profile("controller")...)...)
	var nodeProcs []*proc
	for _, n := range nodeNames {
		nodeProcs = append(nodeProcs, c.start(n, append([]string{"node", "--name", n, "--store", c.store, "--hypervisor", "sim",
			"--workers", "8", "--sim-cpus", "512", "--sim-memory", "512Gi", "--status-interval", "1m"}, profile(n)...)...))
	}
	c.waitFor("three ready nodes", time.Minute, func() (bool, string) {
		l := &virtkit.NodeList{}
		if err := c.st.List(b.Context(), l, store.ListOptions{}); err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, n := range l.Items {
			if virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady) {
				ready++
			}
		}
		return ready == len(nodeNames), fmt.Sprintf("%d ready", ready)
	})
	c.waitFor("a leader", time.Minute, func() (bool, string) { return c.leader(electionKey) != "", "" })

	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	names := make([]string, vms)
	for i := range names {
		names[i] = fmt.Sprintf("vm-%05d", i)
	}
	b.StartTimer()
	lat, total, err := cluster.MeasureCreateToRunning(ctx, c.st, names, 16, func(ctx context.Context, name string) error {
		return cluster.Apply(ctx, c.st, benchVM(name))
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	benchCPU := processCPU() - cpu0
	c.stopAll()
	r := multiResult{total: total, controllerCPU: ctrl.cpu(), benchCPU: benchCPU}
	for _, p := range nodeProcs {
		r.nodesCPU += p.cpu()
	}
	r.latencies = lat
	return r
}
