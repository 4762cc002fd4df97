package main

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/network"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

func TestNodePodNetworkFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"needs pod-network", []string{"--pod-bridge", "br9"}, "--pod-bridge: needs --pod-network"},
		{"bad range", []string{"--pod-network", "--pod-range", "10.0.0.0/33"}, `--pod-range "10.0.0.0/33"`},
		{"bad subnet", []string{"--pod-network", "--pod-subnet", "nope"}, `--pod-subnet "nope"`},
		{"prefix", []string{"--pod-network", "--pod-range", "10.0.0.0/16", "--pod-node-prefix", "8"}, "--pod-node-prefix 8"},
		{"mtu", []string{"--pod-network", "--pod-subnet", "10.9.0.0/24", "--pod-mtu", "100"}, "MTU: 100"},
		{"range6", []string{"--pod-network", "--pod-range6", "10.0.0.0/8"}, `--pod-range6 "10.0.0.0/8"`},
		{"subnet6", []string{"--pod-network", "--pod-subnet", "10.9.0.0/24", "--pod-subnet6", "fd10::/48"}, "PodSubnet6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newRootCmd()
			var out lockedBuffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(append([]string{"node", "--name", "n1", "--store", "memory", "--hypervisor", "sim"}, tc.args...))
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			err := cmd.ExecuteContext(ctx)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// `virtkit node --pod-network` on a simulated host: the node leases a
// subnet of --pod-range, and a masquerade VMI placed on it is reported
// with its own address from that subnet.
func TestNodePodNetwork(t *testing.T) {
	endpoints := etcdtest.StartServer(t)
	st, err := etcd.New(t.Context(), etcd.Options{Endpoints: endpoints})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })

	cmd := newRootCmd()
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"node", "--name", "n1", "--store", "etcd://" + strings.TrimPrefix(endpoints[0], "http://"),
		"--hypervisor", "sim", "--heartbeat-interval", "100ms", "--status-interval", "200ms",
		"--pod-network", "--pod-range", "10.77.0.0/16", "--pod-node-prefix", "26", "--pod-mtu", "1450",
		"--pod-range6", "fd10:77::/56"})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Error("node did not stop")
		}
	})
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "node agent starting") },
		20*time.Second, 20*time.Millisecond, "%s", &out)
	subnets, err := (&network.IPAM{Store: st}).Leases(t.Context(), "")
	require.NoError(t, err)
	require.Len(t, subnets, 2, "the node's subnet leases")
	if netip.MustParsePrefix(subnets[0].Spec.Address).Addr().Is6() {
		subnets[0], subnets[1] = subnets[1], subnets[0]
	}
	sub := netip.MustParsePrefix(subnets[0].Spec.Address)
	sub6 := netip.MustParsePrefix(subnets[1].Spec.Address)
	assert.Equal(t, 64, sub6.Bits())
	assert.True(t, netip.MustParsePrefix("fd10:77::/56").Contains(sub6.Addr()))
	assert.Equal(t, 26, sub.Bits())
	assert.True(t, netip.MustParsePrefix("10.77.0.0/16").Contains(sub.Addr()))

	mem := resource.MustParse("64Mi")
	vmi := &virtkit.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "default", Labels: map[string]string{virtkit.NodeNameLabel: "n1"}},
		Spec: virtkit.VirtualMachineInstanceSpec{
			Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &mem}, Devices: virtkit.Devices{Interfaces: []virtkit.Interface{{
				Name: "default", InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Masquerade: &virtkit.InterfaceMasquerade{}}}}}},
			Networks: []virtkit.Network{{Name: "default", NetworkSource: virtkit.NetworkSource{Pod: &virtkit.PodNetwork{}}}},
		},
	}
	virtkit.SetDefaults(vmi)
	require.NoError(t, st.Create(t.Context(), vmi))
	vmi.Status.NodeName = "n1"
	vmi.SetPhase(virtkit.Scheduled, metav1.Now())
	require.NoError(t, st.UpdateStatus(t.Context(), vmi))

	var ips []string
	require.Eventually(t, func() bool {
		got := &virtkit.VirtualMachineInstance{}
		if st.Get(t.Context(), store.KeyOf(vmi), got) != nil || len(got.Status.Interfaces) == 0 {
			return false
		}
		ips = got.Status.Interfaces[0].IPs
		return len(ips) == 2 && got.Status.Interfaces[0].IP == ips[0]
	}, 30*time.Second, 50*time.Millisecond, "the VMI reports its addresses: %s", &out)
	assert.True(t, sub.Contains(netip.MustParseAddr(ips[0])), "%s in the node's subnet %s", ips[0], sub)
	assert.True(t, sub6.Contains(netip.MustParseAddr(ips[1])), "%s in the node's IPv6 subnet %s", ips[1], sub6)
}
