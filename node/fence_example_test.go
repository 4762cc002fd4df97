package node_test

import (
	"context"
	"fmt"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// The fence timeout a node agent uses by default, the shortest allowed,
// and how long the controller then waits before restarting its guests
// elsewhere.
func ExampleDefaultFenceTimeout() {
	for _, hb := range []time.Duration{10 * time.Second, 300 * time.Millisecond} {
		fence := node.DefaultFenceTimeout(hb)
		fmt.Printf("heartbeat %v: fence %v (at least %v), controller waits %v\n",
			hb, fence, node.MinFenceTimeout(hb), virtkit.MinNodeGrace(fence))
	}
	// Output:
	// heartbeat 10s: fence 1m0s (at least 31s), controller waits 1m30s
	// heartbeat 300ms: fence 10s (at least 1.9s), controller waits 15s
}

// A node agent on a shared host leaves other people's guests alone and
// lists them.
func ExampleAgent_ForeignDomains() {
	ctx := context.Background()
	hv := sim.New(sim.Options{Name: "shared"})
	_, _ = hv.Define(ctx, `<domain type='kvm'><name>legacy_db</name><memory unit='MiB'>64</memory><vcpu>1</vcpu></domain>`)
	_ = hv.Start(ctx, "legacy_db", hypervisor.StartOptions{})

	a, err := node.New(node.Options{NodeName: "n1", Store: store.NewMemory(), Hypervisor: hv})
	if err != nil {
		fmt.Println(err)
		return
	}
	// A reconcile of the name, as a hypervisor event would cause.
	_, _ = a.Reconcile(ctx, reconcile.Request{Namespace: "legacy", Name: "db"})
	for _, f := range a.ForeignDomains() {
		fmt.Printf("%s: %s\n", f.Name, f.Reason)
	}
	doms, _ := a.HostDomains(ctx)
	for _, d := range doms {
		fmt.Printf("%s active=%v owned=%v\n", d.Name, d.Active, d.Owned)
	}
	// Output:
	// legacy_db: no virtkit metadata
	// legacy_db active=true owned=false
}
