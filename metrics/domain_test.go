package metrics

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/migration"
)

func some[T hypervisor.Number | time.Duration](v T) hypervisor.Measured[T] { return hypervisor.Some(v) }

// fullStats has every field measured, with distinct values.
func fullStats() hypervisor.DomainStats {
	return hypervisor.DomainStats{
		State:     hypervisor.StateRunning,
		CPUTime:   some(12500 * time.Millisecond),
		CPUUser:   some(10 * time.Second),
		CPUSystem: some(2500 * time.Millisecond),
		VCPUs: []hypervisor.VCPUStats{
			{ID: 0, State: "running", Time: some(6 * time.Second), Wait: some(250 * time.Millisecond), Delay: some(125 * time.Millisecond)},
			{ID: 1, State: "halted", Time: some(5 * time.Second)},
		},
		Memory: hypervisor.MemoryStats{
			BalloonCurrent: some[uint64](1 << 30), Actual: some[uint64](1 << 30), Unused: some[uint64](600 << 20),
			Available: some[uint64](1000 << 20), Usable: some[uint64](700 << 20), RSS: some[uint64](400 << 20),
			DiskCaches: some[uint64](50 << 20), SwapIn: some[uint64](4096), SwapOut: some[uint64](8192),
			MajorFaults: some[uint64](7), MinorFaults: some[uint64](700),
		},
		Net: []hypervisor.NetStats{{Name: "vnet3", RxBytes: some[uint64](1000), RxPackets: some[uint64](10), RxErrors: some[uint64](1),
			RxDropped: some[uint64](2), TxBytes: some[uint64](500), TxPackets: some[uint64](5), TxErrors: some[uint64](3), TxDropped: some[uint64](4)}},
		Block: []hypervisor.BlockStats{{Name: "vda", ReadReqs: some[uint64](100), ReadBytes: some[uint64](409600), ReadTime: some(2 * time.Second),
			WriteReqs: some[uint64](50), WriteBytes: some[uint64](204800), WriteTime: some(time.Second),
			FlushReqs: some[uint64](9), FlushTime: some(500 * time.Millisecond)}},
		DirtyRate: some[uint64](3 << 20),
	}
}

func newTestDomainCollector(t *testing.T, objs *fakeObjects, n NodeSource, opts Options) *DomainCollector {
	t.Helper()
	c, err := NewDomainCollector(DomainSources{Objects: objs, Nodes: []NodeSource{n}}, opts)
	require.NoError(t, err)
	return c
}

