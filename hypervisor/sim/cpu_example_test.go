package sim_test

import (
	"context"
	"fmt"

	"github.com/virtkit/virtkit/hypervisor/sim"
)

// A simulated host's CPU is a modelled capability: the node agent publishes
// it as Node labels, and the migration controller only targets nodes that
// can run the guest's CPU model.
func ExampleHost_HostCPU() {
	h := sim.New(sim.Options{Name: "amd-1", CPU: sim.CPU{HostModel: "EPYC", Vendor: "AMD", UsableModels: []string{"qemu64"}}})
	cpu, err := h.HostCPU(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println(cpu.HostModel, cpu.Vendor, cpu.UsableModels, cpu.Modelled)
	// Output: EPYC AMD [EPYC qemu64] true
}
