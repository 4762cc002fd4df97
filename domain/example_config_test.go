package domain_test

import (
	"fmt"
	"strings"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

// A configMap volume becomes a read-only ISO disk; the ConfigResolver
// supplies its keys (a node agent reads them from its store; StaticConfig
// serves fixed content).
func ExampleStaticConfig() {
	objs, err := virtkit.Decode(strings.NewReader(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: web, namespace: demo}
spec:
  domain:
    memory: {guest: 1Gi}
    devices:
      disks: [{name: app-config, disk: {bus: virtio}}]
  volumes:
  - {name: app-config, configMap: {name: app-config}}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := domain.StaticConfig{"configMap/demo/app-config": {"DATABASE": []byte("staging")}}
	dom, err := domain.Build(objs[0].(*virtkit.VirtualMachineInstance), domain.Options{ConfigResolver: cfg})
	if err != nil {
		fmt.Println(err)
		return
	}
	d := dom.Devices.Disks[0]
	fmt.Println(d.Source.File.File, d.ReadOnly != nil)

	// Without the ConfigMap the build names the volume and the object.
	_, err = domain.Build(objs[0].(*virtkit.VirtualMachineInstance), domain.Options{ConfigResolver: domain.StaticConfig{}})
	fmt.Println(err)
	// Output:
	// /var/lib/virtkit/vmis/demo_web/app-config.iso true
	// spec.volumes[0].configMap: configMap demo/app-config not found: config volume source missing: not resolved to a host source
}