func TestDomainCollectorValues(t *testing.T) {
	objs := &fakeObjects{vmis: []virtkit.VirtualMachineInstance{
		runningVMI("ns1", "vm1", "n1", map[string]string{"app": "web", "kubevirt.io/nodeName": "n1"}),
	}}
	doms := &fakeDomains{stats: map[string]hypervisor.DomainStats{"ns1_vm1": fullStats()}}
	guest := fakeGuest{"ns1_vm1": {
		{DiskName: "vda1", MountPoint: "/", FileSystemType: "ext4", UsedBytes: 1 << 30, TotalBytes: 10 << 30},
		{DiskName: "vdb", MountPoint: "/data", FileSystemType: "xfs"}, // sizes not reported
	}}
	c := newTestDomainCollector(t, objs, NodeSource{Name: "n1", Domains: doms, Guest: guest}, Options{})

	const lbl = `kubernetes_vmi_label_app="web",kubernetes_vmi_label_kubevirt_io_nodeName="n1",name="vm1",namespace="ns1",node="n1"`
	tests := []struct {
		metric string
		want   string
	}{
		{"kubevirt_vmi_cpu_usage_seconds_total", `# HELP kubevirt_vmi_cpu_usage_seconds_total Total CPU time spent in all modes (sum of both vcpu and hypervisor usage).
# TYPE kubevirt_vmi_cpu_usage_seconds_total counter
kubevirt_vmi_cpu_usage_seconds_total{` + lbl + `} 12.5
`},
		{"kubevirt_vmi_cpu_user_usage_seconds_total", "kubevirt_vmi_cpu_user_usage_seconds_total{" + lbl + "} 10\n"},
		{"kubevirt_vmi_cpu_system_usage_seconds_total", "kubevirt_vmi_cpu_system_usage_seconds_total{" + lbl + "} 2.5\n"},
		{"kubevirt_vmi_vcpu_seconds_total", `kubevirt_vmi_vcpu_seconds_total{id="0",` + lbl + `,state="running"} 6
kubevirt_vmi_vcpu_seconds_total{id="1",` + lbl + `,state="unknown"} 5
`},
		{"kubevirt_vmi_vcpu_wait_seconds_total", `kubevirt_vmi_vcpu_wait_seconds_total{id="0",` + lbl + `} 0.25` + "\n"},
		{"kubevirt_vmi_vcpu_delay_seconds_total", `kubevirt_vmi_vcpu_delay_seconds_total{id="0",` + lbl + `} 0.125` + "\n"},
		{"kubevirt_vmi_memory_resident_bytes", "kubevirt_vmi_memory_resident_bytes{" + lbl + "} 4.194304e+08\n"},
		{"kubevirt_vmi_memory_available_bytes", "kubevirt_vmi_memory_available_bytes{" + lbl + "} 1.048576e+09\n"},
		{"kubevirt_vmi_memory_unused_bytes", "kubevirt_vmi_memory_unused_bytes{" + lbl + "} 6.291456e+08\n"},
		{"kubevirt_vmi_memory_cached_bytes", "kubevirt_vmi_memory_cached_bytes{" + lbl + "} 5.24288e+07\n"},
		{"kubevirt_vmi_memory_swap_in_traffic_bytes", "kubevirt_vmi_memory_swap_in_traffic_bytes{" + lbl + "} 4096\n"},
		{"kubevirt_vmi_memory_swap_out_traffic_bytes", "kubevirt_vmi_memory_swap_out_traffic_bytes{" + lbl + "} 8192\n"},
		{"kubevirt_vmi_memory_pgmajfault_total", "kubevirt_vmi_memory_pgmajfault_total{" + lbl + "} 7\n"},
		{"kubevirt_vmi_memory_pgminfault_total", "kubevirt_vmi_memory_pgminfault_total{" + lbl + "} 700\n"},
		{"kubevirt_vmi_memory_actual_balloon_bytes", "kubevirt_vmi_memory_actual_balloon_bytes{" + lbl + "} 1.073741824e+09\n"},
		{"kubevirt_vmi_memory_usable_bytes", "kubevirt_vmi_memory_usable_bytes{" + lbl + "} 7.340032e+08\n"},
		{"kubevirt_vmi_memory_domain_bytes", "kubevirt_vmi_memory_domain_bytes{" + lbl + "} 1.073741824e+09\n"},
		{"kubevirt_vmi_network_receive_bytes_total", `kubevirt_vmi_network_receive_bytes_total{interface="vnet3",` + lbl + `} 1000` + "\n"},
		{"kubevirt_vmi_network_transmit_bytes_total", `kubevirt_vmi_network_transmit_bytes_total{interface="vnet3",` + lbl + `} 500` + "\n"},
		{"kubevirt_vmi_network_receive_packets_total", `kubevirt_vmi_network_receive_packets_total{interface="vnet3",` + lbl + `} 10` + "\n"},
		{"kubevirt_vmi_network_transmit_packets_total", `kubevirt_vmi_network_transmit_packets_total{interface="vnet3",` + lbl + `} 5` + "\n"},
		{"kubevirt_vmi_network_receive_errors_total", `kubevirt_vmi_network_receive_errors_total{interface="vnet3",` + lbl + `} 1` + "\n"},
		{"kubevirt_vmi_network_transmit_errors_total", `kubevirt_vmi_network_transmit_errors_total{interface="vnet3",` + lbl + `} 3` + "\n"},
		{"kubevirt_vmi_network_receive_packets_dropped_total", `kubevirt_vmi_network_receive_packets_dropped_total{interface="vnet3",` + lbl + `} 2` + "\n"},
		{"kubevirt_vmi_network_transmit_packets_dropped_total", `kubevirt_vmi_network_transmit_packets_dropped_total{interface="vnet3",` + lbl + `} 4` + "\n"},
		{"kubevirt_vmi_network_traffic_bytes_total", `kubevirt_vmi_network_traffic_bytes_total{interface="vnet3",` + lbl + `,type="rx"} 1000
kubevirt_vmi_network_traffic_bytes_total{interface="vnet3",` + lbl + `,type="tx"} 500
`},
		{"kubevirt_vmi_storage_iops_read_total", `kubevirt_vmi_storage_iops_read_total{drive="vda",` + lbl + `} 100` + "\n"},
		{"kubevirt_vmi_storage_iops_write_total", `kubevirt_vmi_storage_iops_write_total{drive="vda",` + lbl + `} 50` + "\n"},
		{"kubevirt_vmi_storage_read_traffic_bytes_total", `kubevirt_vmi_storage_read_traffic_bytes_total{drive="vda",` + lbl + `} 409600` + "\n"},
		{"kubevirt_vmi_storage_write_traffic_bytes_total", `kubevirt_vmi_storage_write_traffic_bytes_total{drive="vda",` + lbl + `} 204800` + "\n"},
		{"kubevirt_vmi_storage_read_times_seconds_total", `kubevirt_vmi_storage_read_times_seconds_total{drive="vda",` + lbl + `} 2` + "\n"},
		{"kubevirt_vmi_storage_write_times_seconds_total", `kubevirt_vmi_storage_write_times_seconds_total{drive="vda",` + lbl + `} 1` + "\n"},
		{"kubevirt_vmi_storage_flush_requests_total", `kubevirt_vmi_storage_flush_requests_total{drive="vda",` + lbl + `} 9` + "\n"},
		{"kubevirt_vmi_storage_flush_times_seconds_total", `kubevirt_vmi_storage_flush_times_seconds_total{drive="vda",` + lbl + `} 0.5` + "\n"},
		{"kubevirt_vmi_filesystem_capacity_bytes", `kubevirt_vmi_filesystem_capacity_bytes{disk_name="vda1",file_system_type="ext4",kubernetes_vmi_label_app="web",kubernetes_vmi_label_kubevirt_io_nodeName="n1",mount_point="/",name="vm1",namespace="ns1",node="n1"} 1.073741824e+10` + "\n"},
		{"kubevirt_vmi_filesystem_used_bytes", `kubevirt_vmi_filesystem_used_bytes{disk_name="vda1",file_system_type="ext4",kubernetes_vmi_label_app="web",kubernetes_vmi_label_kubevirt_io_nodeName="n1",mount_point="/",name="vm1",namespace="ns1",node="n1"} 1.073741824e+09` + "\n"},
		{"kubevirt_vmi_dirty_rate_bytes_per_second", "kubevirt_vmi_dirty_rate_bytes_per_second{" + lbl + "} 3.145728e+06\n"},
		{"virtkit_scrape_domain_timeouts_total", `virtkit_scrape_domain_timeouts_total{node="n1"} 0` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.metric, func(t *testing.T) {
			want := tt.want
			if !strings.HasPrefix(want, "#") {
				want = helpAndType(t, c, tt.metric) + want
			}
			require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), tt.metric))
		})
	}
}

