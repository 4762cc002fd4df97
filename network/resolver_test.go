package network_test

import (
	"context"
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/network"
	"github.com/virtkit/virtkit/store"
)

// recordingHost records what the resolver asks of the host.
type recordingHost struct {
	mu      sync.Mutex
	bridges []network.Bridge
	vlans   [][3]any
	legs    []string
	dhcp    map[string]netip.Addr // iface/mac -> addr
	masq    []network.Masquerade
}

func (h *recordingHost) EnsureBridge(_ context.Context, b network.Bridge) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bridges = append(h.bridges, b)
	return nil
}

func (h *recordingHost) VLANPort(_ context.Context, parent, child string, vlan int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.vlans = append(h.vlans, [3]any{parent, child, vlan})
	return nil
}

func (h *recordingHost) VLANInterface(_ context.Context, parent, name string, vlan int, addr netip.Prefix) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.legs = append(h.legs, name+"@"+parent+"="+addr.String())
	return nil
}

func (h *recordingHost) SetDHCPHost(_ context.Context, d network.DHCP, mac string, addr netip.Addr) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dhcp == nil {
		h.dhcp = map[string]netip.Addr{}
	}
	h.dhcp[d.Netns+"/"+d.Interface+"/"+mac] = addr
	return nil
}

func (h *recordingHost) EnsureMasquerade(_ context.Context, m network.Masquerade) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.masq = append(h.masq, m)
	return nil
}

func newResolver(t *testing.T, st store.Store, host network.HostNetworker) *network.Resolver {
	t.Helper()
	r, err := network.NewResolver(network.ResolverOptions{Store: st, Node: "n1", PodSubnet: netip.MustParsePrefix("10.244.3.0/24"), Host: host})
	require.NoError(t, err)
	return r
}

func req(binding string, kind domain.NetworkKind) domain.NetworkRequest {
	return domain.NetworkRequest{Namespace: "default", VMIName: "vm1", UID: "uid-1", Interface: "default",
		Binding: binding, Kind: kind, MAC: "52:54:00:00:00:01"}
}

func TestResolverPodBridge(t *testing.T) {
	ctx := context.Background()
	host := &recordingHost{}
	st := store.NewMemory()
	r := newResolver(t, st, host)
	require.NoError(t, r.SetUp(ctx))
	// The VMI exists: a restarted agent serves only leases of live VMIs.
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name = "default", "vm1"
	require.NoError(t, st.Create(ctx, vmi))
	rq := req("bridge", domain.NetworkPod)
	rq.UID = string(vmi.UID)
	assert.Equal(t, []network.Bridge{{Name: "vkpod0", Address: netip.MustParsePrefix("10.244.3.1/24"), Masquerade: true}}, host.bridges)

	att, err := r.ResolveNetwork(ctx, rq)
	require.NoError(t, err)
	assert.Equal(t, domain.HostNetwork{Type: domain.AttachBridge, Source: "vkpod0"}, att)
	leases, err := (&network.IPAM{Store: st}).OwnedBy(ctx, rq.UID)
	require.NoError(t, err)
	require.Len(t, leases, 1)
	addr := netip.MustParsePrefix(leases[0].Spec.Address)
	assert.Equal(t, addr.Addr(), host.dhcp["/vkpod0/52:54:00:00:00:01"], "DHCP hands the guest its lease")
	assert.Equal(t, "52:54:00:00:00:01", leases[0].Spec.MAC)

	// Resolving again (a re-define, a restarted agent) keeps the address.
	_, err = r.ResolveNetwork(ctx, rq)
	require.NoError(t, err)
	again, err := (&network.IPAM{Store: st}).OwnedBy(ctx, rq.UID)
	require.NoError(t, err)
	assert.Equal(t, leases[0].Spec.Address, again[0].Spec.Address)

	// A restarted agent (new host state) serves the leases it holds at once.
	fresh := &recordingHost{}
	require.NoError(t, newResolver(t, st, fresh).SetUp(ctx))
	assert.Equal(t, map[string]netip.Addr{"/vkpod0/52:54:00:00:00:01": addr.Addr()}, fresh.dhcp)

	// Once the VMI is gone, a restarted agent no longer serves its lease.
	require.NoError(t, st.Delete(ctx, vmi, store.DeleteOptions{}))
	after := &recordingHost{}
	require.NoError(t, newResolver(t, st, after).SetUp(ctx))
	assert.Empty(t, after.dhcp)
}

func TestResolverMasquerade(t *testing.T) {
	ctx := context.Background()
	host := &recordingHost{}
	r := newResolver(t, store.NewMemory(), host)
	rq := req("masquerade", domain.NetworkPod)
	rq.Ports = []virtkit.Port{{Port: 80}}
	att, err := r.ResolveNetwork(ctx, rq)
	require.NoError(t, err)
	require.Len(t, host.masq, 1)
	m := host.masq[0]
	assert.Equal(t, domain.HostNetwork{Type: domain.AttachBridge, Source: m.GuestBridge()}, att)
	assert.LessOrEqual(t, len(m.GuestBridge()), 15)
	assert.Equal(t, []virtkit.Port{{Port: 80}}, m.Ports)
	assert.True(t, netip.MustParsePrefix("10.244.3.0/24").Contains(m.PodAddress.Addr()))
	assert.Equal(t, netip.MustParseAddr("10.244.3.1"), m.PodGateway)

	_, err = r.ResolveNetwork(ctx, req("sriov", domain.NetworkPod))
	assert.ErrorIs(t, err, domain.ErrNotResolved)

	vmi := &virtkit.VirtualMachineInstance{}
	vmi.UID = "uid-1"
	addrs, err := r.InterfaceAddresses(ctx, vmi)
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{"default": {m.PodAddress.Addr().String()}}, addrs)
}

