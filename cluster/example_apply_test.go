package cluster_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// Apply admits what it stores on a user's behalf: a manifest's status is
// dropped, and a VMI's spec cannot change afterwards. FieldErrors gives
// the refused fields.
func ExampleFieldErrors() {
	ctx := context.Background()
	st := store.NewMemory()
	manifest := func(guest string) []virtkit.Object {
		objs, _ := virtkit.Decode(strings.NewReader(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: web}
spec:
  domain:
    devices: {}
    memory: {guest: ` + guest + `}
status: {phase: Running, nodeName: n1}
`))
		return objs
	}
	fmt.Println("create:", cluster.Apply(ctx, st, manifest("1Gi")...))
	var vmi virtkit.VirtualMachineInstance
	_ = st.Get(ctx, store.Key{Namespace: "default", Name: "web"}, &vmi)
	fmt.Printf("stored status.nodeName: %q\n", vmi.Status.NodeName)

	err := cluster.Apply(ctx, st, manifest("2Gi")...)
	for _, e := range cluster.FieldErrors(err) {
		fmt.Println(e.Type, e.Field)
	}
	// Output:
	// create: <nil>
	// stored status.nodeName: ""
	// Forbidden spec.domain.memory.guest
	// Forbidden spec.domain.memory.maxGuest
}