// helpAndType returns the HELP and TYPE lines the collector writes for a
// metric, so value tables need not repeat them.
func helpAndType(t *testing.T, c prometheus.Collector, metric string) string {
	t.Helper()
	out, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, metric)
	require.NoError(t, err)
	var hdr strings.Builder
	for _, l := range strings.SplitAfter(string(out), "\n") {
		if strings.HasPrefix(l, "# ") {
			hdr.WriteString(l)
		}
	}
	require.NotEmpty(t, hdr.String(), "no %s series", metric)
	return hdr.String()
}

func TestDomainCollectorAbsentWhenNotMeasured(t *testing.T) {
	st := fullStats()
	st.CPUUser, st.CPUSystem = hypervisor.Measured[time.Duration]{}, hypervisor.Measured[time.Duration]{}
	st.Memory.Usable, st.Memory.Available, st.Memory.SwapIn = hypervisor.Measured[uint64]{}, hypervisor.Measured[uint64]{}, hypervisor.Measured[uint64]{}
	st.Block[0].ReadTime, st.Block[0].FlushTime = hypervisor.Measured[time.Duration]{}, hypervisor.Measured[time.Duration]{}
	st.Net[0].RxErrors = hypervisor.Measured[uint64]{}
	st.DirtyRate = hypervisor.Measured[uint64]{}
	st.VCPUs[0].Wait = hypervisor.Measured[time.Duration]{}

	objs := &fakeObjects{vmis: []virtkit.VirtualMachineInstance{runningVMI("ns1", "vm1", "n1", nil)}}
	doms := &fakeDomains{stats: map[string]hypervisor.DomainStats{"ns1_vm1": st}}
	// No Guest source: no filesystem series either.
	c := newTestDomainCollector(t, objs, NodeSource{Name: "n1", Domains: doms}, Options{})

	absent := []string{
		"kubevirt_vmi_cpu_user_usage_seconds_total", "kubevirt_vmi_cpu_system_usage_seconds_total",
		"kubevirt_vmi_memory_usable_bytes", "kubevirt_vmi_memory_available_bytes", "kubevirt_vmi_memory_swap_in_traffic_bytes",
		"kubevirt_vmi_storage_read_times_seconds_total", "kubevirt_vmi_storage_flush_times_seconds_total",
		"kubevirt_vmi_network_receive_errors_total", "kubevirt_vmi_dirty_rate_bytes_per_second",
		"kubevirt_vmi_vcpu_wait_seconds_total",
		"kubevirt_vmi_filesystem_capacity_bytes", "kubevirt_vmi_filesystem_used_bytes",
		"kubevirt_vmi_migration_data_remaining_bytes", "virtkit_migration_throttle_ratio",
	}
	for _, m := range absent {
		assert.Zero(t, testutil.CollectAndCount(c, m), m)
	}
	// What was measured is still there.
	for _, m := range []string{"kubevirt_vmi_cpu_usage_seconds_total", "kubevirt_vmi_memory_resident_bytes",
		"kubevirt_vmi_storage_write_times_seconds_total", "kubevirt_vmi_network_transmit_errors_total"} {
		assert.Equal(t, 1, testutil.CollectAndCount(c, m), m)
	}
	// Two vCPUs, only vCPU 0 has a delay measured.
	assert.Equal(t, 1, testutil.CollectAndCount(c, "kubevirt_vmi_vcpu_delay_seconds_total"))
}

