package virtkit_test

import (
	"fmt"

	"github.com/virtkit/virtkit"
)

// The KubeVirt object permits host devices by vendor:device ID (PCI) or
// by mediated device type name, each advertised under a resource name
// that VMIs' gpus and hostDevices name; Validate checks the selectors.
func ExamplePermittedHostDevices() {
	objs, err := virtkit.DecodeBytes([]byte(`apiVersion: kubevirt.io/v1
kind: KubeVirt
metadata: {name: kubevirt, namespace: kubevirt}
spec:
  configuration:
    permittedHostDevices:
      pciHostDevices:
      - pciVendorSelector: "10DE:1EB8"
        resourceName: nvidia.com/TU104GL_Tesla_T4
      - pciVendorSelector: "8086"
        resourceName: intel.com/qat
      mediatedDevices:
      - mdevNameSelector: GRID T4-1Q
        resourceName: nvidia.com/GRID_T4-1Q
`))
	if err != nil {
		panic(err)
	}
	kv := objs[0].(*virtkit.KubeVirt)
	fmt.Println(len(kv.Spec.Configuration.PermittedHostDevices.PciHostDevices), "PCI,",
		len(kv.Spec.Configuration.PermittedHostDevices.MediatedDevices), "mediated")
	for _, e := range virtkit.Validate(kv) {
		fmt.Println(e.Field)
	}
	// Output:
	// 2 PCI, 1 mediated
	// spec.configuration.permittedHostDevices.pciHostDevices[1].pciVendorSelector
}
