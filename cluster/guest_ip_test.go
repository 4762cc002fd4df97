package cluster_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/guestagent/qgaserver"
	"github.com/virtkit/virtkit/node"
)

// The embedded default's simulated guests report an address per interface
// through their guest agent, on the documented subnet and unique per VMI.
func TestDefaultGuestsReportIPs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := cluster.New(cluster.Options{GuestAgent: node.GuestAgentSourceOptions{}})
	require.NoError(t, err)
	go func() { _ = c.Start(ctx) }()

	subnet := netip.MustParsePrefix(qgaserver.GuestSubnet)
	seen := map[string]string{}
	for _, name := range []string{"a", "b", "c"} {
		vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: virtkit.VirtualMachineInstanceSpec{
				Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: ptr(resource.MustParse("64Mi"))}},
			}}
		require.NoError(t, c.Apply(ctx, vmi))
		got, err := c.WaitForVMI(ctx, "default", name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
			return found && len(v.Status.Interfaces) > 0 && v.Status.Interfaces[0].IP != "" && v.Status.GuestOSInfo.ID != ""
		})
		require.NoError(t, err, "VMI %s never reported an IP", name)
		iface := got.Status.Interfaces[0]
		ip, err := netip.ParseAddr(iface.IP)
		require.NoError(t, err)
		assert.True(t, subnet.Contains(ip), "%s outside %s", ip, subnet)
		assert.Equal(t, qgaserver.GuestIPv4(iface.MAC), iface.IP, "address follows the MAC")
		assert.Contains(t, iface.InfoSource, "guest-agent")
		assert.NotContains(t, seen, iface.IP, "address of %s already taken by %s", name, seen[iface.IP])
		seen[iface.IP] = name
	}
}