func TestDomainCollectorStuckDomain(t *testing.T) {
	objs := &fakeObjects{vmis: []virtkit.VirtualMachineInstance{
		runningVMI("ns", "stuck", "n1", nil),
		runningVMI("ns", "fine", "n1", nil),
		runningVMI("ns", "broken", "n1", nil),
		runningVMI("ns", "gone", "n1", nil),
		runningVMI("ns", "late", "n1", nil),
	}}
	const timeout = 200 * time.Millisecond
	doms := &fakeDomains{
		stats: map[string]hypervisor.DomainStats{"ns_stuck": fullStats(), "ns_fine": fullStats(), "ns_late": fullStats()},
		// Returns just after the deadline, while the collector emits: the
		// race detector checks that its late write is never read.
		delay: map[string]time.Duration{"ns_late": timeout + 5*time.Millisecond},
		errs:  map[string]error{"ns_broken": errors.New("libvirt: internal error")},
		block: map[string]bool{"ns_stuck": true},
		// Never released during the test: Stats ignores ctx, like a hung
		// QEMU monitor.
		release: make(chan struct{}),
	}
	t.Cleanup(func() { close(doms.release) })
	c := newTestDomainCollector(t, objs, NodeSource{Name: "n1", Domains: doms}, Options{ScrapeTimeout: timeout, MaxConcurrency: 2})
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))

	for scrape := 1; scrape <= 2; scrape++ {
		done := make(chan error, 1)
		go func() {
			_, err := reg.Gather()
			done <- err
		}()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(timeout + 10*time.Second):
			t.Fatalf("scrape %d did not return after the %v deadline", scrape, timeout)
		}
		// The healthy domain is there, the stuck one left out and counted.
		out, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, "kubevirt_vmi_cpu_usage_seconds_total")
		require.NoError(t, err)
		assert.Contains(t, string(out), `name="fine"`)
		assert.NotContains(t, string(out), `name="stuck"`)
		assert.NotContains(t, string(out), `name="broken"`)
		assert.NotContains(t, string(out), `name="late"`)
	}
	// Two Gathers, two CollectAndFormats and the comparison below: five
	// scrapes, each timing out on the stuck and the late domain; the broken
	// one is an error each time, the gone one (no domain) neither.
	want := `# HELP virtkit_scrape_domain_errors_total Domain, migration-job or node-memory statistics left out of a scrape because the hypervisor returned an error.
# TYPE virtkit_scrape_domain_errors_total counter
virtkit_scrape_domain_errors_total{node="n1"} 5
# HELP virtkit_scrape_domain_timeouts_total Domain, migration-job or node-memory statistics left out of a scrape because they missed the scrape deadline.
# TYPE virtkit_scrape_domain_timeouts_total counter
virtkit_scrape_domain_timeouts_total{node="n1"} 10
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "virtkit_scrape_domain_timeouts_total", "virtkit_scrape_domain_errors_total"))
}

func TestDomainCollectorMigration(t *testing.T) {
	objs := &fakeObjects{vmis: []virtkit.VirtualMachineInstance{runningVMI("ns", "vm", "src", map[string]string{"a": "b"})}}
	doms := &fakeDomains{stats: map[string]hypervisor.DomainStats{}}
	job := fakeJob{
		Type: hypervisor.JobUnbounded, DataTotal: some[uint64](2 << 30), DataProcessed: some[uint64](1 << 30),
		DataRemaining: some[uint64](1 << 30), MemoryDirtyRate: some[uint64](50 << 20),
		// MemoryBps not measured yet: no transfer-rate series.
	}
	snap := migration.Snapshot{
		Domain: "ns_vm", Strategy: "PreCopyThrottled", Throttle: 30,
		DirtyRate: hypervisor.Some(52428800.0), Bandwidth: hypervisor.Some(125000000.0),
		DowntimeLimit: 300 * time.Millisecond,
		Prediction:    &migration.Prediction{Converges: true, Total: 42 * time.Second, Downtime: 250 * time.Millisecond},
		Decisions: []migration.Decision{
			{Action: migration.Action{Kind: migration.ActionStart}},
			{Action: migration.Action{Kind: migration.ActionThrottle, ThrottlePercent: 20}},
			{Action: migration.Action{Kind: migration.ActionThrottle, ThrottlePercent: 30}},
		},
	}
	migs := fakeMigrations{{Domain: "ns_vm", Job: job, Engine: fakeEngine(snap)}}
	c := newTestDomainCollector(t, objs, NodeSource{Name: "src", Domains: doms, Migrations: migs}, Options{})

	const l = `name="vm",namespace="ns",node="src"`
	want := `# HELP kubevirt_vmi_migration_data_bytes_total The total Guest OS data to be migrated to the new VM.
