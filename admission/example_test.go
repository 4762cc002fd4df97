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

// The chain reads the cluster's KubeVirt object for every request: a
// field behind a feature gate is admitted once the object enables it.
func ExampleStoreConfig() {
	ctx := context.Background()
	st := store.NewMemory()
	chain := admission.New(admission.Options{Lookup: st}) // Config: StoreConfig{Store: st}
	hostDisk := `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: hd, namespace: default}
spec:
  domain:
    devices: {disks: [{name: data}]}
    memory: {guest: 128Mi}
  volumes:
  - {name: data, hostDisk: {path: /var/data/disk.img, type: Disk}}
`
	err := chain.Admit(ctx, admission.AttributesFor(admission.Create, decodeOne(hostDisk), nil))
	for _, e := range admission.FieldErrors(err) {
		fmt.Println(e.Field+":", e.Detail)
	}
	if err := st.Create(ctx, kubevirtWithGates("HostDisk")); err != nil {
		panic(err)
	}
	fmt.Println(chain.Admit(ctx, admission.AttributesFor(admission.Create, decodeOne(hostDisk), nil)))
	// Output:
	// spec.volumes[0]: HostDisk feature gate is not enabled
	// <nil>
}
