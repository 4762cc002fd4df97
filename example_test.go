package virtkit_test

import (
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
)

func ExampleDecode() {
	manifest := `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstanceMigration
metadata:
  name: migrate-web
  namespace: prod
spec:
  vmiName: web-1
---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: vsock-box
spec:
  runStrategy: Always
  template:
    spec:
      domain:
        devices:
          autoattachVSOCK: true
`
	objs, err := virtkit.Decode(strings.NewReader(manifest))
	for _, obj := range objs {
		fmt.Printf("decoded %s %s/%s\n", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName())
	}
	fmt.Println(err)
	fmt.Println(errors.Is(err, virtkit.ErrUnknownField))
	// Output:
	// decoded VirtualMachineInstanceMigration prod/migrate-web
	// document 1 (VirtualMachine vsock-box): spec.template.spec.domain.devices.autoattachVSOCK: not supported: a KubeVirt field for VSOCK, which virtkit does not model: it needs vhost-vsock on the host and a CID allocator across nodes, which virtkit does not have
	// true
}

func ExampleValidate() {
	objs, _ := virtkit.Decode(strings.NewReader(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: broken
spec:
  domain:
    devices:
      disks:
      - name: root
        cdrom:
          bus: virtio
    memory:
      guest: 64Mi
  volumes:
  - name: root
    containerDisk:
      image: quay.io/containerdisks/alpine:3.20
  - name: scratch
    emptyDisk: {}
`))
	vmi := objs[0]
	virtkit.SetDefaults(vmi)
	for _, e := range virtkit.Validate(vmi) {
		fmt.Printf("%s: %s\n", e.Field, e.Type)
	}
	// Output:
	// spec.volumes[1].emptyDisk.capacity: Required value
	// spec.domain.devices.disks[0].cdrom.bus: Invalid value
}

func ExampleSetCondition() {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	var vmi virtkit.VirtualMachineInstance
	conds := &vmi.Status.Conditions

	fmt.Println(virtkit.SetCondition(conds, virtkit.Condition{
		Type: virtkit.VirtualMachineInstanceReady, Status: virtkit.ConditionFalse, Reason: virtkit.GuestNotRunningReason,
	}, t0))
	// The same condition again changes nothing.
	fmt.Println(virtkit.SetCondition(conds, virtkit.Condition{
		Type: virtkit.VirtualMachineInstanceReady, Status: virtkit.ConditionFalse, Reason: virtkit.GuestNotRunningReason,
	}, t1))
	// A status change moves lastTransitionTime.
	fmt.Println(virtkit.SetCondition(conds, virtkit.Condition{
		Type: virtkit.VirtualMachineInstanceReady, Status: virtkit.ConditionTrue,
	}, t1))
	ready := virtkit.GetCondition(*conds, virtkit.VirtualMachineInstanceReady)
	fmt.Println(ready.Status, ready.LastTransitionTime.UTC().Format(time.Kitchen), vmi.IsReady())
	fmt.Println(virtkit.RemoveCondition(conds, virtkit.VirtualMachineInstanceReady), len(*conds))
	// Output:
	// true
	// false
	// true
	// True 10:01AM true
	// true 0
}

func ExamplePrintableStatus() {
	always := virtkit.RunStrategyAlways
	vm := &virtkit.VirtualMachine{Spec: virtkit.VirtualMachineSpec{RunStrategy: &always}}
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Status.Phase = virtkit.Running
	vmi.Status.Conditions = []virtkit.Condition{{
		Type: virtkit.VirtualMachineInstancePaused, Status: virtkit.ConditionTrue, Reason: virtkit.PausedByUserReason,
	}}
	fmt.Println(virtkit.PrintableStatus(virtkit.PrintableStatusInput{VM: vm, VMI: vmi, Now: metav1.Now()}))
	fmt.Println(virtkit.PrintableStatus(virtkit.PrintableStatusInput{VM: vm, VMICreationExpected: true, Now: metav1.Now()}))
	// Output:
	// Paused
	// Starting
}
