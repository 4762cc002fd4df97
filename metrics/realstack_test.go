//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package metrics_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/libvirt"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
	"github.com/virtkit/virtkit/internal/promcheck"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/store"
)

// renamed maps the collector's "<namespace>_<name>" domain names to the
// test's own.
type renamed struct {
	h     hypervisor.Hypervisor
	names map[string]string
}

func (r renamed) Stats(ctx context.Context, name string) (hypervisor.DomainStats, error) {
	if n, ok := r.names[name]; ok {
		name = n
	}
	return r.h.Stats(ctx, name)
}

// NodeMemory is the host's, unrenamed.
func (r renamed) NodeMemory(ctx context.Context) (hypervisor.NodeMemory, error) {
	nm, ok := r.h.(hypervisor.NodeMemoryReporter)
	if !ok {
		return hypervisor.NodeMemory{}, hypervisor.NotSupportedError("node memory", "hypervisor")
	}
	return nm.NodeMemory(ctx)
}

// gatherValues returns the single series' value of each named family.
func gatherValues(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if len(mf.GetMetric()) != 1 {
			continue
		}
		m := mf.GetMetric()[0]
		switch {
		case m.GetCounter() != nil:
			out[mf.GetName()] = m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			out[mf.GetName()] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestRealGuestMetrics boots the tiny TCG guest on the real libvirtd and
// checks the exported values against libvirt's own numbers for it.
func TestRealGuestMetrics(t *testing.T) {
	g := libvirttest.RequireStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h, err := libvirt.New(ctx, libvirt.Options{URI: libvirttest.SourceURI})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })

	const ns, name, nodeName = "metrics-realstack", "guest", "real-node"
	// No '_' in the libvirt name: node agents of other tests sharing this
	// libvirtd remove "<namespace>_<name>" domains their store lacks.
	const dom = "vkt-metrics-guest"
	cleanup := func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = h.Destroy(c, dom)
		_ = h.Undefine(c, dom)
	}
	cleanup()
	t.Cleanup(cleanup)
	_, err = h.Define(ctx, g.DomainXML(dom, libvirttest.GuestOptions{}))
	require.NoError(t, err)
	require.NoError(t, h.Start(ctx, dom, hypervisor.StartOptions{}))
	// Balloon statistics need the guest's virtio_balloon driver, loaded
	// before the agent starts.
	require.NoError(t, libvirttest.WaitAgent(ctx, h, dom))

	st := store.NewMemory()
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name = ns, name
	vmi.Status.Phase, vmi.Status.NodeName = virtkit.Running, nodeName
	require.NoError(t, st.Create(ctx, vmi))
	c, err := metrics.NewDomainCollector(metrics.DomainSources{Objects: st,
		Nodes: []metrics.NodeSource{{Name: nodeName, Domains: renamed{h, map[string]string{metrics.DomainName(ns, name): dom}}}}}, metrics.Options{ScrapeTimeout: 20 * time.Second})
	require.NoError(t, err)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))

	// Memory: the exported domain size is libvirt's balloon size, which
	// GetInfo reports independently of the statistics call.
	var first map[string]float64
	require.Eventually(t, func() bool {
		first = gatherValues(t, reg)
		_, ok := first["kubevirt_vmi_memory_available_bytes"]
		return ok
	}, time.Minute, time.Second, "the guest never reported balloon statistics")
	info, err := h.Info(ctx, dom)
	require.NoError(t, err)
	assert.Equal(t, float64(info.MemoryBytes), first["kubevirt_vmi_memory_domain_bytes"])
	assert.Equal(t, float64(info.MemoryBytes), first["kubevirt_vmi_memory_actual_balloon_bytes"])
	stats, err := h.Stats(ctx, dom)
	require.NoError(t, err)
	if v, ok := stats.Memory.Available.Get(); ok {
		assert.Equal(t, float64(v), first["kubevirt_vmi_memory_available_bytes"])
	}
	assert.LessOrEqual(t, first["kubevirt_vmi_memory_available_bytes"], first["kubevirt_vmi_memory_domain_bytes"])
	assert.Positive(t, first["kubevirt_vmi_memory_resident_bytes"])

	// CPU: positive, growing, and never ahead of libvirt's own later reading.
	cpu0 := first["kubevirt_vmi_cpu_usage_seconds_total"]
	require.Positive(t, cpu0)
	var cpu1 float64
	require.Eventually(t, func() bool {
		cpu1 = gatherValues(t, reg)["kubevirt_vmi_cpu_usage_seconds_total"]
		return cpu1 > cpu0
	}, time.Minute, 500*time.Millisecond, "CPU time did not grow")
	later, err := h.Stats(ctx, dom)
	require.NoError(t, err)
	laterCPU, ok := later.CPUTime.Get()
	require.True(t, ok, "libvirt reports no cpu.time")
	assert.LessOrEqual(t, cpu1, laterCPU.Seconds())
	// GetInfo's CPU time is a separate reading with tick (10 ms) granularity.
	info, err = h.Info(ctx, dom)
	require.NoError(t, err)
	if infoCPU, ok := info.CPUTime.Get(); ok {
		assert.LessOrEqual(t, cpu1, infoCPU.Seconds()+0.05)
	}
	assert.Zero(t, gatherValues(t, reg)["virtkit_scrape_domain_timeouts_total"])

	// The host's memory as libvirt reads /proc/meminfo: every part is
	// reported, and they fit in the total.
	host := gatherValues(t, reg)
	total := host["virtkit_node_memory_total_bytes"]
	require.Positive(t, total)
	for _, part := range []string{"virtkit_node_memory_free_bytes", "virtkit_node_memory_buffers_bytes", "virtkit_node_memory_cached_bytes"} {
		assert.Contains(t, host, part)
	}
	assert.Positive(t, host["virtkit_node_memory_free_bytes"])
	assert.Less(t, host["virtkit_node_memory_free_bytes"]+host["virtkit_node_memory_buffers_bytes"]+host["virtkit_node_memory_cached_bytes"], total)

	// The real guest's exposition passes promtool too.
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var text bytes.Buffer
	enc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		require.NoError(t, enc.Encode(mf))
	}
	promcheck.RequireClean(t, text.Bytes())
}
