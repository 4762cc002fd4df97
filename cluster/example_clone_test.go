package cluster_test

import (
	"fmt"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// Clone a stopped VM with KubeVirt's VirtualMachineClone: the target is a
// new, stopped VM on a copy of the source's disk, with the labels the
// filters keep and the MAC address the clone gives it.
func Example_cloneVM() {
	ctx, c, stop, err := startAndApply(60*time.Second, `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: web
  labels: {app: web, owner: alice}
spec:
  runStrategy: Halted
  dataVolumeTemplates:
  - metadata: {name: web-root}
    spec:
      source: {blank: {}}
      storage: {resources: {requests: {storage: 1Mi}}}
  template:
    spec:
      domain:
        devices:
          disks: [{name: root, disk: {bus: virtio}}]
          interfaces: [{name: default, masquerade: {}, macAddress: "02:00:00:00:00:01"}]
        resources: {requests: {memory: 64Mi}}
      networks: [{name: default, pod: {}}]
      volumes: [{name: root, dataVolume: {name: web-root}}]
---
apiVersion: clone.kubevirt.io/v1beta1
kind: VirtualMachineClone
metadata:
  name: web-clone
spec:
  source: {apiGroup: kubevirt.io, kind: VirtualMachine, name: web}
  target: {apiGroup: kubevirt.io, kind: VirtualMachine, name: web-2}
  labelFilters: ["*", "!owner"]
  newMacAddresses: {default: "02:00:00:00:00:02"}
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	cl, err := cluster.WaitFor(ctx, c.Store(), store.Key{Namespace: "default", Name: "web-clone"},
		func() *virtkit.VirtualMachineClone { return &virtkit.VirtualMachineClone{} }, &virtkit.VirtualMachineCloneList{},
		func(cl *virtkit.VirtualMachineClone, found bool) bool {
			return found && (cl.Status.Phase == virtkit.CloneSucceeded || cl.Status.Phase == virtkit.CloneFailed)
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	vm := &virtkit.VirtualMachine{}
	if err := c.Store().Get(ctx, store.Key{Namespace: "default", Name: *cl.Status.TargetName}, vm); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("clone:", cl.Status.Phase, "target:", vm.Name, *vm.Spec.RunStrategy)
	fmt.Println("labels:", vm.Labels)
	fmt.Println("mac:", vm.Spec.Template.Spec.Domain.Devices.Interfaces[0].MacAddress)
	// Output:
	// clone: Succeeded target: web-2 Halted
	// labels: map[app:web]
	// mac: 02:00:00:00:00:02
}
