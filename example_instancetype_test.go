package virtkit_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
)

// An instancetype and a preference decoded from manifests and expanded
// into a VM's template as the VM controller does when it creates the
// VMI: the vCPUs laid out as the preference prefers, the guest memory,
// and the preference's disk bus where the template sets none. A template
// that sets what the instancetype sets is a conflict, reported by path.
func ExampleApplyInstancetype() {
	objs, err := virtkit.DecodeBytes([]byte(`apiVersion: instancetype.kubevirt.io/v1beta1
kind: VirtualMachineClusterInstancetype
metadata:
  name: u1.large
spec:
  cpu:
    guest: 4
  memory:
    guest: 8Gi
---
apiVersion: instancetype.kubevirt.io/v1beta1
kind: VirtualMachineClusterPreference
metadata:
  name: cores
spec:
  cpu:
    preferredCPUTopology: cores
  devices:
    preferredDiskBus: sata
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	it := objs[0].(*virtkit.VirtualMachineClusterInstancetype)
	pref := objs[1].(*virtkit.VirtualMachineClusterPreference)

	tmpl := virtkit.VirtualMachineInstanceTemplateSpec{Spec: virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{
		Devices: virtkit.Devices{Disks: []virtkit.Disk{{Name: "root"}}},
	}}}
	base := field.NewPath("spec", "template", "spec")
	if errs := virtkit.ApplyInstancetype(&tmpl, &it.Spec, &pref.Spec, base); len(errs) > 0 {
		fmt.Println(errs.ToAggregate())
		return
	}
	dom := tmpl.Spec.Domain
	fmt.Printf("sockets=%d cores=%d threads=%d memory=%s bus=%s\n",
		dom.CPU.Sockets, dom.CPU.Cores, dom.CPU.Threads, dom.Memory.Guest, dom.Devices.Disks[0].Disk.Bus)

	conflicting := virtkit.VirtualMachineInstanceTemplateSpec{Spec: virtkit.VirtualMachineInstanceSpec{
		Domain: virtkit.DomainSpec{CPU: &virtkit.CPU{Sockets: 2}}}}
	for _, e := range virtkit.ApplyInstancetype(&conflicting, &it.Spec, nil, base) {
		fmt.Println(e.Field)
	}
	// Output:
	// sockets=1 cores=4 threads=1 memory=8Gi bus=sata
	// spec.template.spec.domain.cpu.sockets
}
