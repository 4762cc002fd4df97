package sim_test

import (
	"context"
	"fmt"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// A simulated host with a modelled GPU: a domain that passes it through
// holds it while it runs.
func ExampleOptions_hostDevices() {
	ctx := context.Background()
	h := sim.New(sim.Options{Name: "gpu-host", HostDevices: hypervisor.HostDevices{
		PCI: []hypervisor.PCIDevice{{Address: "0000:65:00.0", VendorID: "10de", DeviceID: "1eb8"}},
	}})
	devs, _ := h.HostDevices(ctx)
	fmt.Println(devs.PCI[0].Address, devs.PCI[0].VendorID+":"+devs.PCI[0].DeviceID)

	for _, name := range []string{"a", "b"} {
		if _, err := h.Define(ctx, hostdevDomainXML(name, pciHostdev)); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println(h.Start(ctx, "a", hypervisor.StartOptions{}))
	fmt.Println(h.Start(ctx, "b", hypervisor.StartOptions{}) != nil)
	// Output:
	// 0000:65:00.0 10de:1eb8
	// <nil>
	// true
}
