package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
)

// snapshotFixture is a succeeded snapshot of ns/vm, one in progress, a
// completed restore and a failed one, and two DataVolumes restored from
// ns/vm next to one that was not.
func snapshotFixture() ([]virtkit.VirtualMachineSnapshot, []virtkit.VirtualMachineRestore, []virtkit.DataVolume) {
	snap := func(name string, phase virtkit.VirtualMachineSnapshotPhase, ready bool) virtkit.VirtualMachineSnapshot {
		s := virtkit.VirtualMachineSnapshot{}
		s.Namespace, s.Name, s.UID = "ns", name, types.UID("uid-"+name)
		s.CreationTimestamp = mt(2 * time.Second)
		s.Spec.Source = virtkit.TypedLocalObjectReference{Kind: virtkit.KindVirtualMachine, Name: "vm"}
		s.Status = &virtkit.VirtualMachineSnapshotStatus{Phase: phase, ReadyToUse: &ready, CreationTime: ptr(mt(3 * time.Second))}
		return s
	}
	restore := func(name string, complete, failed bool) virtkit.VirtualMachineRestore {
		r := virtkit.VirtualMachineRestore{}
		r.Namespace, r.Name, r.UID = "ns", name, types.UID("uid-"+name)
		r.Spec.Target = virtkit.TypedLocalObjectReference{Kind: virtkit.KindVirtualMachine, Name: "vm"}
		r.Spec.VirtualMachineSnapshotName = "s1"
		r.Status = &virtkit.VirtualMachineRestoreStatus{Complete: &complete}
		if failed {
			r.Status.Conditions = []virtkit.Condition{{Type: virtkit.ConditionFailure, Status: virtkit.ConditionTrue}}
		}
		return r
	}
	dv := func(name, size string, restored bool) virtkit.DataVolume {
		d := virtkit.DataVolume{}
		d.Namespace, d.Name = "ns", name
		d.Spec.Storage = &virtkit.PersistentVolumeClaimSpec{Resources: virtkit.VolumeResourceRequirements{
			Requests: virtkit.ResourceList{virtkit.ResourceStorage: resource.MustParse(size)}}}
		if restored {
			d.Labels = map[string]string{virtkit.RestoreSourceVMNameLabel: "vm", virtkit.RestoreSourceVMNamespaceLabel: "ns"}
		}
		return d
	}
	return []virtkit.VirtualMachineSnapshot{snap("s1", virtkit.SnapshotSucceeded, true), snap("s2", virtkit.SnapshotInProgress, false)},
		[]virtkit.VirtualMachineRestore{restore("r1", true, false), restore("r2", false, true)},
		[]virtkit.DataVolume{dv("restore-a", "1Gi", true), dv("restore-b", "2Gi", true), dv("other", "5Gi", false)}
}

func TestSnapshotFamilies(t *testing.T) {
	snaps, restores, dvs := snapshotFixture()
	tests := []struct {
		name      string
		objs      *fakeObjects
		want, not []string
	}{{
		name: "snapshots, restores and restored volumes",
		objs: &fakeObjects{snaps: snaps, restores: restores, dvs: dvs},
		want: []string{
			`kubevirt_vmsnapshot_succeeded_timestamp_seconds{name="vm",namespace="ns",snapshot_name="s1"} 1.767323048e+09`,
			`kubevirt_vmsnapshot_info{name="s1",namespace="ns",phase="succeeded",ready_to_use="true",uid="uid-s1",vm="vm"} 1`,
			`kubevirt_vmsnapshot_info{name="s2",namespace="ns",phase="inprogress",ready_to_use="false",uid="uid-s2",vm="vm"} 1`,
			`kubevirt_vmsnapshot_create_date_timestamp_seconds{name="s2",namespace="ns"} 1.767323047e+09`,
			`kubevirt_vmrestore_info{complete="true",failure="false",name="r1",namespace="ns",snapshot_name="s1",uid="uid-r1",vm="vm"} 1`,
			`kubevirt_vmrestore_info{complete="false",failure="true",name="r2",namespace="ns",snapshot_name="s1",uid="uid-r2",vm="vm"} 1`,
			`kubevirt_vmsnapshot_persistentvolumeclaim_labels{label_restore_kubevirt_io_source_vm_name="vm",label_restore_kubevirt_io_source_vm_namespace="ns",namespace="ns",persistentvolumeclaim="restore-a",vm_name="vm",vm_namespace="ns"} 1`,
			`kubevirt_vmsnapshot_disks_restored_from_source{vm_name="vm",vm_namespace="ns"} 2`,
			`kubevirt_vmsnapshot_disks_restored_from_source_bytes{vm_name="vm",vm_namespace="ns"} 3.221225472e+09`,
		},
		// Only a succeeded snapshot has a success time; a volume
		// not restored is no restored claim.
		not: []string{`snapshot_name="s2"`, `persistentvolumeclaim="other"`},
	}, {
		name: "a store without the snapshot kinds serves none of them",
		objs: &fakeObjects{},
		not:  []string{"kubevirt_vmsnapshot_", "kubevirt_vmrestore_"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cp, err := NewControlPlaneCollector(ControlPlaneSources{Objects: tc.objs}, Options{})
			require.NoError(t, err)
			reg := prometheus.NewPedanticRegistry()
			require.NoError(t, reg.Register(cp))
			text := string(gatherText(t, reg))
			for _, w := range tc.want {
				assert.Contains(t, text, w)
			}
			for _, n := range tc.not {
				assert.NotContains(t, text, n)
			}
			assert.Contains(t, text, "kubevirt_info")
		})
	}
}
