package admission_test

import (
	"fmt"
	"strings"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

func typeName(v any) string {
	s := fmt.Sprintf("%T", v)
	return s[strings.LastIndexByte(s, '.')+1:]
}

func newMemory() store.Store { return store.NewMemory() }

func decodeOne(doc string) virtkit.Object {
	objs, err := virtkit.Decode(strings.NewReader(doc))
	if err != nil || len(objs) != 1 {
		panic(fmt.Sprintf("test manifest: %v (%d objects)", err, len(objs)))
	}
	return objs[0]
}

func vmi(name string) *virtkit.VirtualMachineInstance {
	return decodeOne(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: ` + name + `, namespace: default}
spec:
  domain:
    devices: {}
    memory: {guest: 128Mi}
`).(*virtkit.VirtualMachineInstance)
}
