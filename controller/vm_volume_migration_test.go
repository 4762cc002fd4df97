package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
)

// volumeMigrationVM is a running VM with a container disk "root" and a
// claim "data" on claim "old", whose updateVolumesStrategy is Migration.
func volumeMigrationEnv(t *testing.T, data virtkit.VolumeSource, disk virtkit.Disk) *env {
	t.Helper()
	e := newEnv(t, 1)
	vm := newVM("vm", virtkit.RunStrategyAlways)
	s := virtkit.UpdateVolumesStrategyMigration
	vm.Spec.UpdateVolumesStrategy = &s
	spec := &vm.Spec.Template.Spec
	disk.Name = "data"
	spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, virtkit.Disk{Name: "root"}, disk)
	spec.Volumes = append(spec.Volumes,
		virtkit.Volume{Name: "root", VolumeSource: virtkit.VolumeSource{ContainerDisk: &virtkit.ContainerDiskSource{Image: "quay.io/containerdisks/fedora:40"}}},
		virtkit.Volume{Name: "data", VolumeSource: data})
	require.NoError(t, e.st.Create(e.ctx, vm))
	e.settle()
	require.NotNil(t, e.getVMI("vm"))
	return e
}

func pvc(name string) virtkit.VolumeSource {
	return virtkit.VolumeSource{PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{ClaimName: name}}
}

// setClaim points the template's data volume at src.
func (e *env) setClaim(src virtkit.VolumeSource) {
	e.t.Helper()
	vm := e.getVM("vm")
	vm.Spec.Template.Spec.Volumes[1].VolumeSource = src
	require.NoError(e.t, e.st.Update(e.ctx, vm))
	e.settle()
}

// endMigration writes the outcome of the VM's volume migration, as the
// migration reconciler would.
func (e *env) endMigration(phase virtkit.VirtualMachineInstanceMigrationPhase, reason string) {
	e.t.Helper()
	migs := e.migrations()
	require.Len(e.t, migs, 1)
	m := migs[0]
	m.Status.Phase = phase
	m.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{Completed: true,
		Failed: phase == virtkit.MigrationFailed, FailureReason: reason}
	require.NoError(e.t, e.st.UpdateStatus(e.ctx, &m))
	e.settle()
}

func dataClaim(vmi *virtkit.VirtualMachineInstance) string { return claimOf(&vmi.Spec.Volumes[1]) }

