package apiserver_test

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/internal/rfb"
	"github.com/virtkit/virtkit/node"
)

// The VNC display of a simulated guest reaches a VNC client through the
// API server and the node agent's endpoint (WebSocket, binary frames): the
// client types a command into the guest's shell and reads the answer off
// the framebuffer.
func TestVNCThroughNodeEndpoint(t *testing.T) {
	e := startStreamEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ws, resp, err := e.dial(t, e.adminTLS(t), nil, "default", "vnc")
	require.NoError(t, err)
	defer ws.Close()
	assert.Equal(t, apiserver.StreamSubprotocol, resp.Header.Get("Sec-WebSocket-Protocol"))
	local, remote := net.Pipe()
	pumped := make(chan error, 1)
	go func() { pumped <- node.Pump(ctx, ws, remote, false) }()
	c, err := rfb.Handshake(ctx, local)
	require.NoError(t, err)
	assert.Equal(t, "default_vm-0", c.Name, "the domain's name")

	screen := func(want string) []string {
		t.Helper()
		incremental := false
		for {
			img, err := c.Update(ctx, incremental)
			require.NoError(t, err)
			lines, err := sim.VNCText(img)
			require.NoError(t, err)
			if slices.Contains(lines, want) {
				return lines
			}
			incremental = true
		}
	}
	assert.Contains(t, screen("/ #"), "virtkit simulated guest vm-0 ready")
	require.NoError(t, c.Type(ctx, rfb.Keysyms("echo hello\n")...))
	lines := screen("hello")
	assert.Contains(t, lines, "/ # echo hello")
	require.NoError(t, c.Close())
	select {
	case <-pumped:
	case <-ctx.Done():
		t.Fatal("the stream did not end with the client")
	}
}
