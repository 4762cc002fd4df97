package metrics_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/store"
)

func benchDomainXML(name string) string {
	return fmt.Sprintf(`<domain type='kvm'><name>%s</name><memory unit='MiB'>1024</memory><vcpu>2</vcpu>
<devices>
<disk type='file' device='disk'><source file='/var/lib/virtkit/%s.qcow2'/><target dev='vda' bus='virtio'/></disk>
<interface type='ethernet'><target dev='tap0'/></interface>
</devices></domain>`, name, name)
}

// oneFilesystem reports a root filesystem for every guest.
type oneFilesystem struct{}

func (oneFilesystem) FilesystemList(string, string) ([]metrics.GuestFilesystem, error) {
	return []metrics.GuestFilesystem{{DiskName: "vda1", MountPoint: "/", FileSystemType: "ext4", UsedBytes: 2 << 30, TotalBytes: 10 << 30}}, nil
}

// vmisPerNode is how many VMIs each simulated host runs in the benchmark,
// a typical density; the sim host's per-call cost grows with its domain
// count, so one host with thousands of domains would measure sim, not
// the collectors.
const vmisPerNode = 100

// scrapeCollectors builds a store with n Running VMIs spread over simulated
// hosts (on one virtual clock, so nothing runs in the background) and both
// collectors over them, each scraped once.
func scrapeCollectors(b *testing.B, n int) (*metrics.DomainCollector, *metrics.ControlPlaneCollector, metrics.DomainSources) {
	b.Helper()
	ctx := context.Background()
	clock := sim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st := store.NewMemory()
	var nodes []metrics.NodeSource
	var host *sim.Host
	for i := range n {
		if i%vmisPerNode == 0 {
			name := fmt.Sprintf("node-%d", i/vmisPerNode+1)
			host = sim.New(sim.Options{Name: name, Clock: clock, CPUs: 4 * vmisPerNode, MemoryBytes: vmisPerNode << 31})
			nodes = append(nodes, metrics.NodeSource{Name: name, Domains: host, Guest: oneFilesystem{}})
		}
		nodeName := nodes[len(nodes)-1].Name
		name := fmt.Sprintf("vm-%05d", i)
		dom := metrics.DomainName("bench", name)
		if _, err := host.Define(ctx, benchDomainXML(dom)); err != nil {
			b.Fatal(err)
		}
		if err := host.Start(ctx, dom, hypervisor.StartOptions{}); err != nil {
			b.Fatal(err)
		}
		vmi := &virtkit.VirtualMachineInstance{}
		vmi.Namespace, vmi.Name = "bench", name
		vmi.Labels = map[string]string{"app": fmt.Sprintf("app-%d", i%10), virtkit.NodeNameLabel: nodeName}
		vmi.Status.Phase = virtkit.Running
		vmi.Status.NodeName = nodeName
		vmi.Status.PhaseTransitionTimestamps = []virtkit.VirtualMachineInstancePhaseTransitionTimestamp{
			{Phase: virtkit.Pending, PhaseTransitionTimestamp: metav1.Now()},
			{Phase: virtkit.Running, PhaseTransitionTimestamp: metav1.Now()},
		}
		if err := st.Create(ctx, vmi); err != nil {
			b.Fatal(err)
		}
	}
	clock.Advance(10 * time.Second)
	// A deadline no benchmark run reaches: a scrape that left domains out
	// would measure less work.
	opts := metrics.Options{ScrapeTimeout: 10 * time.Minute}
	ds := metrics.DomainSources{Objects: st, Nodes: nodes}
	dom, err := metrics.NewDomainCollector(ds, opts)
	if err != nil {
		b.Fatal(err)
	}
	cp, err := metrics.NewControlPlaneCollector(metrics.ControlPlaneSources{Objects: st}, opts)
	if err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(dom, cp)
	// The first scrape also reads each domain's XML for its device names
	// (cached afterwards); keep it out of the measurement.
	if _, err := reg.Gather(); err != nil {
		b.Fatal(err)
	}
	return dom, cp, ds
}

