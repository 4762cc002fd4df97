//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package network_test

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/network"
)

// TestRealStackMasqueradeIPv6: on a dual-stack pod network a masquerade
// guest also gets KubeVirt's IPv6 addressing: router advertisements from
// its gateway give it a default route, the host reaches its declared port
// (and not an undeclared one) at the VMI's IPv6 pod address through NAT66,
// and the guest reaches the pod network's IPv6 gateway. The tiny guest's
// busybox has no DHCPv6 client, so it takes fd10:0:2::2/120 itself; the
// DHCPv6 server that would hand it out is checked by its configuration.
func TestRealStackMasqueradeIPv6(t *testing.T) {
	c := startNetClusterWith(t, netOptions{ipv6: true})
	iface := virtkit.Interface{Name: "default",
		InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Masquerade: &virtkit.InterfaceMasquerade{}},
		Ports:                  []virtkit.Port{{Name: "http", Port: 8080}}}
	vmi := c.boot(t, netVMI("net-m6", iface, podNet()))[0]
	require.Equal(t, netip.MustParsePrefix("10.0.2.2/24"), c.dhcp(t, vmi), "IPv4 as before")
	code, out := c.guestRun(t, vmi, 60*time.Second, `ip -6 addr add fd10:0:2::2/120 dev eth0 || exit 1
for i in $(seq 1 40); do ip -6 route show default | grep -q 'via fe80' && break; sleep 1; done
for i in $(seq 1 20); do ip -6 addr show dev eth0 | grep -q tentative || break; sleep 1; done
ip -6 route show default; ip -6 addr show dev eth0`)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "via fe80", "a default route from the router advertisements: %s", out)
	require.Contains(t, out, "fd10:0:2::2/120", out)
	require.NotContains(t, out, "tentative", out)

	code, out = c.guestRun(t, vmi, 20*time.Second,
		"mkdir -p /tmp/www && echo virtkit-ipv6 > /tmp/www/index.html && httpd -p 8080 -h /tmp/www && httpd -p 9090 -h /tmp/www")
	require.Equal(t, 0, code, out)
	pod6 := c.lease(t, vmi, network.PodPool6).Addr()
	require.True(t, testPodSubnet6.Contains(pod6), "%s in %s", pod6, testPodSubnet6)
	var body string
	var lastErr error
	if !assert.Eventually(t, func() bool {
		b, err := httpGet(c.ctx, pod6, 8080, 3*time.Second)
		body, lastErr = b, err
		return err == nil && strings.Contains(b, "virtkit-ipv6")
	}, 30*time.Second, 500*time.Millisecond, "the host reaches the declared port at [%s]: %q", pod6, body) {
		_, out := c.guestRun(t, vmi, 20*time.Second, "ip -6 addr; ip -6 route; ip -6 neigh; netstat -ltn")
		t.Logf("last error %v; guest:\n%s", lastErr, out)
		for _, args := range [][]string{{"ip", "-6", "addr"}, {"ip", "-6", "route"}, {"ip", "-6", "neigh"}, {"nft", "list", "ruleset"}} {
			for _, ns := range netnsHolding(t, pod6) {
				o, _ := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
				t.Logf("%s %v:\n%s", ns, args, o)
			}
		}
		o, _ := exec.Command("ip", "-6", "route", "get", pod6.String()).CombinedOutput()
		t.Logf("host route: %s", o)
		t.FailNow()
	}
	_, err := httpGet(c.ctx, pod6, 9090, 3*time.Second)
	assert.Error(t, err, "the undeclared port is not reachable over IPv6")

	gw6 := testPodSubnet6.Addr().Next()
	code, out = c.guestRun(t, vmi, 30*time.Second, "ping6 -c 2 -W 3 "+gw6.String())
	assert.Equal(t, 0, code, "the guest reaches the pod network's IPv6 gateway through NAT66: %s", out)

	// The VMI's status lists both pod addresses, IPv4 first.
	pod4 := c.lease(t, vmi, network.PodPool).Addr().String()
	_, err = c.WaitForVMI(c.ctx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && len(v.Status.Interfaces) > 0 && v.Status.Interfaces[0].IP == pod4 &&
			slices.Contains(v.Status.Interfaces[0].IPs, pod6.String())
	})
	require.NoError(t, err)

	// The guest's DHCP server also serves DHCPv6 with the guest's address.
	logs, err := filepath.Glob(filepath.Join(c.stateDir, "dhcp-vk-*", "dnsmasq.log"))
	require.NoError(t, err)
	require.Len(t, logs, 1)
	log, err := os.ReadFile(logs[0])
	require.NoError(t, err)
	assert.Contains(t, string(log), "DHCPv6, static leases only on fd10:0:2::")
	hosts, err := os.ReadFile(filepath.Join(filepath.Dir(logs[0]), "hosts"))
	require.NoError(t, err)
	assert.Contains(t, string(hosts), ",10.0.2.2,[fd10:0:2::2]")
}
