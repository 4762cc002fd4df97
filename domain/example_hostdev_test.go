package domain_test

import (
	"fmt"
	"strings"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

// A node assigns a host device to each of a VMI's GPUs and host devices,
// by the device's name in the VMI; the builder writes them as <hostdev>.
func ExampleOptions_hostDevices() {
	objs, err := virtkit.Decode(strings.NewReader(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: cuda, namespace: demo}
spec:
  domain:
    memory: {guest: 4Gi}
    devices:
      gpus: [{name: gpu1, deviceName: nvidia.com/TU104GL_Tesla_T4}]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	vmi := objs[0].(*virtkit.VirtualMachineInstance)
	dom, err := domain.Build(vmi, domain.Options{HostDevices: map[string]domain.AssignedDevice{
		"gpu1": {PCIAddress: "0000:65:00.0"},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	hd := dom.Devices.Hostdevs[0]
	a := hd.SubsysPCI.Source.Address
	fmt.Printf("%s managed=%s bus=%#x\n", hd.Alias.Name, hd.Managed, *a.Bus)

	_, err = domain.Build(vmi, domain.Options{})
	fmt.Println(err)
	// Output:
	// ua-gpu-gpu1 managed=yes bus=0x65
	// spec.domain.devices.gpus[0]: this node assigned no host device to gpu1: not supported by the domain builder
}
