//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/node"
)

const streamsGuestImage = "localhost/virtkit/tiny-guest:latest"

// The console, VNC display and port-forward of the tiny guest on the real
// libvirtd (qemu:///system), through `virtkit controller`'s API server and
// the node agent's endpoint: the console shows the guest's boot output and
// runs a command; vncsnapshot (a real VNC client) takes a screenshot
// through `virtkit vnc --proxy-only` that is not blank; port-forward to a
// guest without a pod network fails with the reason.
func TestRealStackStreams(t *testing.T) {
	guest := libvirttest.RequireStack(t)
	snapshot := testenv.LookTool(t, "vncsnapshot", "Debian package vncsnapshot")
	rc := startRealAPICluster(t, realAPIClusterOptions{Node: "streams-rs", WorkPrefix: "virtkit-streams-",
		Kernels: map[string]domain.HostKernel{streamsGuestImage: {Kernel: guest.Kernel, Initrd: guest.Initramfs}}})
	c, hv, kc, ctx := rc.C, rc.HV, rc.Kubeconfig, rc.Ctx
	vmi := streamsTinyVMI()
	rc.deleteAtCleanup(t, vmi)
	tctx, tcancel := context.WithTimeout(ctx, 6*time.Minute)
	defer tcancel()
	require.NoError(t, c.Apply(tctx, vmi))
	_, err := c.WaitForVMI(tctx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.IsRunning()
	})
	require.NoError(t, err, "the tiny guest starts")
	cl := cli{t: t, kubeconfig: kc}
	cl.eventually("https://127.0.0.1:", "get", "nodes", "-o", "jsonpath={.items[0].metadata.annotations}")

	// Console: attach at once (a serial socket keeps nothing for late
	// readers), read the boot output, then start a shell on ttyS0 through
	// the guest agent (the tiny guest runs no getty) and run a command.
	con := startConsole(t, kc, vmi.Namespace, vmi.Name)
	con.waitFor(t, "tiny: up", 4*time.Minute)
	_, err = c.WaitForVMI(tctx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected)
	})
	require.NoError(t, err, "the guest agent connects")
	shell := `{"execute":"guest-exec","arguments":{"path":"/bin/sh","arg":["-c","setsid sh -c 'exec sh -i </dev/ttyS0 >/dev/ttyS0 2>&1' &"]}}`
	actx, acancel := context.WithTimeout(tctx, time.Minute)
	_, err = hv.AgentCommand(actx, node.DomainName(vmi.Namespace, vmi.Name), shell)
	acancel()
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		con.send(t, "echo virtkit-$((6*7))\r")
		return con.has("virtkit-42")
	}, 2*time.Minute, 3*time.Second, "the guest's shell answers on the console: %q", con.out.String())
	con.detach(t)

	// VNC: vncsnapshot through `virtkit vnc --proxy-only` on a display port.
	port := freeDisplayPort(t)
	vctx, vcancel := context.WithCancel(tctx)
	vnc := newRootCmd()
	var vout, verr lockedBuffer
	vnc.SetOut(&vout)
	vnc.SetErr(&verr)
	vnc.SetArgs([]string{"vnc", vmi.Name, "-n", vmi.Namespace, "--proxy-only", "--port", strconv.Itoa(port), "--kubeconfig", kc})
	vdone := make(chan error, 1)
	go func() { vdone <- vnc.ExecuteContext(vctx) }()
	require.Eventually(t, func() bool { return strings.Contains(vout.String(), `"port"`) }, time.Minute, 50*time.Millisecond,
		"vnc prints its port: %s %s", &vout, &verr)
	var printed map[string]int
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(vout.String())), &printed))
	assert.Equal(t, port, printed["port"])
	shot := filepath.Join(t.TempDir(), "screen.jpg")
	sctx, scancel := context.WithTimeout(tctx, 2*time.Minute)
	out, err := exec.CommandContext(sctx, snapshot, "-quality", "90", fmt.Sprintf("127.0.0.1:%d", port-5900), shot).CombinedOutput()
	scancel()
	require.NoError(t, err, "vncsnapshot: %s", out)
	vcancel()
	require.NoError(t, <-vdone)
	f, err := os.Open(shot)
	require.NoError(t, err)
	defer f.Close()
	img, err := jpeg.Decode(f)
	require.NoError(t, err)
	assert.False(t, uniform(img), "the screenshot is not blank (%v)", img.Bounds())
	t.Logf("screenshot %v: %s", img.Bounds(), strings.TrimSpace(string(out)))

	// Port-forward: the guest has no pod network, so the node cannot reach
	// any address of it, and says so.
	errOut := cl.fails("port-forward", "--stdio", "-n", vmi.Namespace, "vmi/"+vmi.Name, "22")
	assert.Contains(t, errOut, "no guest address reachable from the node")
}