# TYPE kubevirt_vmi_migration_data_bytes_total counter
kubevirt_vmi_migration_data_bytes_total{` + l + `} 2.147483648e+09
# HELP kubevirt_vmi_migration_data_processed_bytes The total Guest OS data processed and migrated to the new VM.
# TYPE kubevirt_vmi_migration_data_processed_bytes gauge
kubevirt_vmi_migration_data_processed_bytes{` + l + `} 1.073741824e+09
# HELP kubevirt_vmi_migration_data_remaining_bytes The remaining guest OS data to be migrated to the new VM.
# TYPE kubevirt_vmi_migration_data_remaining_bytes gauge
kubevirt_vmi_migration_data_remaining_bytes{` + l + `} 1.073741824e+09
# HELP kubevirt_vmi_migration_dirty_memory_rate_bytes The rate of memory being dirty in the Guest OS.
# TYPE kubevirt_vmi_migration_dirty_memory_rate_bytes gauge
kubevirt_vmi_migration_dirty_memory_rate_bytes{` + l + `} 5.24288e+07
# HELP virtkit_migration_decisions_total Decisions the virtkit engine took, by action.
# TYPE virtkit_migration_decisions_total counter
virtkit_migration_decisions_total{action="Start",` + l + `} 1
virtkit_migration_decisions_total{action="Throttle",` + l + `} 2
# HELP virtkit_migration_downtime_limit_seconds Downtime limit of the switchover as the virtkit engine set it.
# TYPE virtkit_migration_downtime_limit_seconds gauge
virtkit_migration_downtime_limit_seconds{` + l + `} 0.3
# HELP virtkit_migration_measured_bandwidth_bytes_per_second Migration bandwidth the virtkit engine measured.
# TYPE virtkit_migration_measured_bandwidth_bytes_per_second gauge
virtkit_migration_measured_bandwidth_bytes_per_second{` + l + `} 1.25e+08
# HELP virtkit_migration_measured_dirty_rate_bytes_per_second Guest dirty rate the virtkit engine measured.
# TYPE virtkit_migration_measured_dirty_rate_bytes_per_second gauge
virtkit_migration_measured_dirty_rate_bytes_per_second{` + l + `} 5.24288e+07
# HELP virtkit_migration_predicted_downtime_seconds Final pause the virtkit engine predicts for the switchover.
# TYPE virtkit_migration_predicted_downtime_seconds gauge
virtkit_migration_predicted_downtime_seconds{` + l + `} 0.25
# HELP virtkit_migration_predicted_total_seconds Migration time the virtkit engine predicts, counted from the start of the job.
# TYPE virtkit_migration_predicted_total_seconds gauge
virtkit_migration_predicted_total_seconds{` + l + `} 42
# HELP virtkit_migration_strategy_info Strategy the virtkit engine chose (value 1).
# TYPE virtkit_migration_strategy_info gauge
virtkit_migration_strategy_info{` + l + `,strategy="PreCopyThrottled"} 1
# HELP virtkit_migration_throttle_ratio Current guest vCPU throttle set by the virtkit engine (0-1).
# TYPE virtkit_migration_throttle_ratio gauge
virtkit_migration_throttle_ratio{` + l + `} 0.3
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"kubevirt_vmi_migration_data_bytes_total", "kubevirt_vmi_migration_data_processed_bytes",
		"kubevirt_vmi_migration_data_remaining_bytes", "kubevirt_vmi_migration_dirty_memory_rate_bytes",
		"kubevirt_vmi_migration_memory_transfer_rate_bytes",
		"virtkit_migration_decisions_total", "virtkit_migration_downtime_limit_seconds",
		"virtkit_migration_measured_bandwidth_bytes_per_second", "virtkit_migration_measured_dirty_rate_bytes_per_second",
		"virtkit_migration_predicted_downtime_seconds", "virtkit_migration_predicted_total_seconds",
		"virtkit_migration_strategy_info", "virtkit_migration_throttle_ratio"))

	// A finished job has no progress series.
	migs[0].Job = fakeJob{Type: hypervisor.JobCompleted, DataRemaining: some[uint64](0)}
	assert.Zero(t, testutil.CollectAndCount(c, "kubevirt_vmi_migration_data_remaining_bytes"))
}

