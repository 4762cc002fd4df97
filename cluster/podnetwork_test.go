package cluster_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/network"
	"github.com/virtkit/virtkit/store"
)

// With a PodNetwork the embedded default (simulated hosts) gives every VMI
// its own address from the node's subnet, reports it through the simulated
// guest agent in status.interfaces, and releases it when the VMI goes.
func TestPodNetworkOnSimulatedHosts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Bridge binding: status then shows what the guest agent reports (for
	// masquerade the node reports the lease itself).
	c, err := cluster.New(cluster.Options{NodeNames: []string{"node-a", "node-b"},
		Defaults:   virtkit.DefaultOptions{PodNetworkBinding: virtkit.NetworkBindingBridge},
		PodNetwork: &cluster.PodNetwork{Range: netip.MustParsePrefix("10.250.0.0/16"), CollectInterval: 100 * time.Millisecond}})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(runCtx) }()
	defer func() { stop(); require.NoError(t, <-done) }()

	names := []string{"vm1", "vm2", "vm3"}
	for _, n := range names {
		require.NoError(t, c.Apply(ctx, newVMIObj(n)))
	}
	seen := map[string]string{}
	for _, n := range names {
		got, err := c.WaitForVMI(ctx, "default", n, func(v *virtkit.VirtualMachineInstance, found bool) bool {
			return found && v.IsRunning() && len(v.Status.Interfaces) > 0 && v.Status.Interfaces[0].IP != "" &&
				v.Status.Interfaces[0].InfoSource == virtkit.InfoSourceDomainAndGA
		})
		require.NoError(t, err)
		ip := got.Status.Interfaces[0].IP
		leases, err := (&network.IPAM{Store: c.Store()}).OwnedBy(ctx, string(got.UID))
		require.NoError(t, err)
		require.Len(t, leases, 1)
		lease := netip.MustParsePrefix(leases[0].Spec.Address)
		assert.Equal(t, lease.Addr().String(), ip, "the guest reports its lease")
		assert.Equal(t, got.Status.NodeName, leases[0].Spec.Node)
		assert.True(t, netip.MustParsePrefix("10.250.0.0/16").Contains(lease.Addr()))
		assert.Equal(t, virtkit.InfoSourceDomainAndGA, got.Status.Interfaces[0].InfoSource)
		_, dup := seen[ip]
		require.False(t, dup, "%s given twice", ip)
		seen[ip] = n
	}

	vmi := &virtkit.VirtualMachineInstance{}
	require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "default", Name: "vm1"}, vmi))
	require.NoError(t, c.Store().Delete(ctx, vmi, store.DeleteOptions{}))
	require.Eventually(t, func() bool {
		l, err := (&network.IPAM{Store: c.Store()}).OwnedBy(ctx, string(vmi.UID))
		return err == nil && len(l) == 0
	}, 30*time.Second, 50*time.Millisecond, "the lease of the deleted VMI is released")
}
