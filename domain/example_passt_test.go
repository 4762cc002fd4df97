package domain_test

import (
	"errors"
	"fmt"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

// A passt interface and a containerPath volume: passt is user-mode
// networking libvirt starts itself; a containerPath volume is shared only
// from a directory the node's policy allows.
func ExampleOptions_containerPaths() {
	objs, err := virtkit.DecodeBytes([]byte(`apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: app, namespace: shop}
spec:
  domain:
    memory: {guest: 128Mi}
    devices:
      interfaces: [{name: default, passtBinding: {}, ports: [{port: 443}]}]
      filesystems: [{name: aws-token, virtiofs: {}}]
  networks: [{name: default, pod: {}}]
  volumes:
  - name: aws-token
    containerPath: {path: /var/run/secrets/eks.amazonaws.com/serviceaccount}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	vmi := objs[0].(*virtkit.VirtualMachineInstance)

	_, err = domain.Build(vmi, domain.Options{})
	fmt.Println("no policy, unsupported:", errors.Is(err, domain.ErrUnsupported))

	dom, err := domain.Build(vmi, domain.Options{
		ContainerPaths: domain.HostPathPolicy{Allow: []string{"/var/run/secrets/eks.amazonaws.com"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	nic := dom.Devices.Interfaces[0]
	fmt.Println(nic.Backend.Type, nic.PortForward[0].Proto, nic.PortForward[0].Ranges[0].Start)
	fmt.Println(dom.Devices.Filesystems[0].Target.Dir)
	// Output:
	// no policy, unsupported: true
	// passt tcp 443
	// aws-token
}