func TestSanitizeLabelName(t *testing.T) {
	tests := []struct{ key, want string }{
		{"app", "kubernetes_vmi_label_app"},
		{"kubevirt.io/nodeName", "kubernetes_vmi_label_kubevirt_io_nodeName"},
		{"my-label.example.com/x", "kubernetes_vmi_label_my_label_example_com_x"},
		{"HTTPPort", "kubernetes_vmi_label_HTTPPort"},
		{"v2Name", "kubernetes_vmi_label_v2Name"},
		{"ümlaut", "kubernetes_vmi_label___mlaut"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) { assert.Equal(t, tt.want, sanitizeLabelName(vmiLabelPrefix, tt.key)) })
	}
	// Keys that collide after sanitizing keep the first in key order.
	vl := labelsOf(map[string]string{"a-b": "1", "a.b": "2", "c": "3"})
	assert.Equal(t, []string{"kubernetes_vmi_label_a_b", "kubernetes_vmi_label_c"}, vl.names)
	assert.Equal(t, []string{"1", "3"}, vl.values)
}

func TestNewDomainCollectorErrors(t *testing.T) {
	objs := &fakeObjects{}
	doms := &fakeDomains{}
	tests := []struct {
		name string
		src  DomainSources
		opts Options
		path string
	}{
		{"no objects", DomainSources{}, Options{}, "DomainSources.Objects"},
		{"no node name", DomainSources{Objects: objs, Nodes: []NodeSource{{Domains: doms}}}, Options{}, "DomainSources.Nodes[0].Name"},
		{"no domains", DomainSources{Objects: objs, Nodes: []NodeSource{{Name: "a"}}}, Options{}, "DomainSources.Nodes[0].Domains"},
		{"duplicate", DomainSources{Objects: objs, Nodes: []NodeSource{{Name: "a", Domains: doms}, {Name: "a", Domains: doms}}}, Options{}, "DomainSources.Nodes[1].Name"},
		{"negative timeout", DomainSources{Objects: objs}, Options{ScrapeTimeout: -1}, "ScrapeTimeout"},
		{"negative concurrency", DomainSources{Objects: objs}, Options{MaxConcurrency: -1}, "MaxConcurrency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewDomainCollector(tt.src, tt.opts)
			require.ErrorIs(t, err, virtkit.ErrInvalidOptions)
			assert.Contains(t, err.Error(), tt.path)
		})
	}
}

