package cluster_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// Snapshot a stopped VM with KubeVirt's VirtualMachineSnapshot and restore
// it into a new VM with a VirtualMachineRestore: the new VM is created
// stopped, on a restored copy of the disk.
func Example_snapshotAndRestore() {
	ctx, c, stop, err := startAndApply(60*time.Second, `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: db
spec:
  runStrategy: Halted
  dataVolumeTemplates:
  - metadata: {name: db-root}
    spec:
      source: {blank: {}}
      storage: {resources: {requests: {storage: 1Mi}}}
  template:
    spec:
      domain:
        devices: {disks: [{name: root, disk: {bus: virtio}}]}
        resources: {requests: {memory: 64Mi}}
      volumes: [{name: root, dataVolume: {name: db-root}}]
---
apiVersion: snapshot.kubevirt.io/v1beta1
kind: VirtualMachineSnapshot
metadata:
  name: db-snap
spec:
  source: {apiGroup: kubevirt.io, kind: VirtualMachine, name: db}
---
apiVersion: snapshot.kubevirt.io/v1beta1
kind: VirtualMachineRestore
metadata:
  name: db-copy
spec:
  target: {apiGroup: kubevirt.io, kind: VirtualMachine, name: db-copy}
  virtualMachineSnapshotName: db-snap
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	snap, err := cluster.WaitFor(ctx, c.Store(), store.Key{Namespace: "default", Name: "db-snap"},
		func() *virtkit.VirtualMachineSnapshot { return &virtkit.VirtualMachineSnapshot{} }, &virtkit.VirtualMachineSnapshotList{},
		func(s *virtkit.VirtualMachineSnapshot, found bool) bool {
			return found && s.Status != nil && s.Status.ReadyToUse != nil && *s.Status.ReadyToUse
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("snapshot:", snap.Status.Phase, "volumes:", snap.Status.SnapshotVolumes.IncludedVolumes)
	rs, err := cluster.WaitFor(ctx, c.Store(), store.Key{Namespace: "default", Name: "db-copy"},
		func() *virtkit.VirtualMachineRestore { return &virtkit.VirtualMachineRestore{} }, &virtkit.VirtualMachineRestoreList{},
		func(r *virtkit.VirtualMachineRestore, found bool) bool {
			return found && r.Status != nil && r.Status.Complete != nil && *r.Status.Complete
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	vm := &virtkit.VirtualMachine{}
	if err := c.Store().Get(ctx, store.Key{Namespace: "default", Name: "db-copy"}, vm); err != nil {
		fmt.Println(err)
		return
	}
	disk := vm.Spec.Template.Spec.Volumes[0].DataVolume.Name
	fmt.Println("restore complete:", *rs.Status.Complete, "new VM:", vm.Name, *vm.Spec.RunStrategy,
		"disk restored:", strings.HasPrefix(disk, "restore-") && disk == rs.Status.Restores[0].PersistentVolumeClaim)
	// Output:
	// snapshot: Succeeded volumes: [root]
	// restore complete: true new VM: db-copy Halted disk restored: true
}
