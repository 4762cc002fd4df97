package sim_test

import (
	"context"
	"image/png"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/internal/rfb"
)

// vncScreen requests updates until a line of the simulated display
// satisfies ok, and returns the screen's lines.
func vncScreen(ctx context.Context, t *testing.T, c *rfb.Client, ok func(line string) bool) []string {
	t.Helper()
	incremental := false
	for {
		img, err := c.Update(ctx, incremental)
		require.NoError(t, err)
		lines, err := sim.VNCText(img)
		require.NoError(t, err)
		if slices.ContainsFunc(lines, ok) {
			return lines
		}
		incremental = true
	}
}

// A VNC client sees the simulated guest's console as text, types a
// command into its shell and reads the answer from the framebuffer; the
// display closes when the domain stops.
func TestVNCShowsConsole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, _ := virtualHost(t, sim.Options{})
	_, err := h.Define(ctx, consoleXML)
	require.NoError(t, err)
	_, err = h.OpenVNC(ctx, "ns_con")
	require.ErrorIs(t, err, hypervisor.ErrInvalidState, "a stopped domain has no display")
	_, err = h.OpenVNC(ctx, "ns_missing")
	require.ErrorIs(t, err, hypervisor.ErrNotFound)

	require.NoError(t, h.Start(ctx, "ns_con", hypervisor.StartOptions{}))
	var opener hypervisor.VNCOpener = h
	rwc, err := opener.OpenVNC(ctx, "ns_con")
	require.NoError(t, err)
	conn, ok := rwc.(net.Conn)
	require.True(t, ok, "the display is a net.Conn (%T)", rwc)
	c, err := rfb.Handshake(ctx, conn)
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, "ns_con", c.Name)
	assert.Equal(t, 640, c.Size().X)
	assert.Equal(t, 400, c.Size().Y)

	lines := vncScreen(ctx, t, c, func(l string) bool { return l == "/ #" })
	assert.Contains(t, lines, "Linux version 6.1.0-virtkit-sim (simulated guest of virtkit)")
	assert.Contains(t, lines, "virtkit simulated guest con ready")

	require.NoError(t, c.Type(ctx, rfb.Keysyms("echo hello\n")...))
	lines = vncScreen(ctx, t, c, func(l string) bool { return l == "hello" })
	assert.Contains(t, lines, "/ # echo hello", "the typed command is echoed")
	i := slices.Index(lines, "hello")
	require.Greater(t, i, 0)
	assert.Equal(t, "/ # echo hello", lines[i-1])
	assert.Equal(t, "/ #", lines[i+1], "a new prompt (the cursor cell reads as a space)")

	// A screenshot decodes back to the same text.
	img, err := c.Update(ctx, false)
	require.NoError(t, err)
	shot := filepath.Join(t.TempDir(), "screen.png")
	f, err := os.Create(shot)
	require.NoError(t, err)
	require.NoError(t, png.Encode(f, img))
	require.NoError(t, f.Close())
	f, err = os.Open(shot)
	require.NoError(t, err)
	defer f.Close()
	decoded, err := png.Decode(f)
	require.NoError(t, err)
	got, err := sim.VNCText(decoded)
	require.NoError(t, err)
	assert.Equal(t, lines, got)

	// The display ends with the domain.
	require.NoError(t, h.Destroy(ctx, "ns_con"))
	_, err = c.Update(ctx, true)
	require.Error(t, err, "the display closes when the domain stops")
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
}

// VNCText refuses a framebuffer of another size and reads unknown cells
// as U+FFFD.
func TestVNCTextInput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, _ := virtualHost(t, sim.Options{})
	_, err := h.Define(ctx, consoleXML)
	require.NoError(t, err)
	require.NoError(t, h.Start(ctx, "ns_con", hypervisor.StartOptions{}))
	rwc, err := h.OpenVNC(ctx, "ns_con")
	require.NoError(t, err)
	c, err := rfb.Handshake(ctx, rwc.(net.Conn))
	require.NoError(t, err)
	defer c.Close()
	img, err := c.Update(ctx, false)
	require.NoError(t, err)
	_, err = sim.VNCText(img.SubImage(img.Rect.Inset(8)))
	require.ErrorContains(t, err, "not a simulated display")
	for x := range 8 {
		img.Pix[4*x] = 0xff // a stray line in the first cell's top row
		img.Pix[4*x+1], img.Pix[4*x+2] = 0xff, 0xff
	}
	lines, err := sim.VNCText(img)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(lines[0], "\uFFFDinux version"), "%q", lines[0])
}