func TestDomainCollectorListError(t *testing.T) {
	objs := &fakeObjects{err: errors.New("store down")}
	c := newTestDomainCollector(t, objs, NodeSource{Name: "n1", Domains: &fakeDomains{}}, Options{})
	want := `# HELP virtkit_scrape_list_errors_total Scrapes that could not list objects from the store, by collector.
# TYPE virtkit_scrape_list_errors_total counter
virtkit_scrape_list_errors_total{collector="domain"} 1
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "virtkit_scrape_list_errors_total"))
	assert.Zero(t, testutil.CollectAndCount(c, "kubevirt_vmi_cpu_usage_seconds_total"))
}

func TestDomainCollectorDeviceNamesFromAliases(t *testing.T) {
	const domXML = `<domain type='kvm'><name>ns_vm</name><devices>
<disk type='file' device='disk'><target dev='vda' bus='virtio'/><alias name='ua-rootdisk'/></disk>
<disk type='file' device='disk'><target dev='vdb' bus='virtio'/><alias name='virtio-disk1'/></disk>
<interface type='ethernet'><target dev='vnet3'/><alias name='ua-default'/></interface>
</devices></domain>`
	st := fullStats()
	st.Block = append(st.Block, hypervisor.BlockStats{Name: "vdb", ReadBytes: some[uint64](1)})
	vmi := runningVMI("ns", "vm", "n1", nil)
	objs := &fakeObjects{vmis: []virtkit.VirtualMachineInstance{vmi}}
	doms := &fakeDomains{stats: map[string]hypervisor.DomainStats{"ns_vm": st}, xml: map[string]string{"ns_vm": domXML}}
	c := newTestDomainCollector(t, objs, NodeSource{Name: "n1", Domains: doms}, Options{})

	want := `# HELP kubevirt_vmi_storage_read_traffic_bytes_total Total number of bytes read from storage.
# TYPE kubevirt_vmi_storage_read_traffic_bytes_total counter
kubevirt_vmi_storage_read_traffic_bytes_total{drive="rootdisk",name="vm",namespace="ns",node="n1"} 409600
kubevirt_vmi_storage_read_traffic_bytes_total{drive="vdb",name="vm",namespace="ns",node="n1"} 1
# HELP kubevirt_vmi_network_receive_bytes_total Total network traffic received in bytes.
# TYPE kubevirt_vmi_network_receive_bytes_total counter
kubevirt_vmi_network_receive_bytes_total{interface="default",name="vm",namespace="ns",node="n1"} 1000
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"kubevirt_vmi_storage_read_traffic_bytes_total", "kubevirt_vmi_network_receive_bytes_total"))
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"kubevirt_vmi_storage_read_traffic_bytes_total", "kubevirt_vmi_network_receive_bytes_total"))
	assert.Equal(t, int32(1), doms.xmlCalls.Load(), "the XML is read once per VMI, not per scrape")

	// A hot-plugged NIC the cache does not know: the XML is read again.
	st.Net = append(st.Net, hypervisor.NetStats{Name: "vnet9", RxBytes: some[uint64](5)})
	doms.stats["ns_vm"] = st
	out, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, "kubevirt_vmi_network_receive_bytes_total")
	require.NoError(t, err)
	assert.Contains(t, string(out), `interface="vnet9"`)
	assert.Equal(t, int32(2), doms.xmlCalls.Load())
	_, err = testutil.CollectAndFormat(c, expfmt.TypeTextPlain, "kubevirt_vmi_network_receive_bytes_total")
	require.NoError(t, err)
	assert.Equal(t, int32(2), doms.xmlCalls.Load(), "an unlisted device is remembered, not re-read every scrape")

	// The VMI is recreated (new UID): its domain is read afresh.
	objs.set(func(f *fakeObjects) { f.vmis[0].UID = "new-uid" })
	_, err = testutil.CollectAndFormat(c, expfmt.TypeTextPlain, "kubevirt_vmi_network_receive_bytes_total")
	require.NoError(t, err)
	assert.Equal(t, int32(3), doms.xmlCalls.Load())
}

