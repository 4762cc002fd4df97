//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package network_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/network"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// httpGet fetches / from addr:port with a short deadline.
func httpGet(ctx context.Context, addr netip.Addr, port int, timeout time.Duration) (string, error) {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(addr.String(), strconv.Itoa(port)))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	_, _ = fmt.Fprintf(conn, "GET /index.html HTTP/1.0\r\n\r\n")
	b, err := io.ReadAll(io.LimitReader(conn, 64<<10)) // HTTP/1.0: the server closes
	if len(b) == 0 {
		return "", err
	}
	return string(b), nil
}

func (c *netCluster) cordon(t *testing.T) func(name string, on bool) {
	return func(name string, on bool) {
		t.Helper()
		require.Eventually(t, func() bool {
			n := &virtkit.Node{}
			if err := c.Store().Get(c.ctx, store.Key{Name: name}, n); err != nil {
				return false
			}
			n.Spec.Unschedulable = on
			return c.Store().Update(c.ctx, n) == nil
		}, time.Minute, 50*time.Millisecond)
	}
}

// echoLine writes s and a newline on conn and reads the same line back.
func echoLine(conn net.Conn, s string) error {
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := fmt.Fprintf(conn, "%s\n", s); err != nil {
		return err
	}
	buf := make([]byte, len(s)+1)
	if _, err := io.ReadFull(conn, buf); err != nil {
		return err
	}
	if string(buf) != s+"\n" {
		return fmt.Errorf("echo: got %q", buf)
	}
	return nil
}

// netnsHolding lists the network namespaces named vk-* that hold addr.
func netnsHolding(t *testing.T, addr netip.Addr) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	require.NoError(t, err)
	var got []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "vk-") {
			continue
		}
		a, err := exec.Command("ip", "netns", "exec", f[0], "ip", "-o", "addr", "show").Output()
		if err == nil && strings.Contains(string(a), " "+addr.String()+"/") {
			got = append(got, f[0])
		}
	}
	return got
}

// TestRealStackPodNetworkAcrossDaemons: a bridge-binding guest on
// libvirtd A and one on libvirtd B (one host network namespace, one pod
// bridge) reach each other at their VMI addresses.
func TestRealStackPodNetworkAcrossDaemons(t *testing.T) {
	c := startNetCluster(t, "net-a", "net-b")
	cordon := c.cordon(t)
	cordon("net-b", true)
	a := c.boot(t, netVMI("net-xa", bridgeIface("default"), podNet()))[0]
	cordon("net-b", false)
	cordon("net-a", true)
	b := c.boot(t, netVMI("net-xb", bridgeIface("default"), podNet()))[0]
	cordon("net-a", false)
	require.Equal(t, "net-a", a.Status.NodeName)
	require.Equal(t, "net-b", b.Status.NodeName)
	ipA, ipB := c.dhcp(t, a), c.dhcp(t, b)
	assert.Equal(t, c.lease(t, a, network.PodPool), ipA)
	assert.Equal(t, c.lease(t, b, network.PodPool), ipB)
	code, out := c.guestRun(t, a, 30*time.Second, "ping -c 3 -W 3 "+ipB.Addr().String())
	assert.Equal(t, 0, code, "the guest on A pings the guest on B: %s", out)
	code, out = c.guestRun(t, b, 30*time.Second, "ping -c 3 -W 3 "+ipA.Addr().String())
	assert.Equal(t, 0, code, "the guest on B pings the guest on A: %s", out)
}