func TestVolumeMigration(t *testing.T) {
	for _, tc := range []struct {
		name string
		// then acts after the template moved data from "old" to "new".
		then             func(e *env)
		wantMigrations   int
		wantClaim        string // the VMI's data claim
		wantMigrated     bool   // the VMI's status.migratedVolumes lists data
		wantChange       virtkit.ConditionStatus
		wantChangeReason string
		wantRestart      string // RestartRequired reason, "" for none
		wantVMState      bool   // the VM's volumeMigrationState lists data
	}{
		{
			name:           "started: a migration with the changed volume",
			then:           func(*env) {},
			wantMigrations: 1, wantClaim: "old", wantMigrated: true,
			wantChange: virtkit.ConditionTrue, wantVMState: true,
		},
		{
			name:           "succeeded: the VMI runs on the new claim",
			then:           func(e *env) { e.endMigration(virtkit.MigrationSucceeded, "") },
			wantMigrations: 1, wantClaim: "new", wantVMState: true,
		},
		{
			name:           "failed: the VMI keeps the old claim and the VM says why",
			then:           func(e *env) { e.endMigration(virtkit.MigrationFailed, "target disk full") },
			wantMigrations: 1, wantClaim: "old",
			wantChange: virtkit.ConditionFalse, wantChangeReason: virtkit.VolumeMigrationFailedReason,
			wantRestart: ReasonVolumeMigrationFailed, wantVMState: true,
		},
		{
			name:           "cancelled: the template went back to the old claim",
			then:           func(e *env) { e.setClaim(pvc("old")) },
			wantMigrations: 0, wantClaim: "old",
			wantChange: virtkit.ConditionFalse, wantChangeReason: virtkit.VolumesChangeCancellationReason,
		},
		{
			name: "failed, then another claim: a new migration",
			then: func(e *env) {
				e.endMigration(virtkit.MigrationFailed, "target disk full")
				e.setClaim(pvc("newer"))
			},
			wantMigrations: 2, wantClaim: "old", wantMigrated: true,
			wantChange: virtkit.ConditionTrue, wantVMState: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := volumeMigrationEnv(t, pvc("old"), virtkit.Disk{})
			e.setClaim(pvc("new"))
			tc.then(e)

			assert.Len(t, e.migrations(), tc.wantMigrations)
			for _, m := range e.migrations() {
				assert.Equal(t, "vm", m.Labels[virtkit.VolumesUpdateMigrationLabel])
				assert.Equal(t, "vm", m.Spec.VMIName)
			}
			vmi := e.getVMI("vm")
			assert.Equal(t, tc.wantClaim, dataClaim(vmi))
			if tc.wantMigrated {
				require.Len(t, vmi.Status.MigratedVolumes, 1)
				mv := vmi.Status.MigratedVolumes[0]
				assert.Equal(t, "data", mv.VolumeName)
				assert.Equal(t, "old", mv.SourcePVCInfo.ClaimName)
				assert.Equal(t, e.getVM("vm").Spec.Template.Spec.Volumes[1].PersistentVolumeClaim.ClaimName, mv.DestinationPVCInfo.ClaimName)
			} else {
				assert.Empty(t, vmi.Status.MigratedVolumes)
			}
			c := virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceVolumesChange)
			if tc.wantChange == "" {
				assert.Nil(t, c)
			} else if assert.NotNil(t, c) {
				assert.Equal(t, tc.wantChange, c.Status)
				assert.Equal(t, tc.wantChangeReason, c.Reason)
			}
			vm := e.getVM("vm")
			r := virtkit.GetCondition(vm.Status.Conditions, virtkit.VirtualMachineRestartRequired)
			if tc.wantRestart == "" {
				assert.Nil(t, r)
			} else if assert.NotNil(t, r) {
				assert.Equal(t, tc.wantRestart, r.Reason)
				assert.Contains(t, r.Message, "target disk full")
			}
			if tc.wantVMState {
				ms := volumeMigrationState(&vm.Status)
				require.NotNil(t, ms)
				require.Len(t, ms.MigratedVolumes, 1)
				assert.Equal(t, "data", ms.MigratedVolumes[0].VolumeName)
			} else {
				assert.Nil(t, vm.Status.VolumeUpdateState)
			}
		})
	}
}

// The changes KubeVirt refuses to migrate keep the restart path.
func TestVolumeMigrationRefused(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name        string
		from, to    virtkit.VolumeSource
		disk        virtkit.Disk
		wantRestart string
		wantChange  string // VolumesChange=False reason, "" for none
	}{
		{name: "a hot-plugged claim",
			from:        virtkit.VolumeSource{PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{ClaimName: "old", Hotpluggable: true}},
			to:          virtkit.VolumeSource{PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{ClaimName: "new", Hotpluggable: true}},
			wantRestart: ReasonVolumeMigrationInvalid},
		{name: "a shareable disk", from: pvc("old"), to: pvc("new"), disk: virtkit.Disk{Shareable: &yes},
			wantRestart: ReasonVolumeMigrationInvalid},
		{name: "a LUN", from: pvc("old"), to: pvc("new"), disk: virtkit.Disk{DiskDevice: virtkit.DiskDevice{LUN: &virtkit.LunTarget{}}},
			wantRestart: ReasonVolumeMigrationInvalid},
		{name: "not a claim: a container disk", from: pvc("old"),
			to:          virtkit.VolumeSource{ContainerDisk: &virtkit.ContainerDiskSource{Image: "quay.io/containerdisks/fedora:41"}},
			wantRestart: ReasonNotLiveUpdatable},
		{name: "a DataVolume that does not exist", from: pvc("old"),
			to:         virtkit.VolumeSource{DataVolume: &virtkit.DataVolumeSource{Name: "absent"}},
			wantChange: ReasonDestinationVolumeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := volumeMigrationEnv(t, tc.from, tc.disk)
			e.setClaim(tc.to)
			assert.Empty(t, e.migrations(), "no volume migration")
			vmi := e.getVMI("vm")
			assert.Equal(t, "old", dataClaim(vmi))
			assert.Empty(t, vmi.Status.MigratedVolumes)
			r := virtkit.GetCondition(e.getVM("vm").Status.Conditions, virtkit.VirtualMachineRestartRequired)
			if tc.wantRestart == "" {
				assert.Nil(t, r)
			} else if assert.NotNil(t, r) {
				assert.Equal(t, tc.wantRestart, r.Reason)
			}
			c := virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceVolumesChange)
			if tc.wantChange == "" {
				assert.Nil(t, c)
			} else if assert.NotNil(t, c) {
				assert.Equal(t, tc.wantChange, c.Reason)
			}
		})
	}
}

