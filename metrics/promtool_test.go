package metrics

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/internal/promcheck"
	"github.com/virtkit/virtkit/migration"
)

// lintProblems are client_golang's lint problems but those KubeVirt's own
// names cause (the same rules as promtool's, filtered alike).
func lintProblems(t *testing.T, g prometheus.Gatherer) []string {
	t.Helper()
	problems, err := testutil.GatherAndLint(g)
	require.NoError(t, err)
	findings := make([]string, 0, len(problems))
	for _, p := range problems {
		findings = append(findings, p.Metric+" "+p.Text)
	}
	return promcheck.Filter(gatherText(t, g), findings)
}

func gatherText(t *testing.T, g prometheus.Gatherer) []byte {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		require.NoError(t, enc.Encode(mf))
	}
	return buf.Bytes()
}

// fullRegistry has every family the collectors export, from fake sources
// with every value measured: a running migration with its engine, a VM,
// finished migrations and a controller.
func fullRegistry(t *testing.T) *prometheus.Registry {
	t.Helper()
	dom, cp := fullCollectors(t)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(dom))
	require.NoError(t, reg.Register(cp))
	return reg
}

// fullCollectors are fullRegistry's collectors, unregistered.
func fullCollectors(t *testing.T) (*DomainCollector, *ControlPlaneCollector) {
	t.Helper()
	vmi := withTransitions(runningVMI("ns", "vm", "src", map[string]string{"kubevirt.io/vm": "vm", "app": "x"}),
		virtkit.Pending, time.Second, virtkit.Running, 5*time.Second)
	vmi.DeletionTimestamp = ptr(mt(4 * time.Second))
	vmi.Status.Interfaces = []virtkit.VirtualMachineInstanceNetworkInterface{{Name: "default", IP: "10.0.2.2"}}
	vmi.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{
		MigrationUID: "m1", SourceNode: "src", StartTimestamp: ptr(mt(6 * time.Second)), EndTimestamp: ptr(mt(9 * time.Second)), Failed: true,
	}
	vmi.Spec.Domain.Devices.Interfaces = []virtkit.Interface{{Name: "default", InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Masquerade: &virtkit.InterfaceMasquerade{}}}}
	vmi.Spec.Networks = []virtkit.Network{{Name: "default", NetworkSource: virtkit.NetworkSource{Pod: &virtkit.PodNetwork{}}}}
	vm := virtkit.VirtualMachine{}
	vm.Namespace, vm.Name = "ns", "vm"
	vm.Labels = map[string]string{"app.kubernetes.io/name": "demo"}
	vm.CreationTimestamp = mt(0)
	vm.Spec.Template = &virtkit.VirtualMachineInstanceTemplateSpec{Spec: vmi.Spec}
	vm.Spec.Template.Spec.Domain.Resources.Limits = virtkit.ResourceList{virtkit.ResourceMemory: resource.MustParse("2Gi"), virtkit.ResourceCPU: resource.MustParse("2")}
	vm.Spec.Template.Spec.Volumes = []virtkit.Volume{{Name: "rootdisk", VolumeSource: virtkit.VolumeSource{DataVolume: &virtkit.DataVolumeSource{Name: "root"}}}}
	vm.Spec.DataVolumeTemplates = []virtkit.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: "root"},
		Spec: virtkit.DataVolumeSpec{Storage: &virtkit.PersistentVolumeClaimSpec{Resources: virtkit.VolumeResourceRequirements{
			Requests: virtkit.ResourceList{virtkit.ResourceStorage: resource.MustParse("10Gi")}}}}}}
	vm.Status.PrintableStatus = virtkit.VirtualMachineStatusMigrating
	vm.Status.Conditions = []virtkit.Condition{{Type: "Ready", Status: "True", LastTransitionTime: mt(time.Second)}}
	mig := func(name string, phase virtkit.VirtualMachineInstanceMigrationPhase) virtkit.VirtualMachineInstanceMigration {
		m := virtkit.VirtualMachineInstanceMigration{}
		m.Namespace, m.Name, m.UID = "ns", name, types.UID(name)
		m.Spec.VMIName = "vm"
		m.Status.Phase = phase
		m.CreationTimestamp = mt(0)
		m.Status.PhaseTransitionTimestamps = []virtkit.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{{Phase: phase, PhaseTransitionTimestamp: mt(9 * time.Second)}}
		return m
	}
	objs := &fakeObjects{vmis: []virtkit.VirtualMachineInstance{vmi}, vms: []virtkit.VirtualMachine{vm},
		migs: []virtkit.VirtualMachineInstanceMigration{mig("m0", virtkit.MigrationSucceeded), mig("m1", virtkit.MigrationFailed)}}
	objs.snaps, objs.restores, objs.dvs = snapshotFixture()

	job := fakeJob{Type: hypervisor.JobUnbounded, DataTotal: some[uint64](1 << 30), DataProcessed: some[uint64](1 << 29),
		DataRemaining: some[uint64](1 << 29), MemoryDirtyRate: some[uint64](1 << 20), MemoryBps: some[uint64](1 << 27),
		Mode: hypervisor.ModePostCopy, PostcopyRequests: some[uint64](7)}
	snap := migration.Snapshot{Domain: "ns_vm", Strategy: "PreCopy", Throttle: 10, DirtyRate: hypervisor.Some(1e6), Bandwidth: hypervisor.Some(1e8),
		DowntimeLimit: time.Second, Prediction: &migration.Prediction{Converges: true, Total: time.Minute, Downtime: time.Second},
		Decisions: []migration.Decision{{Action: migration.Action{Kind: migration.ActionStart}}}}
	dom, err := NewDomainCollector(DomainSources{Objects: objs, Nodes: []NodeSource{{
		Name: "src", Domains: &fakeHost{fakeDomains: &fakeDomains{stats: map[string]hypervisor.DomainStats{"ns_vm": fullStats()},
			xml: map[string]string{"ns_vm": `<domain type="qemu"><devices/></domain>`}},
			cpus: 4, machines: []hypervisor.MachineType{{Name: "pc-i440fx-1.4", Deprecated: true}, {Name: "pc-q35-7.2"}},
			mem: &hypervisor.NodeMemory{Total: some[uint64](16 << 30), Free: some[uint64](4 << 30), Buffers: some[uint64](1 << 28),
				Cached: some[uint64](2 << 30), Available: some[uint64](6 << 30)}},
		Guest:      fakeGuest{"ns_vm": {{DiskName: "vda1", MountPoint: "/", FileSystemType: "ext4", UsedBytes: 1, TotalBytes: 2}}},
		Migrations: fakeMigrations{{Domain: "ns_vm", Job: job, Engine: fakeEngine(snap)}},
	}}}, Options{})
	require.NoError(t, err)
	ctrl := fakeController{Name: "vm", Relists: 1}
	cp, err := NewControlPlaneCollector(ControlPlaneSources{Objects: objs, Controllers: []StatsProvider{ctrl},
		ControlPlane: []StatsProvider{ctrl}, Handlers: []HandlerStatus{{Node: "src", Ready: func() bool { return true }}}}, Options{})
	require.NoError(t, err)
	return dom, cp
}