// indexedCollectors are a domain and a control-plane collector over ds
// whose VMIs come from a started, complete VMIIndex instead of a listing
// per scrape, both streaming their per-VMI families (StartClusterHandler's
// set-up).
func indexedCollectors(b *testing.B, ds metrics.DomainSources) (*metrics.DomainCollector, *metrics.ControlPlaneCollector) {
	b.Helper()
	st := ds.Objects.(store.Store)
	x, err := metrics.NewVMIIndex(st, nil, metrics.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	go func() { _ = x.Start(ctx) }()
	var want virtkit.VirtualMachineInstanceList
	if err := st.List(ctx, &want, store.ListOptions{}); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		n := 0
		if x.RangeVMIs(func(*virtkit.VirtualMachineInstance) bool { n++; return true }) && n == len(want.Items) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the VMI index did not fill")
		}
	}
	ds.VMIs = x
	opts := metrics.Options{ScrapeTimeout: 10 * time.Minute}
	dom, err := metrics.NewDomainCollector(ds, opts)
	if err != nil {
		b.Fatal(err)
	}
	cp, err := metrics.NewControlPlaneCollector(metrics.ControlPlaneSources{Objects: st, VMIs: x, StreamVMIFamilies: true}, opts)
	if err != nil {
		b.Fatal(err)
	}
	return dom, cp
}

type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// BenchmarkScrape measures one scrape of n simulated VMIs, the way each
// handler serves it: "gather" is client_golang's Gather plus text encoding
// of both collectors (what promhttp does per request, Handler); "stream"
// gathers the control-plane collector and streams the per-VMI domain
// families (NewHandler); "stream-index" also streams the control plane's
// per-VMI object families and reads the VMIs from a VMIIndex instead of
// listing them (StartClusterHandler's way). Run with -benchtime=3x; see BENCHMARKS.md.
func BenchmarkScrape(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("vmis=%d", n), func(b *testing.B) { benchScrape(b, n) })
	}
}

func benchScrape(b *testing.B, n int) {
	{
		dom, cp, ds := scrapeCollectors(b, n)
		gatherReg := prometheus.NewRegistry()
		gatherReg.MustRegister(dom, cp)
		cpReg := prometheus.NewRegistry()
		cpReg.MustRegister(cp)
		idom, icp := indexedCollectors(b, ds)
		icpReg := prometheus.NewRegistry()
		icpReg.MustRegister(icp)
		handlers := map[string]http.Handler{
			"stream":       metrics.NewHandler(cpReg, dom),
			"stream-index": metrics.NewHandler(icpReg, idom, icp),
		}
		for _, mode := range []string{"gather", "stream", "stream-index"} {
			b.Run(mode, func(b *testing.B) {
				var bytes int
				scrape := func() {
					w := &countingWriter{}
					if h := handlers[mode]; h != nil {
						rec := &discardResponse{w: w, h: http.Header{}}
						h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
					} else {
						mfs, err := gatherReg.Gather()
						if err != nil {
							b.Fatal(err)
						}
						enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
						for _, mf := range mfs {
							if err := enc.Encode(mf); err != nil {
								b.Fatal(err)
							}
						}
					}
					bytes = w.n
				}
				scrape() // warm the label caches, as a steady scraper has
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := processCPU()
				for b.Loop() {
					scrape()
				}
				// CPU time is steadier than wall time on a shared machine.
				b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(bytes), "exposition-bytes")
			})
		}
	}
}

// discardResponse is an http.ResponseWriter that counts the body.
type discardResponse struct {
	w *countingWriter
	h http.Header
}

func (d *discardResponse) Header() http.Header         { return d.h }
func (d *discardResponse) Write(p []byte) (int, error) { return d.w.Write(p) }
func (d *discardResponse) WriteHeader(int)             {}

var _ io.Writer = (*countingWriter)(nil)

// processCPU is the process's user plus system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
