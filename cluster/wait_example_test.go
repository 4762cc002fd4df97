package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
)

// Waits compose predicates; one that gives up says what it saw last and
// still matches the context's error.
func ExampleCluster_WaitForVMI() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cluster.New(cluster.Options{NodeNames: []string{"node-a"}})
	if err != nil {
		panic(err)
	}
	if err := c.Apply(ctx, newVMIObj("vm1")); err != nil {
		panic(err)
	}

	// Nothing runs yet: the VMI stays as created.
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	_, err = c.WaitForVMI(short, "default", "vm1", cluster.VMIPhase(virtkit.Running))
	cancelShort()
	fmt.Println(err)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = c.Start(runCtx) }()
	if err := c.WaitNodesReady(ctx); err != nil {
		panic(err)
	}
	vmi, err := c.WaitForVMI(ctx, "default", "vm1", cluster.All(cluster.VMIPhase(virtkit.Running), cluster.VMIOnNode("node-a")))
	fmt.Println(vmi.Status.Phase, vmi.Status.NodeName, err)
	// Output:
	// waiting for default/vm1: last seen phase "", conditions []: context deadline exceeded
	// true
	// Running node-a <nil>
}
