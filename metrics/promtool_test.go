package metrics

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/migration"
)

// promtoolCheck runs `promtool check metrics` and fails on any parse error
// or lint warning.
func promtoolCheck(t *testing.T, exposition []byte) {
	t.Helper()
	promtool := testenv.LookTool(t, "promtool", "Debian prometheus")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(exposition)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics:\n%s", out)
	assert.Empty(t, strings.TrimSpace(string(out)), "promtool warnings")
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
	vm := virtkit.VirtualMachine{}
	vm.Namespace, vm.Name = "ns", "vm"
	vm.CreationTimestamp = mt(0)
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

	job := fakeJob{Type: hypervisor.JobUnbounded, DataTotal: some[uint64](1 << 30), DataProcessed: some[uint64](1 << 29),
		DataRemaining: some[uint64](1 << 29), MemoryDirtyRate: some[uint64](1 << 20), MemoryBps: some[uint64](1 << 27)}
	snap := migration.Snapshot{Domain: "ns_vm", Strategy: "PreCopy", Throttle: 10, DirtyRate: hypervisor.Some(1e6), Bandwidth: hypervisor.Some(1e8),
		DowntimeLimit: time.Second, Prediction: &migration.Prediction{Converges: true, Total: time.Minute, Downtime: time.Second},
		Decisions: []migration.Decision{{Action: migration.Action{Kind: migration.ActionStart}}}}
	dom, err := NewDomainCollector(DomainSources{Objects: objs, Nodes: []NodeSource{{
		Name: "src", Domains: &fakeDomains{stats: map[string]hypervisor.DomainStats{"ns_vm": fullStats()}},
		Guest:      fakeGuest{"ns_vm": {{DiskName: "vda1", MountPoint: "/", FileSystemType: "ext4", UsedBytes: 1, TotalBytes: 2}}},
		Migrations: fakeMigrations{{Domain: "ns_vm", Job: job, Engine: fakeEngine(snap)}},
	}}}, Options{})
	require.NoError(t, err)
	cp, err := NewControlPlaneCollector(ControlPlaneSources{Objects: objs, Controllers: []StatsProvider{fakeController{Name: "vm"}}}, Options{})
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
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems)
	promtoolCheck(t, text)
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