func createNAD(t *testing.T, st store.Store, name, config string) {
	t.Helper()
	nad := &virtkit.NetworkAttachmentDefinition{Spec: virtkit.NetworkAttachmentDefinitionSpec{Config: config}}
	nad.Namespace, nad.Name = "default", name
	require.NoError(t, st.Create(context.Background(), nad))
}

func TestResolverNetworkAttachmentDefinition(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	createNAD(t, st, "vlan10", `{"type":"bridge","bridge":"br1","vlan":10,"isGateway":true,`+
		`"ipam":{"type":"host-local","subnet":"192.168.10.0/24","rangeStart":"192.168.10.10","rangeEnd":"192.168.10.20","gateway":"192.168.10.1"}}`)
	createNAD(t, st, "flat", `{"type":"bridge","bridge":"br2","mtu":1400}`)
	createNAD(t, st, "mv", `{"type":"macvlan","master":"eth0"}`)
	createNAD(t, st, "bad", `{"type":"bridge","bridge":"br2","promiscMode":true}`)
	host := &recordingHost{}
	r := newResolver(t, st, host)

	rq := req("bridge", domain.NetworkMultus)
	rq.MultusNetworkName = "vlan10"
	att, err := r.ResolveNetwork(ctx, rq)
	require.NoError(t, err)
	assert.Equal(t, domain.AttachBridge, att.Type)
	assert.Regexp(t, `^vkn[0-9a-f]{10}$`, att.Source)
	assert.Equal(t, [][3]any{{"br1", att.Source, 10}}, host.vlans)
	require.Len(t, host.legs, 1)
	assert.Contains(t, host.legs[0], "@br1=192.168.10.1/24")
	var got netip.Addr
	for _, a := range host.dhcp {
		got = a
	}
	assert.True(t, !got.Less(netip.MustParseAddr("192.168.10.10")) && !netip.MustParseAddr("192.168.10.20").Less(got), "%s in range", got)

	rq.MultusNetworkName = "default/flat"
	att, err = r.ResolveNetwork(ctx, rq)
	require.NoError(t, err)
	assert.Equal(t, domain.HostNetwork{Type: domain.AttachBridge, Source: "br2", MTU: 1400}, att)

	rq.MultusNetworkName = "mv"
	_, err = r.ResolveNetwork(ctx, rq)
	require.ErrorIs(t, err, network.ErrUnsupportedCNI)
	assert.Contains(t, err.Error(), `"macvlan"`)
	var tm interface{ TenantMessage() string }
	require.ErrorAs(t, err, &tm, "a VMI's status may name the tenant's own CNI type")
	assert.Contains(t, tm.TenantMessage(), `"macvlan"`)

	rq.MultusNetworkName = "bad"
	_, err = r.ResolveNetwork(ctx, rq)
	require.ErrorIs(t, err, network.ErrUnsupportedCNI)
	assert.Contains(t, err.Error(), "promiscMode")

	rq.MultusNetworkName = "missing"
	_, err = r.ResolveNetwork(ctx, rq)
	require.ErrorIs(t, err, store.ErrNotFound)

	// The hand-written map stays available as the fallback.
	fb, err := network.NewResolver(network.ResolverOptions{Store: st, Node: "n1", PodSubnet: netip.MustParsePrefix("10.244.3.0/24"),
		Fallback: &domain.NetResolver{Multus: map[string]domain.HostNetwork{"missing": {Type: domain.AttachBridge, Source: "br9"}}}})
	require.NoError(t, err)
	att, err = fb.ResolveNetwork(ctx, rq)
	require.NoError(t, err)
	assert.Equal(t, "br9", att.Source)
}

func TestNewResolverOptions(t *testing.T) {
	for _, o := range []network.ResolverOptions{
		{Node: "n", PodSubnet: netip.MustParsePrefix("10.0.0.0/24")},
		{Store: store.NewMemory(), PodSubnet: netip.MustParsePrefix("10.0.0.0/24")},
		{Store: store.NewMemory(), Node: "n"},
	} {
		_, err := network.NewResolver(o)
		assert.ErrorIs(t, err, network.ErrInvalidPool)
	}
}

// The MAC in the spec is the one the domain gets and the one DHCP answers.
func TestResolverThroughDomainBuilderHonoursSpecMAC(t *testing.T) {
	ctx := context.Background()
	host := &recordingHost{}
	st := store.NewMemory()
	r := newResolver(t, st, host)
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name, vmi.UID = "default", "vm1", "uid-9"
	mem := resource.MustParse("64Mi")
	vmi.Spec.Domain.Memory = &virtkit.Memory{Guest: &mem}
	vmi.Spec.Domain.Devices.Interfaces = []virtkit.Interface{{Name: "default", MacAddress: "02:AB:CD:00:00:42",
		InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Bridge: &virtkit.InterfaceBridge{}}}}
	vmi.Spec.Networks = []virtkit.Network{{Name: "default", NetworkSource: virtkit.NetworkSource{Pod: &virtkit.PodNetwork{}}}}
	dom, err := domain.BuildContext(ctx, vmi, domain.Options{NetworkResolver: r})
	require.NoError(t, err)
	require.Len(t, dom.Devices.Interfaces, 1)
	nic := dom.Devices.Interfaces[0]
	assert.Equal(t, "02:ab:cd:00:00:42", nic.MAC.Address)
	assert.Equal(t, "vkpod0", nic.Source.Bridge.Bridge)
	leases, err := (&network.IPAM{Store: st}).OwnedBy(ctx, "uid-9")
	require.NoError(t, err)
	require.Len(t, leases, 1)
	assert.Equal(t, netip.MustParsePrefix(leases[0].Spec.Address).Addr(), host.dhcp["/vkpod0/02:ab:cd:00:00:42"])
}