// consoleRun is a running `virtkit console`.
type consoleRun struct {
	in   *io.PipeWriter
	out  *lockedBuffer
	errb *lockedBuffer
	done chan error
}

func startConsole(t *testing.T, kc, ns, name string) *consoleRun {
	t.Helper()
	cmd := newRootCmd()
	pr, pw := io.Pipe()
	r := &consoleRun{in: pw, out: &lockedBuffer{}, errb: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.SetIn(pr)
	cmd.SetOut(r.out)
	cmd.SetErr(r.errb)
	cmd.SetArgs([]string{"console", name, "-n", ns, "--kubeconfig", kc})
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	go func() { r.done <- cmd.ExecuteContext(ctx) }()
	return r
}

func (r *consoleRun) has(s string) bool { return strings.Contains(r.out.String(), s) }

func (r *consoleRun) waitFor(t *testing.T, s string, d time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool { return r.has(s) }, d, 50*time.Millisecond, "console shows %q: %q %q", s, r.out, r.errb)
}

func (r *consoleRun) send(t *testing.T, s string) {
	t.Helper()
	_, err := io.WriteString(r.in, s)
	require.NoError(t, err)
}

func (r *consoleRun) detach(t *testing.T) {
	t.Helper()
	r.send(t, string([]byte{consoleEscape}))
	select {
	case err := <-r.done:
		require.NoError(t, err, "stderr: %s", r.errb)
	case <-time.After(30 * time.Second):
		t.Fatal("console did not detach on ^]")
	}
}

// freeDisplayPort is a free port of a VNC display (5900+N).
func freeDisplayPort(t *testing.T) int {
	t.Helper()
	for p := 5950; p < 6100; p++ {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err == nil {
			_ = ln.Close()
			return p
		}
	}
	t.Fatal("no free VNC display port")
	return 0
}

// uniform reports whether every pixel of img has the same colour (JPEG
// noise of a few levels aside).
func uniform(img image.Image) bool {
	b := img.Bounds()
	r0, g0, b0, _ := img.At(b.Min.X, b.Min.Y).RGBA()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if diff(r, r0) > 0x2000 || diff(g, g0) > 0x2000 || diff(bl, b0) > 0x2000 {
				return false
			}
		}
	}
	return true
}

func diff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

func streamsTinyVMI() *virtkit.VirtualMachineInstance {
	mem := resource.MustParse("128Mi")
	grace := int64(5)
	return &virtkit.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Name: "streams-tiny", Namespace: "streams-realstack"},
		Spec: virtkit.VirtualMachineInstanceSpec{
			Domain: virtkit.DomainSpec{
				Memory: &virtkit.Memory{Guest: &mem},
				Firmware: &virtkit.Firmware{KernelBoot: &virtkit.KernelBoot{
					KernelArgs: libvirttest.KernelArgs(libvirttest.GuestOptions{}),
					Container:  &virtkit.KernelBootContainer{Image: streamsGuestImage, KernelPath: "/boot/vmlinuz", InitrdPath: "/boot/initramfs.gz"},
				}},
			},
			TerminationGracePeriodSeconds: &grace,
		},
	}
}
