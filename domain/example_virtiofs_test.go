package domain_test

import (
	"context"
	"fmt"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

// A ConfigMap volume shared by virtiofs: the node serves each share's
// files on the socket the domain's <filesystem> names.
func ExampleShares() {
	objs, err := virtkit.DecodeBytes([]byte(`apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: web, namespace: shop}
spec:
  domain:
    memory: {guest: 128Mi}
    devices:
      filesystems:
      - name: settings
        virtiofs: {}
  volumes:
  - name: settings
    configMap: {name: web-settings}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	vmi := objs[0].(*virtkit.VirtualMachineInstance)
	opts := domain.Options{RuntimeDir: "/run/vk", ConfigResolver: domain.StaticConfig{
		"configMap/shop/web-settings": {"mode": []byte("production")},
	}}
	shares, err := domain.Shares(context.Background(), vmi, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, sh := range shares {
		fmt.Println(sh.Name, sh.Kind, len(sh.Files), "file(s)")
	}
	dom, err := domain.Build(vmi, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	fs := dom.Devices.Filesystems[0]
	fmt.Println(fs.Driver.Type, fs.Target.Dir, fs.Source.Mount.Socket == shares[0].Socket)
	fmt.Println(dom.MemoryBacking.MemorySource.Type, dom.MemoryBacking.MemoryAccess.Mode)
	// Output:
	// settings configMap 1 file(s)
	// virtiofs settings true
	// memfd shared
}
