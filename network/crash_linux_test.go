//go:build linux

package network_test

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/network"
	"github.com/virtkit/virtkit/store"
)

// needHostTools skips (fails under VIRTKIT_STRICT=1) unless the test runs
// as root with ip, nft and dnsmasq.
func needHostTools(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, "host networking needs root")
	}
	for _, tool := range []string{"ip", "nft", "dnsmasq"} {
		testenv.LookTool(t, tool, "Debian iproute2, nftables, dnsmasq-base; hack/realstack/install.sh installs them")
	}
}

func netnsExists(name string) bool {
	_, err := os.Stat(filepath.Join("/run/netns", name))
	return err == nil
}

func linkPresent(name string) bool {
	return exec.Command("ip", "link", "show", "dev", name).Run() == nil
}

func pidAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// dhcpPid is the pid of the DHCP server of a masquerade copy.
func dhcpPid(t *testing.T, stateDir, id string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(stateDir, "dhcp-vk-"+id+"-vki"+id, "pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

// A node agent killed with SIGKILL leaves its host networking behind (the
// test stands in for it by dropping a Host without Close). The next agent
// on the same state directory stops the DHCP servers left running, rebuilds
// the masquerade copy of the VMI still on the node and removes the copy of
// the VMI deleted meanwhile; closing it then leaves no namespace, link,
// nftables table or dnsmasq behind.
func TestHostAdoptsAfterCrash(t *testing.T) {
	needHostTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st := store.NewMemory()
	stateDir := filepath.Join(t.TempDir(), "net")
	const bridge, table = "vkcrash0", "vkcrashtest"
	opts := func(h *network.Host) network.ResolverOptions {
		return network.ResolverOptions{Store: st, Node: "n1", PodSubnet: netipPrefix("10.251.99.0/24"), PodBridge: bridge, Host: h, MTU: 1400}
	}
	vmis := map[string]*virtkit.VirtualMachineInstance{}
	for _, name := range []string{"keep", "gone"} {
		v := masqueradeVMI()
		v.Name, v.UID = name, ""
		require.NoError(t, st.Create(ctx, v))
		v.Status.NodeName = "n1"
		v.Status.Phase = virtkit.Running
		require.NoError(t, st.UpdateStatus(ctx, v))
		vmis[name] = v
	}

	h1 := network.NewHost(network.HostOptions{StateDir: stateDir, Table: table})
	t.Cleanup(func() { _ = h1.Close(context.Background()) }) // only if the test failed early
	r1, err := network.NewResolver(opts(h1))
	require.NoError(t, err)
	require.NoError(t, r1.SetUp(ctx))
	for _, v := range vmis {
		_, err := domain.ResolveNetworks(ctx, v, r1)
		require.NoError(t, err)
	}
	copies, err := h1.Masquerades()
	require.NoError(t, err)
	require.Len(t, copies, 2)
	ids := map[string]string{}
	for _, m := range copies {
		ids[m.Owner.Name] = m.ID
		assert.True(t, netnsExists("vk-"+m.ID))
	}
	oldPids := map[string]int{}
	for name, id := range ids {
		oldPids[name] = dhcpPid(t, stateDir, id)
		require.True(t, pidAlive(oldPids[name]))
	}

	// The agent dies; meanwhile "gone" is deleted.
	require.NoError(t, st.Delete(ctx, vmis["gone"], store.DeleteOptions{}))

	h2 := network.NewHost(network.HostOptions{StateDir: stateDir, Table: table})
	t.Cleanup(func() { _ = h2.Close(context.Background()) }) // only if the test failed early
	r2, err := network.NewResolver(opts(h2))
	require.NoError(t, err)
	require.NoError(t, r2.SetUp(ctx))

	gone := ids["gone"]
	assert.False(t, netnsExists("vk-"+gone), "the deleted VMI's namespace is removed")
	for _, l := range []string{"vkm" + gone, "vkg" + gone, "vkp" + gone} {
		assert.False(t, linkPresent(l), "%s removed", l)
	}
	assert.False(t, pidAlive(oldPids["gone"]), "its DHCP server is stopped")
	assert.False(t, pidAlive(oldPids["keep"]), "the dead agent's DHCP server is replaced")
	keep := ids["keep"]
	assert.True(t, netnsExists("vk-"+keep), "the running VMI's namespace stays")
	for _, l := range []string{"vkm" + keep, "vkg" + keep, "vkp" + keep} {
		out, err := exec.Command("ip", "link", "show", "dev", l).Output()
		require.NoError(t, err)
		assert.Contains(t, string(out), " mtu 1400 ", "%s has the pod network's MTU", l)
	}
	newPid := dhcpPid(t, stateDir, keep)
	assert.NotEqual(t, oldPids["keep"], newPid)
	assert.True(t, pidAlive(newPid), "the running VMI's guest is served again")
	left, err := h2.Masquerades()
	require.NoError(t, err)
	require.Len(t, left, 1)
	assert.Equal(t, keep, left[0].ID)

	require.NoError(t, h2.Close(ctx))
	assert.False(t, netnsExists("vk-"+keep))
	for _, l := range []string{bridge, "vkm" + keep, "vkg" + keep, "vkp" + keep} {
		assert.False(t, linkPresent(l), "%s removed on Close", l)
	}
	assert.False(t, pidAlive(newPid))
	assert.Error(t, exec.Command("nft", "list", "table", "inet", table).Run(), "the nftables table is removed")
}

func netipPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }
