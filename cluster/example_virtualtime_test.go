package cluster_test

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/store"
)

// A test harness on virtual time: one sim.VirtualClock drives every
// component (controllers, scheduler, node agents, simulated hosts), nothing
// happens until the test advances it, and Settle waits for the cluster to
// finish what the last step started. The 35 s below take no wall time.
func Example_virtualTime() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	clk := sim.NewVirtualClock(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	c, err := cluster.New(cluster.Options{Clock: clk})
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	defer func() { cancel(); <-done }()
	if err := c.Settle(ctx); err != nil { // nodes registered, watches running
		panic(err)
	}

	always := virtkit.RunStrategyAlways
	mem := resource.MustParse("128Mi")
	vm := &virtkit.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine},
		ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: "default"},
		Spec: virtkit.VirtualMachineSpec{
			RunStrategy: &always,
			Template: &virtkit.VirtualMachineInstanceTemplateSpec{
				Spec: virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &mem}}},
			},
		},
	}
	if err := c.Apply(ctx, vm); err != nil {
		panic(err)
	}
	if err := c.Settle(ctx); err != nil {
		panic(err)
	}
	vmi := &virtkit.VirtualMachineInstance{}
	if err := c.Store().Get(ctx, store.Key{Namespace: "default", Name: "testvm"}, vmi); err != nil {
		panic(err)
	}
	fmt.Println("testvm:", vmi.Status.Phase, "on", vmi.Status.NodeName)
	heartbeat := func() string {
		n := &virtkit.Node{}
		if err := c.Store().Get(ctx, store.Key{Name: vmi.Status.NodeName}, n); err != nil {
			panic(err)
		}
		return n.Status.LastHeartbeatTime.UTC().Format(time.TimeOnly)
	}
	fmt.Println("heartbeat:", heartbeat())

	// Heartbeats come every 10 s of the clock's time, and only when the
	// test moves it.
	if err := c.Advance(ctx, 35*time.Second); err != nil {
		panic(err)
	}
	fmt.Println("after 35 s, heartbeat:", heartbeat())
	// Output:
	// testvm: Running on node-1
	// heartbeat: 09:00:00
	// after 35 s, heartbeat: 09:00:30
}
