package sim_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// A simulated host whose guests outlive the process: the second
// OpenPersistent finds the guest the first one started, still running.
func ExampleOpenPersistent() {
	dir, _ := os.MkdirTemp("", "sim-state-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "node-1.json")

	ctx, stop := context.WithCancel(context.Background())
	p, _ := sim.OpenPersistent(ctx, sim.New(sim.Options{Name: "node-1"}), path)
	_, _ = p.Define(ctx, `<domain type='kvm'><name>default_web</name><memory unit='MiB'>64</memory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os></domain>`)
	_ = p.Start(ctx, "default_web", hypervisor.StartOptions{})
	stop() // the node agent process ends

	p2, _ := sim.OpenPersistent(context.Background(), sim.New(sim.Options{Name: "node-1"}), path)
	doms, _ := p2.List(context.Background())
	for _, d := range doms {
		fmt.Println(d.Name, d.State)
	}
	// Output:
	// default_web Running
}
