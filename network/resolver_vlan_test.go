package network_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/network"
	"github.com/virtkit/virtkit/store"
)

// noVLANHost is a host whose kernel cannot do what a VLAN needs, failing
// the way network.Host does on such a kernel.
type noVLANHost struct {
	recordingHost
	// step is what fails: "filtering" (EnsureBridge of a VLAN-filtering
	// bridge) or "8021q" (VLANInterface).
	step string
}

func (h *noVLANHost) EnsureBridge(ctx context.Context, b network.Bridge) error {
	if b.VLANFiltering && h.step == "filtering" {
		return fmt.Errorf("%w: this kernel has no bridge VLAN filtering: ip link add %s type bridge vlan_filtering 1: exit status 2: Operation not supported", network.ErrUnsupportedHost, b.Name)
	}
	return h.recordingHost.EnsureBridge(ctx, b)
}

func (h *noVLANHost) VLANInterface(ctx context.Context, parent, name string, vlan int, addr netip.Prefix) error {
	if h.step == "8021q" {
		return fmt.Errorf("%w: this kernel has no 802.1Q VLAN devices: ip link add %s link %s type vlan id %d: Unknown device type", network.ErrUnsupportedHost, name, parent, vlan)
	}
	return h.recordingHost.VLANInterface(ctx, parent, name, vlan, addr)
}

// A node whose kernel cannot put a guest on its NetworkAttachmentDefinition's
// VLAN refuses the interface with a message for the VMI's status that names
// the definition and its vlan field (and none of the host's commands),
// instead of attaching the guest untagged.
func TestResolverVLANUnsupportedHost(t *testing.T) {
	for _, step := range []string{"filtering", "8021q"} {
		t.Run(step, func(t *testing.T) {
			ctx := context.Background()
			st := store.NewMemory()
			createNAD(t, st, "vlan100", `{"type":"bridge","bridge":"br1","vlan":100,"isGateway":true,`+
				`"ipam":{"type":"host-local","subnet":"192.168.100.0/24"}}`)
			host := &noVLANHost{step: step}
			r := newResolver(t, st, host)
			rq := req("bridge", domain.NetworkMultus)
			rq.MultusNetworkName = "vlan100"
			_, err := r.ResolveNetwork(ctx, rq)
			require.ErrorIs(t, err, network.ErrUnsupportedHost)
			var tm interface{ TenantMessage() string }
			require.ErrorAs(t, err, &tm)
			msg := tm.TenantMessage()
			assert.Contains(t, msg, "NetworkAttachmentDefinition default/vlan100: spec.config.vlan: VLAN 100 is not supported by this node")
			assert.NotContains(t, msg, "ip link", "the host's commands stay in the node's log")
			assert.Contains(t, err.Error(), "ip link", "the node's log has the host's details")
			assert.Empty(t, host.dhcp, "no DHCP lease is served for a guest that cannot be attached")
		})
	}
}
