package cluster_test

import (
	"context"
	"fmt"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// A control plane and a host assembled apart, on one store, as `virtkit
// controller` and `virtkit node` run them in two processes (there on etcd).
func ExampleNewNodeProcess() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := store.NewMemory()
	cp, err := cluster.NewControlPlane(cluster.Options{Store: st})
	if err != nil {
		fmt.Println(err)
		return
	}
	host, err := cluster.NewNodeProcess(ctx, cluster.NodeProcessOptions{
		Node: cluster.NodeOptions{Agent: node.Options{NodeName: "host-a", Store: st}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	runCtx, stop := context.WithCancel(ctx)
	cpDone, hostDone := make(chan error, 1), make(chan error, 1)
	go func() { cpDone <- cp.Start(runCtx) }()
	go func() { hostDone <- host.Run(runCtx) }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for ready := false; !ready && ctx.Err() == nil; {
		n := &virtkit.Node{}
		if ready = st.Get(ctx, store.Key{Name: "host-a"}, n) == nil && virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady); ready {
			fmt.Println(n.Name, "ready")
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
	stop()
	fmt.Println(<-cpDone, <-hostDone)
	// Output:
	// host-a ready
	// <nil> <nil>
}
