//go:build cgo && libvirt && !libvirt_dlopen

package libvirt_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/libvirt"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
)

// Drive a domain through libvirt's in-process test driver; with
// Options{} the same code drives QEMU through qemu:///system.
func Example() {
	ctx := context.Background()
	h, err := libvirt.New(ctx, libvirt.Options{URI: "test:///default"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	id, err := h.Define(ctx, libvirttest.TestDomainXML("example"))
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = h.Start(ctx, id.Name, hypervisor.StartOptions{})
	info, _ := h.Info(ctx, id.Name)
	fmt.Println(info.Name, info.State, info.Reason)

	_ = h.Destroy(ctx, id.Name)
	_ = h.Undefine(ctx, id.Name)
	_, err = h.Info(ctx, id.Name)
	fmt.Println(errors.Is(err, hypervisor.ErrNotFound))
	// Output:
	// example Running Booted
	// true
}
