package virtkit_test

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit"
)

// A user's manifest may not place its VMI (status, the node-name label),
// and a VMI's spec cannot change after creation.
func ExampleAdmitCreate() {
	objs, _ := virtkit.Decode(strings.NewReader(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: web
  labels: {kubevirt.io/nodeName: n1}
spec:
  domain:
    devices: {}
    memory: {guest: 128Mi}
status:
  phase: Scheduled
  nodeName: n1
`))
	vmi := objs[0].(*virtkit.VirtualMachineInstance)
	virtkit.SetDefaults(vmi)
	for _, e := range virtkit.AdmitCreate(vmi) {
		fmt.Println(e.Type, e.Field)
	}
	fmt.Printf("status.nodeName after admission: %q\n", vmi.Status.NodeName)

	delete(vmi.Labels, virtkit.NodeNameLabel)
	changed := vmi.DeepCopy()
	changed.Spec.Domain.Memory.Guest = resource.NewQuantity(2<<30, resource.BinarySI)
	for _, e := range virtkit.AdmitUpdate(changed, vmi) {
		fmt.Println(e.Type, e.Field)
	}
	// Output:
	// Forbidden metadata.labels[kubevirt.io/nodeName]
	// status.nodeName after admission: ""
	// Forbidden spec.domain.memory.guest
}
