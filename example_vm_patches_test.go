package virtkit_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
)

// A restore's or clone's patches are JSON patch operations, one per
// string, under the VM's spec, labels and annotations.
func ExampleApplyVMPatches() {
	halted := virtkit.RunStrategyHalted
	vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: map[string]string{"tier": "gold"}},
		Spec: virtkit.VirtualMachineSpec{RunStrategy: &halted}}
	out, err := virtkit.ApplyVMPatches(vm, []string{
		`{"op": "replace", "path": "/metadata/labels/tier", "value": "silver"}`,
		`{"op": "replace", "path": "/spec/runStrategy", "value": "Always"}`,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Labels["tier"], *out.Spec.RunStrategy)

	errs := virtkit.ValidateVMPatches([]string{`{"op": "replace", "path": "/metadata/name", "value": "x"}`}, field.NewPath("spec", "patches"))
	fmt.Println(errs.ToAggregate())
	// Output:
	// silver Always
	// spec.patches[0].path: Invalid value: "/metadata/name": patching is valid only under /spec/, /metadata/labels/ and /metadata/annotations/
}

// A DataVolume's source.snapshot names a volume snapshot that a
// VirtualMachineSnapshot's content records.
func ExampleFindVolumeSnapshot() {
	name := virtkit.VolumeSnapshotName("1234", "root")
	ready := true
	contents := []virtkit.VirtualMachineSnapshotContent{{
		ObjectMeta: metav1.ObjectMeta{Name: virtkit.SnapshotContentName("1234")},
		Spec: virtkit.VirtualMachineSnapshotContentSpec{VolumeBackups: []virtkit.VolumeBackup{{
			VolumeName: "root", VolumeSnapshotName: &name,
			PersistentVolumeClaim: virtkit.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "db-root"}},
		}}},
		Status: &virtkit.VirtualMachineSnapshotContentStatus{ReadyToUse: &ready},
	}}
	ref, ok := virtkit.FindVolumeSnapshot(contents, name)
	fmt.Println(ok, ref.Ready, ref.Backup.PersistentVolumeClaim.Name, ref.Content.Name)
	_, ok = virtkit.FindVolumeSnapshot(contents, "other")
	fmt.Println(ok, virtkit.MessageCloneWithoutSource("snapshot", "other"))
	// Output:
	// true true db-root vmsnapshot-content-1234
	// false The source snapshot other doesn't exist
}
