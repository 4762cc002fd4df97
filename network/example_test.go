package network_test

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
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

// Each node of a migration makes its own copy of the guest's networks: the
// target prepares it before the migration (same VMI address, its own
// masquerade bridge), activates it when the guest runs there, and the
// source releases its copy. Here without host networking (Host nil), as on
// simulated nodes.
func ExampleResolver_PrepareIncoming() {
	ctx := context.Background()
	st := store.NewMemory()
	subnet := netip.MustParsePrefix("10.244.0.0/24")
	source, _ := network.NewResolver(network.ResolverOptions{Store: st, Node: "node-a", PodSubnet: subnet})
	target, _ := network.NewResolver(network.ResolverOptions{Store: st, Node: "node-b", PodSubnet: subnet})

	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name, vmi.UID = "default", "vm1", "uid-1"
	vmi.Spec.Domain.Devices.Interfaces = []virtkit.Interface{{Name: "default",
		InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Masquerade: &virtkit.InterfaceMasquerade{}}}}
	vmi.Spec.Networks = []virtkit.Network{{Name: "default", NetworkSource: virtkit.NetworkSource{Pod: &virtkit.PodNetwork{}}}}

	onSource, _ := domain.ResolveNetworks(ctx, vmi, source) // as the domain build does
	onTarget, _ := target.PrepareIncoming(ctx, vmi)
	_ = target.ActivateIncoming(ctx, vmi)
	_ = source.Release(ctx, vmi)

	addrs, _ := target.InterfaceAddresses(ctx, vmi)
	fmt.Println(onSource["default"].Source != onTarget["default"].Source, addrs["default"])
	// Output:
	// true [10.244.0.210]
}
