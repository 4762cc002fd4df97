package admission_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/virtkit/virtkit/admission"
	"github.com/virtkit/virtkit/store"
)

// The chain defaults a user's VMI, then gathers the field errors of every
// validating step: here validation's and create admission's.
func Example() {
	ctx := context.Background()
	chain := admission.New(admission.Options{Lookup: store.NewMemory()})

	obj := decodeOne(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: web
  namespace: default
  labels: {kubevirt.io/nodeName: n1}
spec:
  domain:
    devices: {disks: [{name: missing}]}
    memory: {guest: 128Mi}
`)
	err := chain.Admit(ctx, admission.AttributesFor(admission.Create, obj, nil))
	fmt.Println(errors.Is(err, admission.ErrInvalid))
	for _, e := range admission.FieldErrors(err) {
		fmt.Println(e.Type, e.Field)
	}
	// Output:
	// true
	// Not found spec.domain.devices.disks[0].name
	// Forbidden metadata.labels[kubevirt.io/nodeName]
}