// TestRealStackMigrationKeepsAddress live-migrates a masquerade guest from
// libvirtd A to libvirtd B while the host fetches a page from its VMI
// address every 20 ms: the address, the MAC and the forwarded port stay,
// and the longest gap between two successful fetches is logged (the
// traffic gap of the switchover, for BENCHMARKS.md). Each node has its own
// network.Host: B prepares its own copy of the guest's NAT before the
// migration starts, the guest arrives attached to it, and A removes its
// copy after.
func TestRealStackMigrationKeepsAddress(t *testing.T) {
	c := startNetClusterWith(t, netOptions{perNodeHost: true, ipv6: true}, "net-a", "net-b")
	setCordon := c.cordon(t)
	setCordon("net-b", true) // boot on A: B's daemon can be migrated to
	iface := virtkit.Interface{Name: "default",
		InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Masquerade: &virtkit.InterfaceMasquerade{}},
		Ports:                  []virtkit.Port{{Name: "http", Port: 8080}, {Name: "echo", Port: 8081}}}
	vmi := c.boot(t, netVMI("net-mig", iface, podNet()))[0]
	setCordon("net-b", false)
	require.Equal(t, "net-a", vmi.Status.NodeName)
	require.True(t, vmi.IsMigratable(), "%+v", vmi.Status.Conditions)
	require.Equal(t, netip.MustParsePrefix("10.0.2.2/24"), c.dhcp(t, vmi))
	// Dual-stack: the guest takes fd10:0:2::2 (busybox has no DHCPv6
	// client) and its IPv6 default route from the router advertisements.
	code, out := c.guestRun(t, vmi, 60*time.Second, `ip -6 addr add fd10:0:2::2/120 dev eth0 || exit 1
for i in $(seq 1 40); do ip -6 route show default | grep -q 'via fe80' && break; sleep 1; done
for i in $(seq 1 20); do ip -6 addr show dev eth0 | grep -q tentative || break; sleep 1; done
ip -6 route show default`)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "via fe80", out)
	code, out = c.guestRun(t, vmi, 20*time.Second,
		"mkdir -p /tmp/www && echo virtkit-migration > /tmp/www/index.html && httpd -p 8080 -h /tmp/www && "+
			"(nc -ll -p 8081 -e /bin/cat </dev/null >/dev/null 2>&1 &)")
	require.Equal(t, 0, code, out)
	pod := c.lease(t, vmi, network.PodPool)
	srcNetns := netnsHolding(t, pod.Addr())
	require.Len(t, srcNetns, 1, "one copy of the NAT holds %s before the migration", pod)
	require.Eventually(t, func() bool {
		b, err := httpGet(c.ctx, pod.Addr(), 8080, time.Second)
		return err == nil && strings.Contains(b, "virtkit-migration")
	}, 30*time.Second, 200*time.Millisecond)

	// An open TCP connection to the echo server, kept across the migration.
	var echo net.Conn
	require.Eventually(t, func() bool {
		d := net.Dialer{Timeout: 2 * time.Second}
		conn, err := d.DialContext(c.ctx, "tcp", net.JoinHostPort(pod.Addr().String(), "8081"))
		if err != nil {
			return false
		}
		if echoLine(conn, "before") != nil {
			conn.Close()
			return false
		}
		echo = conn
		return true
	}, 30*time.Second, 500*time.Millisecond, "the echo server answers")
	defer echo.Close()

	// Fetch every 20 ms until stopped, recording successes.
	var (
		mu        sync.Mutex
		successes []time.Time
		failures  = map[string]int{}
	)
	stopProbe := make(chan struct{})
	probeDone := make(chan struct{})
	go func() {
		defer close(probeDone)
		for {
			select {
			case <-stopProbe:
				return
			case <-time.After(20 * time.Millisecond):
			}
			b, err := httpGet(c.ctx, pod.Addr(), 8080, 500*time.Millisecond)
			mu.Lock()
			if err == nil && strings.Contains(b, "virtkit-migration") {
				successes = append(successes, time.Now())
			} else {
				why := "unexpected reply"
				if err != nil {
					why = err.Error()
					if i := strings.LastIndex(why, ": "); i >= 0 {
						why = why[i+2:]
					}
				}
				failures[why]++
			}
			mu.Unlock()
		}
	}()
	time.Sleep(time.Second)
	mig, err := actions.Migrate(c.ctx, c.Store(), store.KeyOf(vmi), actions.MigrateOptions{})
	require.NoError(t, err)
	done, err := cluster.WaitFor(c.ctx, c.Store(), store.KeyOf(mig),
		func() *virtkit.VirtualMachineInstanceMigration { return &virtkit.VirtualMachineInstanceMigration{} },
		&virtkit.VirtualMachineInstanceMigrationList{},
		func(m *virtkit.VirtualMachineInstanceMigration, found bool) bool { return found && m.IsFinal() })
	require.NoError(t, err)
	require.Equal(t, virtkit.MigrationSucceeded, done.Status.Phase)
	time.Sleep(3 * time.Second)
	close(stopProbe)
	<-probeDone

	after, err := c.WaitForVMI(c.ctx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Status.NodeName == "net-b"
	})
	require.NoError(t, err)
	assert.Equal(t, pod, c.lease(t, after, network.PodPool), "the VMI keeps its address")
	b, err := httpGet(c.ctx, pod.Addr(), 8080, 2*time.Second)
	require.NoError(t, err)
	assert.Contains(t, b, "virtkit-migration", "the declared port answers on the target")
	assert.NoError(t, echoLine(echo, "after"), "the TCP connection opened before the migration still works")
	pod6 := c.lease(t, after, network.PodPool6).Addr()
	var b6 string
	assert.Eventually(t, func() bool {
		b, err := httpGet(c.ctx, pod6, 8080, 2*time.Second)
		b6 = b
		return err == nil && strings.Contains(b, "virtkit-migration")
	}, 20*time.Second, 500*time.Millisecond, "the declared port answers at the IPv6 pod address [%s] on the target: %q", pod6, b6)
	code, out = c.guestRun(t, after, 20*time.Second, "ip -4 -o addr show dev eth0; cat /sys/class/net/eth0/address")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "10.0.2.2/24")

	// B made its own copy of the NAT and the guest's NIC is on it; A's
	// copy is gone.
	dstNetns := netnsHolding(t, pod.Addr())
	require.Len(t, dstNetns, 1, "one copy of the NAT holds %s after the migration", pod)
	assert.NotEqual(t, srcNetns, dstNetns, "the target's own copy")
	x, err := c.hvs["net-b"].XML(c.ctx, node.DomainName(after.Namespace, after.Name))
	require.NoError(t, err)
	assert.Contains(t, x, "vkm"+strings.TrimPrefix(dstNetns[0], "vk-"), "the guest's NIC is on the target's guest bridge")

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, successes)
	var gap time.Duration
	var gapAt time.Time
	var steps []time.Duration
	for i := 1; i < len(successes); i++ {
		d := successes[i].Sub(successes[i-1])
		steps = append(steps, d)
		if d > gap {
			gap, gapAt = d, successes[i-1]
		}
	}
	slices.Sort(steps)
	if len(steps) > 0 {
		t.Logf("BENCH median interval between successful fetches %v", steps[len(steps)/2].Round(time.Millisecond))
	}
	t.Logf("BENCH migration traffic gap: longest interval between successful fetches %v, from %v after the migration was created (%d fetches ok, failed: %v; a fetch every 20 ms, 500 ms timeout)",
		gap.Round(time.Millisecond), gapAt.Sub(mig.CreationTimestamp.Time).Round(time.Millisecond), len(successes), failures)
	ms := after.Status.MigrationState
	if ms != nil && ms.StartTimestamp != nil && ms.EndTimestamp != nil {
		t.Logf("BENCH migration duration %v", ms.EndTimestamp.Sub(ms.StartTimestamp.Time))
	}
}
