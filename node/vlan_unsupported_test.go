package node_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/network"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// kernelWithoutVLANs is a network.HostNetworker whose kernel has no bridge
// VLAN filtering (this is how network.Host fails on such a kernel); it
// serves untagged bridges.
type kernelWithoutVLANs struct{}

func (kernelWithoutVLANs) EnsureBridge(_ context.Context, b network.Bridge) error {
	if b.VLANFiltering {
		return fmt.Errorf("%w: this kernel has no bridge VLAN filtering: ip link add %s type bridge vlan_filtering 1: Operation not supported", network.ErrUnsupportedHost, b.Name)
	}
	return nil
}
func (kernelWithoutVLANs) VLANPort(context.Context, string, string, int) error { return nil }
func (kernelWithoutVLANs) VLANInterface(context.Context, string, string, int, netip.Prefix) error {
	return nil
}
func (kernelWithoutVLANs) SetDHCPHost(context.Context, network.DHCP, string, netip.Addr) error {
	return nil
}
func (kernelWithoutVLANs) EnsureMasquerade(context.Context, network.Masquerade) error { return nil }

// A VMI on a NetworkAttachmentDefinition with a vlan, placed on a node whose
// kernel cannot do VLANs, does not run untagged: it fails, and its
// Synchronized condition (and status reason) names the definition's vlan
// field, without the node's commands.
func TestAgentVLANNotSupportedByNode(t *testing.T) {
	st, hv := store.NewMemory(), sim.New(sim.Options{Name: nodeName})
	nad := &virtkit.NetworkAttachmentDefinition{Spec: virtkit.NetworkAttachmentDefinitionSpec{
		Config: `{"cniVersion":"0.3.1","type":"bridge","bridge":"br1","vlan":100}`}}
	nad.Namespace, nad.Name = "default", "vlan100"
	require.NoError(t, st.Create(context.Background(), nad))
	r, err := network.NewResolver(network.ResolverOptions{Store: st, Node: nodeName,
		PodSubnet: netip.MustParsePrefix("10.244.3.0/24"), Host: kernelWithoutVLANs{}})
	require.NoError(t, err)
	runAgent(t, st, hv, func(o *node.Options) { o.Domain.NetworkResolver = r })
	newMetricsVMI(t, st, "vmi", func(v *virtkit.VirtualMachineInstance) {
		v.Spec.Domain.Devices.Interfaces = []virtkit.Interface{{Name: "sec",
			InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Bridge: &virtkit.InterfaceBridge{}}}}
		v.Spec.Networks = []virtkit.Network{{Name: "sec",
			NetworkSource: virtkit.NetworkSource{Multus: &virtkit.MultusNetwork{NetworkName: "vlan100"}}}}
	})

	vmi := eventuallyPhase(t, st, "vmi", virtkit.Failed)
	c := virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceSynchronized)
	require.NotNil(t, c, "a Synchronized condition says why: %+v", vmi.Status.Conditions)
	assert.Equal(t, virtkit.ConditionFalse, c.Status)
	assert.Equal(t, node.SyncFailedReason, c.Reason)
	assert.Contains(t, c.Message, "NetworkAttachmentDefinition default/vlan100: spec.config.vlan: VLAN 100 is not supported by this node")
	assert.NotContains(t, c.Message, "ip link")
	assert.Contains(t, vmi.Status.Reason, "spec.config.vlan")
	doms, err := hv.List(context.Background())
	require.NoError(t, err)
	assert.Empty(t, doms, "no guest runs untagged")
}
