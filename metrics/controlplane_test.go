package metrics

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
)

func ptr[T any](v T) *T { return &v }

func withTransitions(vmi virtkit.VirtualMachineInstance, steps ...any) virtkit.VirtualMachineInstance {
	for i := 0; i < len(steps); i += 2 {
		vmi.Status.PhaseTransitionTimestamps = append(vmi.Status.PhaseTransitionTimestamps,
			virtkit.VirtualMachineInstancePhaseTransitionTimestamp{
				Phase: steps[i].(virtkit.VirtualMachineInstancePhase), PhaseTransitionTimestamp: mt(steps[i+1].(time.Duration)),
			})
	}
	return vmi
}

func TestControlPlaneVMIInfo(t *testing.T) {
	vmi := runningVMI("ns", "vm", "n1", map[string]string{"kubevirt.io/instancetype-name": "u1.small"})
	vmi.Annotations = map[string]string{"vm.kubevirt.io/os": "fedora", "vm.kubevirt.io/workload": "server"}
	vmi.Status.GuestOSInfo = virtkit.VirtualMachineInstanceGuestOSInfo{Name: "Fedora Linux", KernelRelease: "6.8.5", VersionID: "40", Machine: "x86_64"}
	vmi.Status.Machine = &virtkit.Machine{Type: "q35"}
	vmi.Spec.EvictionStrategy = ptr(virtkit.EvictionStrategyLiveMigrate) // and not migratable
	vmi.Status.Interfaces = []virtkit.VirtualMachineInstanceNetworkInterface{{Name: "default", InterfaceName: "eth0", IPs: []string{"10.0.2.2", "fd10::2"}}}
	pending := runningVMI("ns", "new", "", nil)
	pending.Status.Phase = virtkit.Pending
	objs := &fakeObjects{vmis: []virtkit.VirtualMachineInstance{vmi, pending}}
	c, err := NewControlPlaneCollector(ControlPlaneSources{Objects: objs}, Options{})
	require.NoError(t, err)

	want := `# HELP kubevirt_vmi_info Information about VirtualMachineInstances.
# TYPE kubevirt_vmi_info gauge
kubevirt_vmi_info{evictable="true",flavor="<none>",guest_os_arch="",guest_os_kernel_release="",guest_os_machine="",guest_os_name="",guest_os_version_id="",instance_type="<none>",name="new",namespace="ns",node="",os="<none>",outdated="false",phase="pending",preference="<none>",vmi_pod="<none>",workload="<none>"} 1
kubevirt_vmi_info{evictable="false",flavor="<none>",guest_os_arch="x86_64",guest_os_kernel_release="6.8.5",guest_os_machine="q35",guest_os_name="Fedora Linux",guest_os_version_id="40",instance_type="u1.small",name="vm",namespace="ns",node="n1",os="fedora",outdated="false",phase="running",preference="<none>",vmi_pod="ns_vm",workload="server"} 1
# HELP kubevirt_vmi_non_evictable Indication for a VirtualMachine that its eviction strategy is set to Live Migration but is not migratable.
# TYPE kubevirt_vmi_non_evictable gauge
kubevirt_vmi_non_evictable{name="vm",namespace="ns",node="n1"} 1
# HELP kubevirt_vmi_status_addresses The addresses of a VirtualMachineInstance, by network interface.
# TYPE kubevirt_vmi_status_addresses gauge
kubevirt_vmi_status_addresses{address="10.0.2.2",interface_name="eth0",name="vm",namespace="ns",node="n1",type="ExternalInterface",vnic_name="default"} 1
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"kubevirt_vmi_info", "kubevirt_vmi_non_evictable", "kubevirt_vmi_status_addresses"))
}

func TestControlPlanePhaseTransitionHistograms(t *testing.T) {
	a := withTransitions(runningVMI("ns", "a", "n1", nil),
		virtkit.Pending, 1*time.Second, virtkit.Scheduling, 2*time.Second, virtkit.Scheduled, 3*time.Second)
	objs := &fakeObjects{vmis: []virtkit.VirtualMachineInstance{a}}
	c, err := NewControlPlaneCollector(ControlPlaneSources{Objects: objs}, Options{})
	require.NoError(t, err)

	count := func(metric, phase string) (uint64, float64) {
		t.Helper()
		mfs, err := gatherFrom(c)
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() != metric {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "phase" && l.GetValue() == phase {
						return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
					}
				}
			}
		}
		return 0, 0
	}
	n, sum := count("kubevirt_vmi_phase_transition_time_from_creation_seconds", "Scheduled")
	assert.Equal(t, uint64(1), n)
	assert.Equal(t, 3.0, sum)
	n, sum = count("kubevirt_vmi_phase_transition_time_seconds", "Scheduling")
	assert.Equal(t, uint64(1), n)
	assert.Equal(t, 1.0, sum)

	// The VMI reaches Running and is deleted; a second VMI appears. Every
	// transition is counted once, and counts never drop.
	a = withTransitions(a, virtkit.Running, 8*time.Second)
	a.DeletionTimestamp = ptr(mt(10 * time.Second))
	a = withTransitions(a, virtkit.Succeeded, 12*time.Second)
	b := withTransitions(runningVMI("ns", "b", "n1", nil), virtkit.Pending, time.Duration(0), virtkit.Scheduling, 4*time.Second)
	objs.set(func(f *fakeObjects) { f.vmis = []virtkit.VirtualMachineInstance{a, b} })
	n, sum = count("kubevirt_vmi_phase_transition_time_seconds", "Scheduling")
	assert.Equal(t, uint64(2), n)
	assert.Equal(t, 5.0, sum)
	n, sum = count("kubevirt_vmi_phase_transition_time_seconds", "Running")
	assert.Equal(t, uint64(1), n)
	assert.Equal(t, 5.0, sum)
	n, sum = count("kubevirt_vmi_phase_transition_time_from_deletion_seconds", "Succeeded")
	assert.Equal(t, uint64(1), n)
	assert.Equal(t, 2.0, sum)

	objs.set(func(f *fakeObjects) { f.vmis = nil })
	n, _ = count("kubevirt_vmi_phase_transition_time_seconds", "Scheduling")
	assert.Equal(t, uint64(2), n, "a histogram keeps what it observed after the objects are gone")

	// Buckets are cumulative: the 5 s Running transition is in le=5 and above.
	want := `# HELP kubevirt_vmi_phase_transition_time_seconds Histogram of VM phase transitions duration between different phases in seconds.
# TYPE kubevirt_vmi_phase_transition_time_seconds histogram
`
	out, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, "kubevirt_vmi_phase_transition_time_seconds")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(out), want))
	assert.Contains(t, string(out), `kubevirt_vmi_phase_transition_time_seconds_bucket{last_phase="Scheduled",phase="Running",le="2"} 0`)
	assert.Contains(t, string(out), `kubevirt_vmi_phase_transition_time_seconds_bucket{last_phase="Scheduled",phase="Running",le="5"} 1`)
	assert.Contains(t, string(out), `kubevirt_vmi_phase_transition_time_seconds_bucket{last_phase="Scheduled",phase="Running",le="+Inf"} 1`)
}

func TestControlPlaneMigrations(t *testing.T) {
	mig := func(name string, phase virtkit.VirtualMachineInstanceMigrationPhase) virtkit.VirtualMachineInstanceMigration {
		m := virtkit.VirtualMachineInstanceMigration{}
		m.Namespace, m.Name, m.UID = "ns", name, types.UID("uid-"+name)
		m.Spec.VMIName = "vm-" + name
		m.Status.Phase = phase
		m.CreationTimestamp = mt(0)
		if phase != "" {
			m.Status.PhaseTransitionTimestamps = []virtkit.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{
				{Phase: phase, PhaseTransitionTimestamp: mt(7 * time.Second)}}
		}
		return m
	}
	migs := []virtkit.VirtualMachineInstanceMigration{
		mig("u", ""), mig("p", virtkit.MigrationPending), mig("s", virtkit.MigrationScheduling),
		mig("r1", virtkit.MigrationRunning), mig("r2", virtkit.MigrationTargetReady),
		mig("ok", virtkit.MigrationSucceeded), mig("bad", virtkit.MigrationFailed),
	}
	running := runningVMI("ns", "vm-r1", "src", nil)
	running.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{
		MigrationUID: "uid-r1", SourceNode: "src", TargetNode: "dst", StartTimestamp: ptr(mt(5 * time.Second)),
		Engine: &virtkit.MigrationEngineStatus{
			Strategy: "PreCopy", PredictedTotalSeconds: ptr(12.5), PredictedDowntimeMs: ptr(120.0),
			MeasuredDirtyRateBytesPerSecond: ptr(int64(1 << 20)), ThrottlePercent: 20,
			Decisions: []virtkit.MigrationEngineDecision{{Action: "Start"}, {Action: "Throttle"}},
		},
	}
	done := runningVMI("ns", "vm-ok", "dst", nil)
	done.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{
		MigrationUID: "uid-ok", SourceNode: "src", StartTimestamp: ptr(mt(5 * time.Second)), EndTimestamp: ptr(mt(9 * time.Second)), Completed: true,
		Engine: &virtkit.MigrationEngineStatus{Strategy: "PreCopy"},
	}
	objs := &fakeObjects{vmis: []virtkit.VirtualMachineInstance{running, done}, migs: migs}
	c, err := NewControlPlaneCollector(ControlPlaneSources{Objects: objs, EngineFromStatus: true}, Options{})
	require.NoError(t, err)

	start, end := t0.Add(5*time.Second).Unix(), t0.Add(9*time.Second).Unix()
	want := `# HELP kubevirt_vmi_migration_end_time_seconds The time at which the migration ended.
# TYPE kubevirt_vmi_migration_end_time_seconds gauge
kubevirt_vmi_migration_end_time_seconds{migration_name="ok",name="vm-ok",namespace="ns",node="dst",status="succeeded"} ` + fmtFloat(end) + `
# HELP kubevirt_vmi_migration_failed Indicates if the VMI migration failed.
# TYPE kubevirt_vmi_migration_failed gauge
kubevirt_vmi_migration_failed{namespace="ns",vmi="vm-bad",vmim="bad"} 1
# HELP kubevirt_vmi_migration_start_time_seconds The time at which the migration started.
# TYPE kubevirt_vmi_migration_start_time_seconds gauge
kubevirt_vmi_migration_start_time_seconds{migration_name="ok",name="vm-ok",namespace="ns",node="dst"} ` + fmtFloat(start) + `
kubevirt_vmi_migration_start_time_seconds{migration_name="r1",name="vm-r1",namespace="ns",node="src"} ` + fmtFloat(start) + `
# HELP kubevirt_vmi_migration_succeeded Indicates if the VMI migration succeeded.
# TYPE kubevirt_vmi_migration_succeeded gauge
kubevirt_vmi_migration_succeeded{namespace="ns",vmi="vm-ok",vmim="ok"} 1
# HELP kubevirt_vmi_migrations_in_pending_phase Number of current pending migrations.
# TYPE kubevirt_vmi_migrations_in_pending_phase gauge
kubevirt_vmi_migrations_in_pending_phase 1
# HELP kubevirt_vmi_migrations_in_running_phase Number of current running migrations.
# TYPE kubevirt_vmi_migrations_in_running_phase gauge
kubevirt_vmi_migrations_in_running_phase 2
# HELP kubevirt_vmi_migrations_in_scheduling_phase Number of current scheduling migrations.
# TYPE kubevirt_vmi_migrations_in_scheduling_phase gauge
kubevirt_vmi_migrations_in_scheduling_phase 1
# HELP kubevirt_vmi_migrations_in_unset_phase Number of current unset migrations.
# TYPE kubevirt_vmi_migrations_in_unset_phase gauge
kubevirt_vmi_migrations_in_unset_phase 1
# HELP virtkit_migration_decisions_total Decisions the virtkit engine took, by action.
# TYPE virtkit_migration_decisions_total counter
virtkit_migration_decisions_total{action="Start",name="vm-r1",namespace="ns",node="src"} 1
virtkit_migration_decisions_total{action="Throttle",name="vm-r1",namespace="ns",node="src"} 1
# HELP virtkit_migration_measured_dirty_rate_bytes_per_second Guest dirty rate the virtkit engine measured.
# TYPE virtkit_migration_measured_dirty_rate_bytes_per_second gauge
virtkit_migration_measured_dirty_rate_bytes_per_second{name="vm-r1",namespace="ns",node="src"} 1.048576e+06
# HELP virtkit_migration_predicted_downtime_seconds Final pause the virtkit engine predicts for the switchover.
# TYPE virtkit_migration_predicted_downtime_seconds gauge
virtkit_migration_predicted_downtime_seconds{name="vm-r1",namespace="ns",node="src"} 0.12
# HELP virtkit_migration_predicted_total_seconds Migration time the virtkit engine predicts, counted from the start of the job.
# TYPE virtkit_migration_predicted_total_seconds gauge
virtkit_migration_predicted_total_seconds{name="vm-r1",namespace="ns",node="src"} 12.5
# HELP virtkit_migration_strategy_info Strategy the virtkit engine chose (value 1).
# TYPE virtkit_migration_strategy_info gauge
virtkit_migration_strategy_info{name="vm-r1",namespace="ns",node="src",strategy="PreCopy"} 1
# HELP virtkit_migration_throttle_ratio Current guest vCPU throttle set by the virtkit engine (0-1).
# TYPE virtkit_migration_throttle_ratio gauge
virtkit_migration_throttle_ratio{name="vm-r1",namespace="ns",node="src"} 0.2
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"kubevirt_vmi_migration_end_time_seconds", "kubevirt_vmi_migration_failed", "kubevirt_vmi_migration_start_time_seconds",
		"kubevirt_vmi_migration_succeeded", "kubevirt_vmi_migrations_in_pending_phase", "kubevirt_vmi_migrations_in_running_phase",
		"kubevirt_vmi_migrations_in_scheduling_phase", "kubevirt_vmi_migrations_in_unset_phase",
		"virtkit_migration_decisions_total", "virtkit_migration_measured_dirty_rate_bytes_per_second",
		"virtkit_migration_measured_bandwidth_bytes_per_second",
		"virtkit_migration_predicted_downtime_seconds", "virtkit_migration_predicted_total_seconds",
		"virtkit_migration_strategy_info", "virtkit_migration_throttle_ratio"))
	// Six migrations with a phase, each once in the from-creation histogram.
	assert.Equal(t, 6, testutil.CollectAndCount(c, "kubevirt_vmi_migration_phase_transition_time_from_creation_seconds"))

	// Without EngineFromStatus the engine series are left to the domain
	// collector.
	c2, err := NewControlPlaneCollector(ControlPlaneSources{Objects: objs}, Options{})
	require.NoError(t, err)
	assert.Zero(t, testutil.CollectAndCount(c2, "virtkit_migration_strategy_info"))
}

