package metrics

import (
	"context"
	"errors"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/internal/promcheck"
	"github.com/virtkit/virtkit/store"
)

// nodeGauge is the value of a family's series for node, and whether there
// is one.
func nodeGauge(mfs map[string]*dto.MetricFamily, name, node string) (float64, bool) {
	for _, m := range mfs[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "node" && l.GetValue() == node {
				return m.GetGauge().GetValue() + m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}

// TestNodeMemoryOfASimHost scrapes a simulated host running a guest, both
// gathered and streamed: total and free are the host's own figures at
// that instant, and the families the model has no figure for are absent.
func TestNodeMemoryOfASimHost(t *testing.T) {
	ctx := context.Background()
	clock := sim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	host := sim.New(sim.Options{Name: "n1", Clock: clock, MemoryBytes: 8 << 30})
	dom := DomainName("default", "vm")
	_, err := host.Define(ctx, `<domain type='kvm'><name>`+dom+`</name><memory unit='MiB'>2048</memory><vcpu>1</vcpu></domain>`)
	require.NoError(t, err)
	require.NoError(t, host.Start(ctx, dom, hypervisor.StartOptions{}))
	require.NoError(t, host.SetWorkload(dom, sim.Workload{DirtyRate: 32 << 20, WorkingSet: 1 << 30}))
	clock.Advance(10 * time.Second)

	st := store.NewMemory()
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name = "default", "vm"
	vmi.Status.Phase, vmi.Status.NodeName = virtkit.Running, "n1"
	require.NoError(t, st.Create(ctx, vmi))
	c, err := NewDomainCollector(DomainSources{Objects: st, Nodes: []NodeSource{{Name: "n1", Domains: host}}}, Options{})
	require.NoError(t, err)

	want, err := host.NodeMemory(ctx)
	require.NoError(t, err)
	total, _ := want.Total.Get()
	free, _ := want.Free.Get()
	require.Less(t, free, total, "the guest uses host memory")

	text := streamed(t, c)
	promcheck.RequireClean(t, text)
	for path, mfs := range map[string]map[string]*dto.MetricFamily{"gathered": gathered(t, c), "streamed": parsed(t, text)} {
		v, ok := nodeGauge(mfs, "virtkit_node_memory_total_bytes", "n1")
		assert.True(t, ok, path)
		assert.Equal(t, float64(total), v, path)
		v, ok = nodeGauge(mfs, "virtkit_node_memory_free_bytes", "n1")
		assert.True(t, ok, path)
		assert.Equal(t, float64(free), v, path)
		for _, name := range []string{"virtkit_node_memory_buffers_bytes", "virtkit_node_memory_cached_bytes", "virtkit_node_memory_available_bytes"} {
			assert.NotContains(t, mfs, name, path)
		}
	}
}

// TestNodeMemoryFailures: a backend without node memory gives no series
// and no error; a failing one no series and one error; one that misses
// the deadline no series and one timeout.
func TestNodeMemoryFailures(t *testing.T) {
	for _, tc := range []struct {
		name               string
		host               *fakeHost
		errors, timeouts   float64
		wantTotal, wantAny bool
	}{
		{name: "not supported", host: &fakeHost{}},
		{name: "error", host: &fakeHost{memErr: errors.New("connection reset")}, errors: 1},
		{name: "deadline", host: &fakeHost{memErr: context.DeadlineExceeded}, timeouts: 1},
		{name: "only total and free", host: &fakeHost{mem: &hypervisor.NodeMemory{Total: some[uint64](1 << 30), Free: some[uint64](0)}}, wantTotal: true, wantAny: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.host.fakeDomains = &fakeDomains{}
			objs := &fakeObjects{vmis: []virtkit.VirtualMachineInstance{}}
			c, err := NewDomainCollector(DomainSources{Objects: objs, Nodes: []NodeSource{{Name: "n1", Domains: tc.host}}}, Options{})
			require.NoError(t, err)
			mfs := gathered(t, c)
			_, ok := nodeGauge(mfs, "virtkit_node_memory_total_bytes", "n1")
			assert.Equal(t, tc.wantTotal, ok)
			v, ok := nodeGauge(mfs, "virtkit_node_memory_free_bytes", "n1")
			assert.Equal(t, tc.wantAny, ok)
			assert.Zero(t, v, "a measured zero is served")
			v, _ = nodeGauge(mfs, "virtkit_scrape_domain_errors_total", "n1")
			assert.Equal(t, tc.errors, v)
			v, _ = nodeGauge(mfs, "virtkit_scrape_domain_timeouts_total", "n1")
			assert.Equal(t, tc.timeouts, v)
		})
	}
}
