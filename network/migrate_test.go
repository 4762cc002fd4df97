package network_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/network"
	"github.com/virtkit/virtkit/store"
)

// migratingHost is a recordingHost that can also activate and remove
// masquerade copies.
type migratingHost struct {
	recordingHost
	active, removed []string
}

func (h *migratingHost) ActivateMasquerade(_ context.Context, m network.Masquerade) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.active = append(h.active, m.ID)
	return nil
}

func (h *migratingHost) RemoveMasquerade(_ context.Context, id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.removed = append(h.removed, id)
	return nil
}

func masqueradeVMI() *virtkit.VirtualMachineInstance {
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name, vmi.UID = "default", "vm1", "uid-1"
	mem := resource.MustParse("128Mi")
	vmi.Spec.Domain.Memory = &virtkit.Memory{Guest: &mem}
	vmi.Spec.Domain.Devices.Interfaces = []virtkit.Interface{{Name: "default",
		InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Masquerade: &virtkit.InterfaceMasquerade{}},
		Ports:                  []virtkit.Port{{Port: 8080}}}}
	vmi.Spec.Networks = []virtkit.Network{{Name: "default", NetworkSource: virtkit.NetworkSource{Pod: &virtkit.PodNetwork{}}}}
	return vmi
}

// TestResolverMigrationSides: the source and the target each make their
// own copy of a masquerade guest's NAT; the target's stands by until
// activated, both keep the VMI's address and the legs' MACs, the lease
// moves to the target, and the source's release removes only its copy.
func TestResolverMigrationSides(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	subnet := netip.MustParsePrefix("10.244.3.0/24")
	srcHost, dstHost := &migratingHost{}, &migratingHost{}
	src, err := network.NewResolver(network.ResolverOptions{Store: st, Node: "n1", PodSubnet: subnet, Host: srcHost})
	require.NoError(t, err)
	dst, err := network.NewResolver(network.ResolverOptions{Store: st, Node: "n2", PodSubnet: subnet, Host: dstHost})
	require.NoError(t, err)
	vmi := masqueradeVMI()

	built, err := domain.Build(vmi, domain.Options{NetworkResolver: src})
	require.NoError(t, err)
	require.Len(t, srcHost.masq, 1)
	a := srcHost.masq[0]
	assert.False(t, a.Standby)
	assert.Equal(t, a.GuestBridge(), built.Devices.Interfaces[0].Source.Bridge.Bridge)

	nets, err := dst.PrepareIncoming(ctx, vmi)
	require.NoError(t, err)
	require.Len(t, dstHost.masq, 1)
	b := dstHost.masq[0]
	assert.True(t, b.Standby, "the target's copy stands by")
	assert.NotEqual(t, a.ID, b.ID, "each node has its own copy")
	assert.Equal(t, map[string]domain.HostNetwork{"default": {Type: domain.AttachBridge, Source: b.GuestBridge()}}, nets)
	assert.Equal(t, a.PodAddress, b.PodAddress, "the same VMI address")
	assert.Equal(t, a.GuestMAC, b.GuestMAC)
	assert.Equal(t, a.PodMAC, b.PodMAC)
	assert.Equal(t, a.GatewayMAC, b.GatewayMAC)
	assert.Equal(t, a.Ports, b.Ports)
	assert.Empty(t, dstHost.active)

	require.NoError(t, dst.ActivateIncoming(ctx, vmi))
	assert.Equal(t, []string{b.ID}, dstHost.active)
	leases, err := (&network.IPAM{Store: st}).OwnedBy(ctx, "uid-1")
	require.NoError(t, err)
	require.Len(t, leases, 1)
	assert.Equal(t, "n2", leases[0].Spec.Node)
	assert.Equal(t, "n2", leases[0].Labels[network.NodeLabel])

	require.NoError(t, src.Release(ctx, vmi))
	assert.Equal(t, []string{a.ID}, srcHost.removed)
	assert.Empty(t, dstHost.removed)
	again, err := (&network.IPAM{Store: st}).OwnedBy(ctx, "uid-1")
	require.NoError(t, err)
	assert.Len(t, again, 1, "releasing a node's copy keeps the lease")
}

// A dual-stack pod network gives a masquerade interface an IPv6 pod
// address too (NAT66 behind KubeVirt's fd10:0:2::2), with the bridge's
// IPv6 gateway; status lists the IPv4 address first.
func TestResolverDualStackMasquerade(t *testing.T) {
	ctx := context.Background()
	host := &recordingHost{}
	st := store.NewMemory()
	sub4, sub6 := netip.MustParsePrefix("10.244.3.0/24"), netip.MustParsePrefix("fd10:244:3::/64")
	r, err := network.NewResolver(network.ResolverOptions{Store: st, Node: "n1", PodSubnet: sub4, PodSubnet6: sub6, Host: host, MTU: 1450})
	require.NoError(t, err)
	require.NoError(t, r.SetUp(ctx))
	assert.Contains(t, host.bridges, network.Bridge{Name: "vkpod0", Address: netip.MustParsePrefix("fd10:244:3::1/64"), Masquerade: true})
	vmi := masqueradeVMI()
	_, err = domain.ResolveNetworks(ctx, vmi, r)
	require.NoError(t, err)
	require.Len(t, host.masq, 1)
	m := host.masq[0]
	assert.True(t, sub4.Contains(m.PodAddress.Addr()))
	assert.True(t, sub6.Contains(m.PodAddress6.Addr()), "%s", m.PodAddress6)
	assert.Equal(t, 64, m.PodAddress6.Bits())
	assert.Equal(t, netip.MustParseAddr("fd10:244:3::1"), m.PodGateway6)
	assert.Equal(t, 1450, m.MTU, "the NAT's links get the pod network's MTU")
	addrs, err := r.InterfaceAddresses(ctx, vmi)
	require.NoError(t, err)
	assert.Equal(t, []string{m.PodAddress.Addr().String(), m.PodAddress6.Addr().String()}, addrs["default"])

	for _, bad := range []string{"10.0.0.0/24", "fd10::/48", "::ffff:10.0.0.0/120"} {
		_, err := network.NewResolver(network.ResolverOptions{Store: st, Node: "n1", PodSubnet: sub4, PodSubnet6: netip.MustParsePrefix(bad)})
		assert.ErrorIs(t, err, network.ErrInvalidPool, bad)
		assert.ErrorContains(t, err, "PodSubnet6", bad)
	}
}

// Release keeps the pod bridge's DHCP entry of a VMI that still runs (it
// migrated away; on a shared host that server serves it there) and drops
// it once the VMI is being deleted.
func TestResolverReleaseDHCPEntries(t *testing.T) {
	ctx := context.Background()
	host := &migratingHost{}
	st := store.NewMemory()
	r := newResolver(t, st, host)
	vmi := masqueradeVMI()
	vmi.Spec.Domain.Devices.Interfaces[0].InterfaceBindingMethod = virtkit.InterfaceBindingMethod{Bridge: &virtkit.InterfaceBridge{}}
	_, err := domain.ResolveNetworks(ctx, vmi, r)
	require.NoError(t, err)
	require.Len(t, host.dhcp, 1)
	var key string
	for k := range host.dhcp {
		key = k
	}
	require.True(t, host.dhcp[key].IsValid())

	require.NoError(t, r.Release(ctx, vmi))
	assert.True(t, host.dhcp[key].IsValid(), "kept while the VMI runs")

	now := metav1.Now()
	vmi.DeletionTimestamp = &now
	require.NoError(t, r.Release(ctx, vmi))
	assert.False(t, host.dhcp[key].IsValid(), "dropped when the VMI is deleted")
}