func TestFullExpositionLint(t *testing.T) {
	reg := fullRegistry(t)
	text := gatherText(t, reg)
	// Every family is there, so the lint below covers all of them.
	exported := map[string]bool{}
	for _, l := range strings.Split(string(text), "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[1] == "TYPE" {
			exported[f[2]] = true
		}
	}
	var missing []string
	for name := range familyNames() {
		if strings.HasPrefix(name, "kubevirt_vm_") && strings.HasSuffix(name, "_status_last_transition_timestamp_seconds") &&
			name != "kubevirt_vm_migrating_status_last_transition_timestamp_seconds" {
			continue // one status group per VM
		}
		if !exported[name] {
			missing = append(missing, name)
		}
	}
	assert.Empty(t, missing, "families not exported by the full fixture")
	assert.Empty(t, lintProblems(t, reg))
	promcheck.RequireClean(t, text)
}

func TestInvalidUTF8FromGuestDoesNotBreakTheScrape(t *testing.T) {
	vmi := runningVMI("ns", "vm", "n1", nil)
	vmi.Status.GuestOSInfo.Name = "bad\xffname"
	objs := &fakeObjects{vmis: []virtkit.VirtualMachineInstance{vmi}}
	dom, err := NewDomainCollector(DomainSources{Objects: objs, Nodes: []NodeSource{{Name: "n1",
		Domains: &fakeDomains{stats: map[string]hypervisor.DomainStats{"ns_vm": fullStats()}},
		Guest:   fakeGuest{"ns_vm": {{DiskName: "vd\xfe", MountPoint: "/\xff", FileSystemType: "ext4", UsedBytes: 1, TotalBytes: 2}}},
	}}}, Options{})
	require.NoError(t, err)
	cp, err := NewControlPlaneCollector(ControlPlaneSources{Objects: objs}, Options{})
	require.NoError(t, err)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(dom))
	require.NoError(t, reg.Register(cp))
	text := gatherText(t, reg)
	for _, want := range []string{"mount_point=\"/\uFFFD\"", "disk_name=\"vd\uFFFD\"", "guest_os_name=\"bad\uFFFDname\""} {
		assert.True(t, strings.Contains(string(text), want), "exposition lacks %s", want)
	}
}

func TestConcurrentScrapes(t *testing.T) {
	reg := fullRegistry(t)
	want := gatherText(t, reg)
	errs := make(chan error, 8)
	texts := make(chan []byte, 8)
	for range 8 {
		go func() {
			mfs, err := reg.Gather()
			if err != nil {
				errs <- err
				return
			}
			var buf bytes.Buffer
			enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
			for _, mf := range mfs {
				if err := enc.Encode(mf); err != nil {
					errs <- err
					return
				}
			}
			texts <- buf.Bytes()
		}()
	}
	for range 8 {
		select {
		case err := <-errs:
			t.Fatal(err)
		case got := <-texts:
			// Fixed sources: every scrape sees the same exposition.
			assert.Equal(t, string(want), string(got))
		}
	}
}
