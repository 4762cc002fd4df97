package main

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
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

	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/internal/testenv"
)

// readScreen decodes an image file of a simulated display back to text.
func readScreen(t *testing.T, file string, decode func(f *os.File) (image.Image, error)) []string {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	img, err := decode(f)
	require.NoError(t, err)
	lines, err := sim.VNCText(img)
	require.NoError(t, err)
	return lines
}

// simDisplayPort is a free port of a VNC display (5900+N).
func simDisplayPort(t *testing.T) int {
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

// The simulated guest's VNC display through the API of `virtkit
// controller`: `virtkit vnc --screenshot` writes a PNG whose text is the
// guest's console, and vncsnapshot (a real VNC client, RFB 3.3) takes one
// through `virtkit vnc --proxy-only`.
func TestVNCOnSimCLI(t *testing.T) {
	kc := startAPIController(t, "--nodes", "1", "--heartbeat-interval", "200ms")
	c := cli{t: t, kubeconfig: kc}
	manifest := filepath.Join(t.TempDir(), "vm.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(apiVM), 0o644))
	c.ok("apply", "-f", manifest)
	c.eventually("Running", "get", "vmi", "vm-api")
	c.eventually("https://127.0.0.1:", "get", "nodes", "-o", "jsonpath={.items[0].metadata.annotations}")

	shot := filepath.Join(t.TempDir(), "screen.png")
	c.ok("vnc", "vm-api", "--screenshot", shot)
	lines := readScreen(t, shot, func(f *os.File) (image.Image, error) { return png.Decode(f) })
	assert.Contains(t, lines, "virtkit simulated guest vm-api ready")
	assert.Contains(t, lines, "/ #")
	assert.Contains(t, c.fails("vnc", "vm-api", "--screenshot", shot, "--proxy-only"), "--screenshot")

	t.Run("vncsnapshot", func(t *testing.T) {
		snapshot := testenv.LookTool(t, "vncsnapshot", "Debian package vncsnapshot")
		port := simDisplayPort(t)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		vctx, vcancel := context.WithCancel(ctx)
		vnc := newRootCmd()
		var vout, verr lockedBuffer
		vnc.SetOut(&vout)
		vnc.SetErr(&verr)
		vnc.SetArgs([]string{"vnc", "vm-api", "--proxy-only", "--port", strconv.Itoa(port), "--kubeconfig", kc})
		vdone := make(chan error, 1)
		go func() { vdone <- vnc.ExecuteContext(vctx) }()
		defer func() {
			vcancel()
			require.NoError(t, <-vdone)
		}()
		require.Eventually(t, func() bool { return strings.Contains(vout.String(), `"port"`) }, time.Minute, 10*time.Millisecond,
			"vnc prints its port: %s %s", &vout, &verr)
		var printed map[string]int
		require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(vout.String())), &printed))
		require.Equal(t, port, printed["port"])
		jpg := filepath.Join(t.TempDir(), "screen.jpg")
		out, err := exec.CommandContext(ctx, snapshot, "-quality", "100", fmt.Sprintf("127.0.0.1:%d", port-5900), jpg).CombinedOutput()
		require.NoError(t, err, "vncsnapshot: %s", out)
		lines := readScreen(t, jpg, func(f *os.File) (image.Image, error) { return jpeg.Decode(f) })
		assert.Contains(t, lines, "virtkit simulated guest vm-api ready", "vncsnapshot: %s", out)
	})
}