// fmtFloat formats a value as the text exposition does.
func fmtFloat(unix int64) string { return strconv.FormatFloat(float64(unix), 'g', -1, 64) }

func gatherFrom(c prometheus.Collector) ([]*dto.MetricFamily, error) {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	return reg.Gather()
}

func TestControlPlaneVMAndControllers(t *testing.T) {
	vm := virtkit.VirtualMachine{}
	vm.Namespace, vm.Name = "ns", "vm"
	vm.CreationTimestamp = mt(0)
	vm.Status.PrintableStatus = virtkit.VirtualMachineStatusRunning
	vm.Status.Conditions = []virtkit.Condition{
		{Type: "Ready", Status: "True", LastTransitionTime: mt(30 * time.Second)},
		{Type: "Initialized", Status: "True", LastTransitionTime: mt(10 * time.Second)},
	}
	vm.Spec.Template = &virtkit.VirtualMachineInstanceTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"vm.kubevirt.io/flavor": "small"}},
	}
	vm.Spec.Template.Spec.Domain.Machine = &virtkit.Machine{Type: "q35"}
	stopped := virtkit.VirtualMachine{}
	stopped.Namespace, stopped.Name = "ns", "off"
	stopped.Status.PrintableStatus = virtkit.VirtualMachineStatusStopped
	objs := &fakeObjects{vms: []virtkit.VirtualMachine{vm, stopped}}

	bounds := []float64{0.001, 0.01, 0.05, 0.1, 0.5, 1, 10}
	hist := Histogram{Count: 3, Sum: 0.5, Bounds: bounds, Buckets: make([]uint64, len(bounds))}
	for i, ub := range bounds {
		if ub >= 0.1 {
			hist.Buckets[i] = 2
		}
		if ub >= 0.5 {
			hist.Buckets[i] = 3
		}
	}
	ctrl := fakeController{Name: "virtualmachine", QueueDepth: 4, QueueAdds: 10, QueueRetries: 2, Reconciles: 12,
		ReconcileErrors: 3, TerminalErrors: 1, Requeues: 5, ReconcileTime: hist, ActiveWorkers: 1}
	c, err := NewControlPlaneCollector(ControlPlaneSources{Objects: objs, Controllers: []StatsProvider{ctrl}}, Options{})
	require.NoError(t, err)

	want := `# HELP kubevirt_vm_create_date_timestamp_seconds Virtual Machine creation timestamp.
# TYPE kubevirt_vm_create_date_timestamp_seconds gauge
kubevirt_vm_create_date_timestamp_seconds{name="vm",namespace="ns"} ` + fmtFloat(t0.Unix()) + `
# HELP kubevirt_vm_info Information about Virtual Machines.
# TYPE kubevirt_vm_info gauge
kubevirt_vm_info{flavor="<none>",instance_type="<none>",machine_type="<none>",name="off",namespace="ns",os="<none>",preference="<none>",status="Stopped",status_group="non_running",workload="<none>"} 1
kubevirt_vm_info{flavor="small",instance_type="<none>",machine_type="q35",name="vm",namespace="ns",os="<none>",preference="<none>",status="Running",status_group="running",workload="<none>"} 1
# HELP kubevirt_vm_non_running_status_last_transition_timestamp_seconds Virtual Machine last transition timestamp to paused/stopped status.
# TYPE kubevirt_vm_non_running_status_last_transition_timestamp_seconds counter
kubevirt_vm_non_running_status_last_transition_timestamp_seconds{name="off",namespace="ns"} 0
kubevirt_vm_non_running_status_last_transition_timestamp_seconds{name="vm",namespace="ns"} 0
# HELP kubevirt_vm_running_status_last_transition_timestamp_seconds Virtual Machine last transition timestamp to running status.
# TYPE kubevirt_vm_running_status_last_transition_timestamp_seconds counter
kubevirt_vm_running_status_last_transition_timestamp_seconds{name="off",namespace="ns"} 0
kubevirt_vm_running_status_last_transition_timestamp_seconds{name="vm",namespace="ns"} ` + fmtFloat(t0.Add(30*time.Second).Unix()) + `
# HELP kubevirt_workqueue_depth Current depth of workqueue.
# TYPE kubevirt_workqueue_depth gauge
kubevirt_workqueue_depth{name="virtualmachine"} 4
# HELP kubevirt_workqueue_retries_total Total number of retries handled by workqueue.
# TYPE kubevirt_workqueue_retries_total counter
kubevirt_workqueue_retries_total{name="virtualmachine"} 2
# HELP virtkit_controller_reconcile_errors_total Reconciles that returned an error and were retried (panics included).
# TYPE virtkit_controller_reconcile_errors_total counter
virtkit_controller_reconcile_errors_total{controller="virtualmachine"} 3
# HELP virtkit_controller_reconcile_terminal_errors_total Reconciles that returned a terminal error (not retried).
# TYPE virtkit_controller_reconcile_terminal_errors_total counter
virtkit_controller_reconcile_terminal_errors_total{controller="virtualmachine"} 1
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"kubevirt_vm_create_date_timestamp_seconds", "kubevirt_vm_info", "kubevirt_vm_running_status_last_transition_timestamp_seconds",
		"kubevirt_vm_non_running_status_last_transition_timestamp_seconds",
		"kubevirt_workqueue_depth", "kubevirt_workqueue_retries_total",
		"virtkit_controller_reconcile_errors_total", "virtkit_controller_reconcile_terminal_errors_total"))

	out, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, "virtkit_controller_reconcile_time_seconds")
	require.NoError(t, err)
	assert.Contains(t, string(out), `virtkit_controller_reconcile_time_seconds_bucket{controller="virtualmachine",le="0.05"} 0`)
	assert.Contains(t, string(out), `virtkit_controller_reconcile_time_seconds_bucket{controller="virtualmachine",le="0.1"} 2`)
	assert.Contains(t, string(out), `virtkit_controller_reconcile_time_seconds_bucket{controller="virtualmachine",le="0.5"} 3`)
	assert.Contains(t, string(out), `virtkit_controller_reconcile_time_seconds_sum{controller="virtualmachine"} 0.5`)
	assert.Contains(t, string(out), `virtkit_controller_reconcile_time_seconds_count{controller="virtualmachine"} 3`)
}

func TestNewControlPlaneCollectorErrors(t *testing.T) {
	_, err := NewControlPlaneCollector(ControlPlaneSources{}, Options{})
	require.ErrorIs(t, err, virtkit.ErrInvalidOptions)
	_, err = NewControlPlaneCollector(ControlPlaneSources{Objects: &fakeObjects{}, Controllers: []StatsProvider{nil}}, Options{})
	require.ErrorIs(t, err, virtkit.ErrInvalidOptions)
	assert.Contains(t, err.Error(), "Controllers[0]")
	_, err = NewControlPlaneCollector(ControlPlaneSources{Objects: &fakeObjects{}}, Options{ScrapeTimeout: -1})
	require.ErrorIs(t, err, virtkit.ErrInvalidOptions)

	// Controllers only (a node agent's process): no object series, no
	// list-error counter.
	c, err := NewControlPlaneCollector(ControlPlaneSources{Controllers: []StatsProvider{fakeController{Name: "node/n1"}}}, Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, testutil.CollectAndCount(c, "kubevirt_workqueue_depth"))
	assert.Zero(t, testutil.CollectAndCount(c, "kubevirt_vmi_migrations_in_running_phase"))
	assert.Zero(t, testutil.CollectAndCount(c, "virtkit_scrape_list_errors_total"))
}