func TestParseDeviceNamesRejectsBadXML(t *testing.T) {
	_, err := parseDeviceNames("<domain><devices>")
	require.Error(t, err)
}

func TestDomainCollectorListsWithTheSelector(t *testing.T) {
	objs := &fakeObjects{}
	sel := labels.SelectorFromSet(labels.Set{virtkit.NodeNameLabel: "n1"})
	c, err := NewDomainCollector(DomainSources{Objects: objs, LabelSelector: sel,
		Nodes: []NodeSource{{Name: "n1", Domains: &fakeDomains{}}}}, Options{})
	require.NoError(t, err)
	testutil.CollectAndCount(c)
	require.NotNil(t, objs.lastOpts.LabelSelector)
	assert.Equal(t, "kubevirt.io/nodeName=n1", objs.lastOpts.LabelSelector.String())
}

// A job in post-copy adds virtkit's count of the page faults served from
// the source; a pre-copy job has none.
func TestDomainCollectorPostCopyFaults(t *testing.T) {
	objs := &fakeObjects{vmis: []virtkit.VirtualMachineInstance{runningVMI("ns", "vm", "src", nil)}}
	doms := &fakeDomains{stats: map[string]hypervisor.DomainStats{}}
	job := fakeJob{Type: hypervisor.JobUnbounded, Mode: hypervisor.ModePostCopy, PostcopyRequests: some[uint64](42)}
	migs := fakeMigrations{{Domain: "ns_vm", Job: job}}
	c := newTestDomainCollector(t, objs, NodeSource{Name: "src", Domains: doms, Migrations: migs}, Options{})
	want := `# HELP virtkit_migration_postcopy_page_faults_total Page faults the guest took on the target in post-copy, each served from the source over the network.
# TYPE virtkit_migration_postcopy_page_faults_total counter
virtkit_migration_postcopy_page_faults_total{name="vm",namespace="ns",node="src"} 42
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "virtkit_migration_postcopy_page_faults_total"))

	migs[0].Job = fakeJob{Type: hypervisor.JobUnbounded, Mode: hypervisor.ModePreCopy, PostcopyRequests: some[uint64](0)}
	assert.Zero(t, testutil.CollectAndCount(c, "virtkit_migration_postcopy_page_faults_total"))
}
