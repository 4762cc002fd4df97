package domain_test

import (
	"fmt"
	"strings"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

// From a kubevirt.io/v1 manifest to a libvirt domain: decode, default and
// validate as the API server would, then Build returns the document as Go
// structs (libvirtxml) to inspect or adjust before marshalling it.
func ExampleBuild() {
	objs, err := virtkit.Decode(strings.NewReader(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: web, namespace: demo}
spec:
  domain:
    cpu: {cores: 2}
    memory: {guest: 1Gi}
    devices:
      disks: [{name: root, disk: {bus: virtio}}]
  volumes:
  - {name: root, containerDisk: {image: quay.io/containerdisks/fedora:latest}}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	vmi := objs[0].(*virtkit.VirtualMachineInstance)
	virtkit.SetDefaults(vmi)
	if errs := virtkit.Validate(vmi); len(errs) > 0 {
		fmt.Println(errs.ToAggregate())
		return
	}
	dom, err := domain.Build(vmi, domain.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("name:", dom.Name)
	fmt.Println("memory:", dom.Memory.Value, dom.Memory.Unit)
	fmt.Println("vcpus:", dom.VCPU.Value, "cores:", dom.CPU.Topology.Cores)
	for _, d := range dom.Devices.Disks {
		fmt.Println("disk:", d.Alias.Name, d.Target.Dev, d.Target.Bus)
	}
	for _, i := range dom.Devices.Interfaces {
		fmt.Println("interface:", i.Alias.Name, i.Model.Type)
	}
	// Output:
	// name: demo_web
	// memory: 1073741824 b
	// vcpus: 2 cores: 2
	// disk: ua-root vda virtio
	// interface: ua-default virtio-non-transitional
}
