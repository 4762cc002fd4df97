package metrics_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/store"
)

// A VMI index fed by one read-only watch gives a control-plane collector
// its VMIs without a copy per scrape; with StreamVMIFamilies the per-VMI
// families are written as text, as NewHandler serves them.
func ExampleVMIIndex() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := store.NewMemory()
	for _, name := range []string{"web-2", "web-1"} {
		vmi := &virtkit.VirtualMachineInstance{}
		vmi.Namespace, vmi.Name = "default", name
		vmi.Status.Phase = virtkit.Running
		if err := st.Create(ctx, vmi); err != nil {
			fmt.Println(err)
			return
		}
	}
	index, err := metrics.NewVMIIndex(st, nil, metrics.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	go func() { _ = index.Start(ctx) }()
	for !index.RangeVMIs(func(*virtkit.VirtualMachineInstance) bool { return true }) {
		time.Sleep(10 * time.Millisecond) // until the first listing is in
	}
	cp, err := metrics.NewControlPlaneCollector(metrics.ControlPlaneSources{Objects: st, VMIs: index, StreamVMIFamilies: true}, metrics.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	var text bytes.Buffer
	if err := cp.WriteText(ctx, &text); err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(text.String(), "\n") {
		if strings.HasPrefix(line, "kubevirt_vmi_launcher_memory_overhead_bytes") {
			fmt.Println(line[:strings.LastIndexByte(line, ' ')])
		}
	}
	// Output:
	// kubevirt_vmi_launcher_memory_overhead_bytes{namespace="default",name="web-1"}
	// kubevirt_vmi_launcher_memory_overhead_bytes{namespace="default",name="web-2"}
}

// A node whose hypervisor reports its host memory (the simulated host, the
// libvirt adapter) gets the virtkit_node_memory_* families.
func ExampleNodeMemoryReader() {
	host := sim.New(sim.Options{Name: "node-1", MemoryBytes: 16 << 30})
	var _ metrics.NodeMemoryReader = host
	c, err := metrics.NewDomainCollector(metrics.DomainSources{Objects: store.NewMemory(),
		Nodes: []metrics.NodeSource{{Name: "node-1", Domains: host}}}, metrics.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	var text bytes.Buffer
	if err := c.WriteText(context.Background(), &text); err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(text.String(), "\n") {
		if strings.HasPrefix(line, "virtkit_node_memory_") {
			fmt.Println(line)
		}
	}
	// Output:
	// virtkit_node_memory_free_bytes{node="node-1"} 1.7179869184e+10
	// virtkit_node_memory_total_bytes{node="node-1"} 1.7179869184e+10
}
