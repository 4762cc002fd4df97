package network_test

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/virtkit/virtkit/network"
	"github.com/virtkit/virtkit/store"
)

// Addresses are leased as IPLease objects in the store: the same owner
// gets its address back, and a released address is free again.
func ExampleIPAM() {
	ctx := context.Background()
	ipam := &network.IPAM{Store: store.NewMemory()}
	pool := network.Pool{Name: "pod", Subnet: netip.MustParsePrefix("10.244.1.0/24"),
		RangeStart: netip.MustParseAddr("10.244.1.10"), RangeEnd: netip.MustParseAddr("10.244.1.10")}
	owner := network.Owner{Namespace: "default", Name: "vm1", UID: "uid-1", Interface: "default", Node: "node-a"}

	a, _ := ipam.Allocate(ctx, pool, owner)
	again, _ := ipam.Allocate(ctx, pool, owner)
	_, err := ipam.Allocate(ctx, pool, network.Owner{Namespace: "default", Name: "vm2", UID: "uid-2"})
	fmt.Println(a, again, err != nil)

	_ = ipam.Release(ctx, "uid-1")
	b, _ := ipam.Allocate(ctx, pool, network.Owner{Namespace: "default", Name: "vm2", UID: "uid-2"})
	fmt.Println(b)
	// Output:
	// 10.244.1.10/24 10.244.1.10/24 true
	// 10.244.1.10/24
}
