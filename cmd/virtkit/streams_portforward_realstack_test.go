//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor/libvirt"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
	"github.com/virtkit/virtkit/node"
)

// streamsDHCP configures the tiny guest's eth0 by DHCP (it boots with a
// static user-mode address) and prints the address.
const streamsDHCP = `cat > /tmp/udhcpc.sh <<'X'
#!/bin/sh
case "$1" in
deconfig) ip addr flush dev "$interface"; ip link set "$interface" up ;;
bound|renew) ip addr flush dev "$interface"; ip addr add "$ip/$mask" dev "$interface" ;;
esac
X
chmod +x /tmp/udhcpc.sh
udhcpc -i eth0 -n -q -t 15 -T 2 -s /tmp/udhcpc.sh >/tmp/udhcpc.log 2>&1 || { cat /tmp/udhcpc.log; exit 1; }
ip -4 -o addr show dev eth0`

// Port-forward reaches a port of the tiny guest on the real pod network:
// `virtkit port-forward --stdio` through the API and the node endpoint to a
// listener busybox nc runs in the guest.
func TestRealStackPortForward(t *testing.T) {
	guest := libvirttest.RequireStack(t)
	if os.Geteuid() != 0 {
		t.Skip("host networking needs root")
	}
	for _, tool := range []string{"ip", "nft", "dnsmasq", "bridge"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s missing (hack/realstack/install.sh installs it): %v", tool, err)
		}
	}
	rc := startRealAPICluster(t, realAPIClusterOptions{Node: "streams-pf", WorkPrefix: "virtkit-streams-pf-",
		Kernels:  map[string]domain.HostKernel{streamsGuestImage: {Kernel: guest.Kernel, Initrd: guest.Initramfs}},
		PodRange: netip.MustParsePrefix("10.253.0.0/16"), PodBridge: "vkstr0", PodTable: "vkstreams"})
	c, hv, kc, ctx := rc.C, rc.HV, rc.Kubeconfig, rc.Ctx
	vmi := streamsTinyVMI()
	vmi.Name = "streams-pf"
	vmi.Spec.Domain.Devices.Interfaces = []virtkit.Interface{{Name: "default",
		InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Bridge: &virtkit.InterfaceBridge{}}}}
	vmi.Spec.Networks = []virtkit.Network{{Name: "default", NetworkSource: virtkit.NetworkSource{Pod: &virtkit.PodNetwork{}}}}
	rc.deleteAtCleanup(t, vmi)
	tctx, tcancel := context.WithTimeout(ctx, 6*time.Minute)
	defer tcancel()
	require.NoError(t, c.Apply(tctx, vmi))
	_, err := c.WaitForVMI(tctx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.IsRunning() && virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected)
	})
	require.NoError(t, err, "the tiny guest boots and its agent answers")
	dom := node.DomainName(vmi.Namespace, vmi.Name)

	code, out := streamsGuestRun(t, tctx, hv, dom, time.Minute, streamsDHCP)
	require.Equal(t, 0, code, "udhcpc: %s", out)
	var addr string
	for f := strings.Fields(out); len(f) > 0; f = f[1:] {
		if f[0] == "inet" && len(f) > 1 {
			addr = strings.Split(f[1], "/")[0]
		}
	}
	require.NotEmpty(t, addr, "address in %q", out)
	_, err = c.WaitForVMI(tctx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && len(v.Status.Interfaces) > 0 && v.Status.Interfaces[0].IP == addr
	})
	require.NoError(t, err, "status shows the pod address %s", addr)

	// A listener in the guest greets its client and writes what it gets to
	// /tmp/nc.out (its input stays open: busybox nc ends at its input's end).
	code, out = streamsGuestRun(t, tctx, hv, dom, 30*time.Second,
		`setsid sh -c '(echo hello-from-guest; sleep 60) | nc -l -p 7777 >/tmp/nc.out' </dev/null >/dev/null 2>&1 & sleep 1; echo started`)
	require.Equal(t, 0, code, "nc: %s", out)

	cmd := newRootCmd()
	pr, pw := io.Pipe()
	defer pw.Close()
	var pfOut, pfErr lockedBuffer
	cmd.SetIn(pr)
	cmd.SetOut(&pfOut)
	cmd.SetErr(&pfErr)
	cmd.SetArgs([]string{"port-forward", "--stdio", "-n", vmi.Namespace, "vmi/" + vmi.Name, "7777", "--kubeconfig", kc})
	pctx, pcancel := context.WithTimeout(tctx, 2*time.Minute)
	defer pcancel()
	pdone := make(chan error, 1)
	go func() { pdone <- cmd.ExecuteContext(pctx) }()
	require.Eventually(t, func() bool { return strings.Contains(pfOut.String(), "hello-from-guest") }, time.Minute, 50*time.Millisecond,
		"the guest's listener answers through port-forward: %q %q", &pfOut, &pfErr)
	_, err = io.WriteString(pw, "hello-from-host\n")
	require.NoError(t, err)
	var got string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		if _, got = streamsGuestRun(t, tctx, hv, dom, 30*time.Second, `cat /tmp/nc.out`); strings.Contains(got, "hello-from-host") {
			break
		}
	}
	assert.Contains(t, got, "hello-from-host", "the host's bytes reached the guest's listener")
	_ = pw.Close()
	pcancel()
	<-pdone
}

// streamsGuestRun runs a shell script in the guest through its agent and
// returns its exit code and output.
func streamsGuestRun(t *testing.T, ctx context.Context, hv *libvirt.Hypervisor, dom string, timeout time.Duration, script string) (int, string) {
	t.Helper()
	cmd, err := json.Marshal(map[string]any{"execute": "guest-exec", "arguments": map[string]any{
		"path": "/bin/sh", "arg": []string{"-c", script}, "capture-output": true}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(ctx, timeout+10*time.Second)
	defer cancel()
	reply, err := hv.AgentCommand(ctx, dom, string(cmd))
	require.NoError(t, err)
	var started struct {
		Return struct{ PID int } `json:"return"`
	}
	require.NoError(t, json.Unmarshal([]byte(reply), &started), reply)
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		reply, err := hv.AgentCommand(ctx, dom, fmt.Sprintf(`{"execute":"guest-exec-status","arguments":{"pid":%d}}`, started.Return.PID))
		require.NoError(t, err)
		var st struct {
			Return struct {
				Exited   bool   `json:"exited"`
				ExitCode int    `json:"exitcode"`
				Out      []byte `json:"out-data"`
				Err      []byte `json:"err-data"`
			} `json:"return"`
		}
		require.NoError(t, json.Unmarshal([]byte(reply), &st), reply)
		if st.Return.Exited {
			return st.Return.ExitCode, string(st.Return.Out) + string(st.Return.Err)
		}
	}
	t.Fatalf("guest script did not finish in %v: %s", timeout, script)
	return 0, ""
}