// A DataVolume destination that exists migrates; the VMI then uses it as
// a DataVolume.
func TestVolumeMigrationToDataVolume(t *testing.T) {
	e := volumeMigrationEnv(t, pvc("old"), virtkit.Disk{})
	dv := &virtkit.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dv-new"}}
	require.NoError(t, e.st.Create(e.ctx, dv))
	dv.Status.Phase = virtkit.DataVolumeImportInProgress
	require.NoError(t, e.st.UpdateStatus(e.ctx, dv))
	e.setClaim(virtkit.VolumeSource{DataVolume: &virtkit.DataVolumeSource{Name: "dv-new"}})
	// Not filled yet: the copy waits for it.
	require.Empty(t, e.migrations())
	c := virtkit.GetCondition(e.getVMI("vm").Status.Conditions, virtkit.VirtualMachineInstanceVolumesChange)
	require.NotNil(t, c)
	assert.Equal(t, virtkit.ConditionFalse, c.Status)
	assert.Equal(t, ReasonDestinationVolumeNotReady, c.Reason)

	dv.Status.Phase = virtkit.DataVolumeSucceeded
	require.NoError(t, e.st.UpdateStatus(e.ctx, dv))
	e.settle()
	require.Len(t, e.migrations(), 1)
	e.endMigration(virtkit.MigrationSucceeded, "")
	vmi := e.getVMI("vm")
	require.NotNil(t, vmi.Spec.Volumes[1].DataVolume)
	assert.Equal(t, "dv-new", vmi.Spec.Volumes[1].DataVolume.Name)
	assert.Nil(t, virtkit.GetCondition(e.getVM("vm").Status.Conditions, virtkit.VirtualMachineRestartRequired))
}

// A VMI that ends during a volume migration leaves its VM waiting for the
// user (ManualRecoveryRequired, no new VMI on claims the guest never ran
// on) until the template goes back to the source claims.
func TestVolumeMigrationInterrupted(t *testing.T) {
	e := volumeMigrationEnv(t, pvc("old"), virtkit.Disk{})
	e.setClaim(pvc("new"))
	require.Len(t, e.migrations(), 1)
	old := e.getVMI("vm").UID
	e.guestStops("vm", virtkit.Failed)
	e.settle()

	c := virtkit.GetCondition(e.getVM("vm").Status.Conditions, virtkit.VirtualMachineManualRecoveryRequired)
	require.NotNil(t, c)
	assert.Equal(t, ReasonVolumeMigrationInterrupted, c.Reason)
	if v := e.getVMI("vm"); v != nil {
		assert.Equal(t, old, v.UID, "no new VMI while manual recovery is required")
	}

	e.setClaim(pvc("old"))
	vm := e.getVM("vm")
	assert.Nil(t, virtkit.GetCondition(vm.Status.Conditions, virtkit.VirtualMachineManualRecoveryRequired))
	assert.Nil(t, vm.Status.VolumeUpdateState)
	v := e.getVMI("vm")
	require.NotNil(t, v)
	assert.NotEqual(t, old, v.UID, "the VM starts again on its source claims")
	assert.Equal(t, "old", dataClaim(v))
}
