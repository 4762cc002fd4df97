package sim_test

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/internal/rfb"
)

// viewer connects a VNC client to the domain's display.
func viewer(ctx context.Context, t *testing.T, h *sim.Host, name string) *rfb.Client {
	t.Helper()
	rwc, err := h.OpenVNC(ctx, name)
	require.NoError(t, err)
	c, err := rfb.Handshake(ctx, rwc.(net.Conn))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// firstFrame is the text of one full frame, taken at once.
func firstFrame(ctx context.Context, t *testing.T, c *rfb.Client) []string {
	t.Helper()
	img, err := c.Update(ctx, false)
	require.NoError(t, err)
	lines, err := sim.VNCText(img)
	require.NoError(t, err)
	return lines
}

// The display is the domain's, as QEMU's is: the first frame already
// shows the booted guest's console, every viewer sees the same screen and
// types into the same shell, and a new run of the domain has a new screen.
func TestVNCDisplaySharedByViewers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, _ := virtualHost(t, sim.Options{})
	_, err := h.Define(ctx, consoleXML)
	require.NoError(t, err)
	require.NoError(t, h.Start(ctx, "ns_con", hypervisor.StartOptions{}))

	a := viewer(ctx, t, h, "ns_con")
	lines := firstFrame(ctx, t, a)
	assert.Equal(t, "Linux version 6.1.0-virtkit-sim (simulated guest of virtkit)", lines[0])
	assert.Equal(t, "virtkit simulated guest con ready", lines[5])
	assert.Equal(t, "/ #", lines[6], "the prompt is there from the first frame")

	require.NoError(t, a.Type(ctx, rfb.Keysyms("echo shared\n")...))
	vncScreen(ctx, t, a, func(l string) bool { return l == "shared" })
	b := viewer(ctx, t, h, "ns_con")
	lines = firstFrame(ctx, t, b)
	assert.Equal(t, []string{"/ # echo shared", "shared", "/ #"}, lines[6:9], "a second viewer sees the same screen")
	require.NoError(t, b.Type(ctx, rfb.Keysyms("echo from-b\n")...))
	lines = vncScreen(ctx, t, a, func(l string) bool { return l == "from-b" })
	assert.Contains(t, lines, "/ # echo from-b", "keys typed in one viewer show in the other")

	require.NoError(t, h.Destroy(ctx, "ns_con"))
	require.NoError(t, h.Start(ctx, "ns_con", hypervisor.StartOptions{}))
	lines = firstFrame(ctx, t, viewer(ctx, t, h, "ns_con"))
	assert.NotContains(t, lines, "shared", "a new run boots with a new screen")
	assert.Equal(t, "/ #", lines[6])
}

// A live migration moves the display with the guest, to a host on the same
// Network and to a host in another process over TCP: the source's viewers
// are disconnected (the switchover), and a viewer on the target sees the
// screen the source showed and finishes the line typed there.
func TestVNCDisplayAcrossMigration(t *testing.T) {
	tests := []struct {
		name string
		// pair returns the hosts and a function that migrates the running
		// domain name to the target.
		pair func(t *testing.T) (src, dst *sim.Host, migrate func(ctx context.Context, name string))
	}{
		{name: "network", pair: func(t *testing.T) (*sim.Host, *sim.Host, func(context.Context, string)) {
			clock := sim.NewVirtualClock(epoch)
			src, dst := hostPair(t, clock, sim.Link{Bandwidth: 1000 * MB})
			return src, dst, func(ctx context.Context, name string) {
				job, err := src.StartMigration(ctx, name, hypervisor.MigrationParams{DestinationURI: "dst"})
				require.NoError(t, err)
				clock.Advance(10 * time.Second)
				res, err := job.Result(ctx)
				require.NoError(t, err)
				require.True(t, res.Succeeded, res.Reason)
			}
		}},
		{name: "tcp", pair: func(t *testing.T) (*sim.Host, *sim.Host, func(context.Context, string)) {
			src, dst, l := tcpPair(t, sim.Options{})
			return src, dst, func(ctx context.Context, name string) {
				job, err := src.StartMigration(ctx, name, hypervisor.MigrationParams{DestinationURI: l.URI()})
				require.NoError(t, err)
				res, err := job.Result(ctx)
				require.NoError(t, err)
				require.True(t, res.Succeeded, res.Reason)
			}
		}},
		{name: "tcp post-copy", pair: func(t *testing.T) (*sim.Host, *sim.Host, func(context.Context, string)) {
			// A guest dirtying faster than the link moves in post-copy.
			src, dst, l := tcpPair(t, sim.Options{MigrationLink: sim.Link{Bandwidth: 64 << 20}})
			return src, dst, func(ctx context.Context, name string) {
				require.NoError(t, src.SetWorkload(name, sim.Workload{DirtyRate: 256 << 20, WorkingSet: 32 << 20}))
				job, err := src.StartMigration(ctx, name, hypervisor.MigrationParams{DestinationURI: l.URI(), PostCopy: true})
				require.NoError(t, err)
				require.Eventually(t, func() bool { return job.StartPostCopy(ctx) == nil }, 30*time.Second, 10*time.Millisecond)
				res, err := job.Result(ctx)
				require.NoError(t, err)
				require.True(t, res.Succeeded, res.Reason)
				require.Equal(t, hypervisor.ModePostCopy, res.Mode)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			src, dst, migrate := tt.pair(t)
			runningDomain(t, src, "ns_mover", 64<<20)

			a := viewer(ctx, t, src, "ns_mover")
			require.NoError(t, a.Type(ctx, rfb.Keysyms("echo before\necho aft")...))
			before := vncScreen(ctx, t, a, func(l string) bool { return l == "/ # echo aft" })

			migrate(ctx, "ns_mover")
			_, err := a.Update(ctx, true)
			require.Error(t, err, "the source's viewer is disconnected")
			assert.NotErrorIs(t, err, context.DeadlineExceeded)

			c := viewer(ctx, t, dst, "ns_mover")
			assert.Equal(t, before, firstFrame(ctx, t, c), "the target shows the source's screen")
			require.NoError(t, c.Type(ctx, rfb.Keysyms("er\n")...))
			lines := vncScreen(ctx, t, c, func(l string) bool { return l == "after" })
			i := slices.Index(lines, "after")
			require.Positive(t, i)
			assert.Equal(t, "/ # echo after", lines[i-1], "the line typed on the source is finished on the target")
			assert.Contains(t, lines, "before")
		})
	}
}
