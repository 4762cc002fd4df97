package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/store"
)

// TestSimValuesMatchTheHost scrapes a simulated host on a virtual clock
// and compares every exported value with the host's own statistics at the
// same instant.
func TestSimValuesMatchTheHost(t *testing.T) {
	ctx := context.Background()
	clock := sim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	host := sim.New(sim.Options{Name: "node-1", Clock: clock})
	dom := metrics.DomainName("default", "vm")
	_, err := host.Define(ctx, benchDomainXML(dom))
	require.NoError(t, err)
	require.NoError(t, host.Start(ctx, dom, hypervisor.StartOptions{}))
	require.NoError(t, host.SetWorkload(dom, sim.Workload{DirtyRate: 64 << 20, WorkingSet: 256 << 20}))
	clock.Advance(30 * time.Second)

	st := store.NewMemory()
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name = "default", "vm"
	vmi.Status.Phase, vmi.Status.NodeName = virtkit.Running, "node-1"
	require.NoError(t, st.Create(ctx, vmi))
	c, err := metrics.NewDomainCollector(metrics.DomainSources{Objects: st,
		Nodes: []metrics.NodeSource{{Name: "node-1", Domains: host}}}, metrics.Options{})
	require.NoError(t, err)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))

	mfs, err := reg.Gather()
	require.NoError(t, err)
	want, err := host.Stats(ctx, dom)
	require.NoError(t, err)

	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				if l.GetName() == "interface" || l.GetName() == "drive" || l.GetName() == "id" {
					key += "/" + l.GetValue()
				}
			}
			got[key] = value(m)
		}
	}
	sec := func(m hypervisor.Measured[time.Duration]) float64 { return m.Value.Seconds() }
	u := func(m hypervisor.Measured[uint64]) float64 { return float64(m.Value) }
	require.True(t, want.CPUTime.Valid)
	assert.Positive(t, sec(want.CPUTime))
	expect := map[string]float64{
		"kubevirt_vmi_cpu_usage_seconds_total":                          sec(want.CPUTime),
		"kubevirt_vmi_cpu_user_usage_seconds_total":                     sec(want.CPUUser),
		"kubevirt_vmi_cpu_system_usage_seconds_total":                   sec(want.CPUSystem),
		"kubevirt_vmi_vcpu_seconds_total/0":                             sec(want.VCPUs[0].Time),
		"kubevirt_vmi_vcpu_seconds_total/1":                             sec(want.VCPUs[1].Time),
		"kubevirt_vmi_memory_domain_bytes":                              u(want.Memory.BalloonCurrent),
		"kubevirt_vmi_memory_actual_balloon_bytes":                      u(want.Memory.Actual),
		"kubevirt_vmi_memory_resident_bytes":                            u(want.Memory.RSS),
		"kubevirt_vmi_memory_available_bytes":                           u(want.Memory.Available),
		"kubevirt_vmi_memory_usable_bytes":                              u(want.Memory.Usable),
		"kubevirt_vmi_memory_unused_bytes":                              u(want.Memory.Unused),
		"kubevirt_vmi_memory_cached_bytes":                              u(want.Memory.DiskCaches),
		"kubevirt_vmi_memory_pgminfault_total":                          u(want.Memory.MinorFaults),
		"kubevirt_vmi_memory_pgmajfault_total":                          u(want.Memory.MajorFaults),
		"kubevirt_vmi_network_receive_bytes_total/" + want.Net[0].Name:  u(want.Net[0].RxBytes),
		"kubevirt_vmi_network_transmit_bytes_total/" + want.Net[0].Name: u(want.Net[0].TxBytes),
		"kubevirt_vmi_storage_read_traffic_bytes_total/vda":             u(want.Block[0].ReadBytes),
		"kubevirt_vmi_storage_iops_write_total/vda":                     u(want.Block[0].WriteReqs),
	}
	for k, v := range expect {
		assert.Equal(t, v, got[k], k)
	}
	// The sim reports per-vCPU wait/delay and block timings as libvirt does.
	assert.Equal(t, sec(want.VCPUs[0].Wait), got["kubevirt_vmi_vcpu_wait_seconds_total/0"])
	assert.Equal(t, sec(want.Block[0].ReadTime), got["kubevirt_vmi_storage_read_times_seconds_total/vda"])
	// Unpinned vCPUs may run on every host CPU.
	hi, err := host.Host(ctx)
	require.NoError(t, err)
	assert.Equal(t, float64(len(want.VCPUs)*hi.CPUs), got["kubevirt_vmi_node_cpu_affinity"])
	if dr, ok := want.DirtyRate.Get(); ok {
		assert.Equal(t, float64(dr), got["kubevirt_vmi_dirty_rate_bytes_per_second"])
	} else {
		assert.NotContains(t, got, "kubevirt_vmi_dirty_rate_bytes_per_second")
	}
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	}
	return 0
}
