package sim_test

import (
	"context"
	"fmt"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// The simulated host's memory: its configured size, less what its
// running guests hold resident.
func ExampleHost_NodeMemory() {
	ctx := context.Background()
	host := sim.New(sim.Options{Name: "node-1", MemoryBytes: 8 << 30})
	xml := `<domain type='kvm'><name>vm</name><memory unit='MiB'>1024</memory><vcpu>1</vcpu></domain>`
	if _, err := host.Define(ctx, xml); err != nil {
		fmt.Println(err)
		return
	}
	if err := host.Start(ctx, "vm", hypervisor.StartOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	nm, err := host.NodeMemory(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	total, _ := nm.Total.Get()
	free, _ := nm.Free.Get()
	fmt.Printf("total %d MiB, free %d MiB, page cache measured: %v\n", total>>20, free>>20, nm.Cached.Valid)
	// Output:
	// total 8192 MiB, free 8128 MiB, page cache measured: false
}
