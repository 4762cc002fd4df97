package guestagent_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/guestagent"
)

// TestRealAgent runs every typed call against the real qemu-ga.
func TestRealAgent(t *testing.T) {
	sock := startRealAgent(t)
	tr := guestagent.DialUnix(sock, guestagent.Options{})
	t.Cleanup(func() { _ = tr.Close() })
	c := guestagent.New(tr, guestagent.Options{})

	out, err := exec.Command(qemuGA(t), "--version").Output()
	require.NoError(t, err)
	wantVersion := strings.TrimSpace(string(out)[strings.LastIndex(string(out), " "):])
	hostname, err := os.Hostname()
	require.NoError(t, err)

	tests := []struct {
		name  string
		check func(t *testing.T, ctx context.Context)
	}{
		{"ping", func(t *testing.T, ctx context.Context) {
			require.NoError(t, c.Ping(ctx))
		}},
		{"info", func(t *testing.T, ctx context.Context) {
			info, err := c.Info(ctx)
			require.NoError(t, err)
			assert.Equal(t, wantVersion, info.Version)
			ping, ok := info.Command("guest-ping")
			require.True(t, ok)
			assert.True(t, ping.Enabled)
			shutdown, ok := info.Command("guest-shutdown")
			require.True(t, ok)
			assert.False(t, shutdown.Enabled, "blocked with -b")
			assert.False(t, shutdown.SuccessResponse)
			assert.Equal(t, []string{"guest-shutdown"}, guestagent.MissingRequiredCommands(info))
		}},
		{"osinfo", func(t *testing.T, ctx context.Context) {
			os, err := c.OSInfo(ctx)
			require.NoError(t, err)
			assert.Equal(t, hostOSReleaseID(t), os.ID)
			assert.NotEmpty(t, os.KernelRelease)
			assert.NotEmpty(t, os.Machine)
		}},
		{"hostname", func(t *testing.T, ctx context.Context) {
			h, err := c.HostName(ctx)
			require.NoError(t, err)
			assert.Equal(t, hostname, h)
		}},
		{"users", func(t *testing.T, ctx context.Context) {
			_, err := c.Users(ctx)
			require.NoError(t, err)
		}},
		{"fsinfo", func(t *testing.T, ctx context.Context) {
			fs, err := c.FSInfo(ctx)
			require.NoError(t, err)
			for _, f := range fs {
				assert.NotEmpty(t, f.Mountpoint)
				assert.NotEmpty(t, f.Type)
			}
		}},
		{"interfaces", func(t *testing.T, ctx context.Context) {
			ifs, err := c.NetworkInterfaces(ctx)
			require.NoError(t, err)
			var names []string
			for _, i := range ifs {
				names = append(names, i.Name)
			}
			assert.Contains(t, names, "lo")
		}},
		{"timezone", func(t *testing.T, ctx context.Context) {
			tz, err := c.Timezone(ctx)
			require.NoError(t, err)
			_, wantOffset := time.Now().Zone()
			assert.Equal(t, wantOffset, tz.Offset)
		}},
		{"time", func(t *testing.T, ctx context.Context) {
			before := time.Now()
			got, err := c.Time(ctx)
			require.NoError(t, err)
			assert.WithinDuration(t, before, got, time.Minute, "the agent reads this host's clock")
		}},
		{"vcpus", func(t *testing.T, ctx context.Context) {
			v, err := c.VCPUs(ctx)
			require.NoError(t, err)
			require.NotEmpty(t, v)
			assert.True(t, v[0].Online || v[len(v)-1].Online)
		}},
		{"disks", func(t *testing.T, ctx context.Context) {
			_, err := c.Disks(ctx)
			require.NoError(t, err)
		}},
		{"fsfreeze status", func(t *testing.T, ctx context.Context) {
			s, err := c.FSFreezeStatus(ctx)
			require.NoError(t, err)
			assert.Equal(t, guestagent.FreezeStatusThawed, s)
		}},
		{"fsfreeze freeze is blocked", func(t *testing.T, ctx context.Context) {
			_, err := c.FSFreeze(ctx)
			require.ErrorIs(t, err, guestagent.ErrCommandDisabled)
			var ae *guestagent.AgentError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, "CommandNotFound", ae.Class)
		}},
		{"fsfreeze thaw", func(t *testing.T, ctx context.Context) {
			n, err := c.FSThaw(ctx)
			require.NoError(t, err)
			assert.Zero(t, n)
		}},
		{"shutdown is blocked", func(t *testing.T, ctx context.Context) {
			err := c.Shutdown(ctx, guestagent.ShutdownPowerdown)
			require.ErrorIs(t, err, guestagent.ErrCommandDisabled)
		}},
		{"unknown command", func(t *testing.T, ctx context.Context) {
			err := c.Execute(ctx, "guest-virtkit-no-such-command", nil, nil)
			require.ErrorIs(t, err, guestagent.ErrCommandNotFound)
			assert.NotErrorIs(t, err, guestagent.ErrCommandDisabled)
		}},
		{"bad argument", func(t *testing.T, ctx context.Context) {
			err := c.Execute(ctx, "guest-ping", map[string]int{"x": 1}, nil)
			require.ErrorIs(t, err, guestagent.ErrGenericError)
		}},
		{"raw execute", func(t *testing.T, ctx context.Context) {
			var mem struct {
				Size uint64 `json:"size"`
			}
			require.NoError(t, c.Execute(ctx, "guest-get-memory-block-info", nil, &mem))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			tt.check(t, ctx)
		})
	}
}

// TestRealAgentResync: after a call gives up early, the next call must not
// read the stale reply of the first; the real agent still answers it.
func TestRealAgentResync(t *testing.T) {
	sock := startRealAgent(t)
	tr := guestagent.DialUnix(sock, guestagent.Options{})
	t.Cleanup(func() { _ = tr.Close() })
	c := guestagent.New(tr, guestagent.Options{})
	ctx := context.Background()
	require.NoError(t, c.Ping(ctx))

	// A context that is already expired fails before anything is sent.
	expired, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	require.ErrorIs(t, c.Ping(expired), context.DeadlineExceeded)

	// A call cancelled right after its request went out leaves the reply
	// in the stream; the next call's resync discards it.
	for range 20 {
		short, cancel := context.WithTimeout(ctx, 50*time.Microsecond)
		_, _ = c.Users(short)
		cancel()
		h, err := c.HostName(ctx)
		require.NoError(t, err)
		want, _ := os.Hostname()
		require.Equal(t, want, h)
	}
}

// TestRealAgentReconnect: closing the transport and calling again redials.
// qemu-ga serves one client at a time and listens again shortly after the
// previous one left (until then a dial is refused: the transport does not
// hide that, so the test retries).
func TestRealAgentReconnect(t *testing.T) {
	sock := startRealAgent(t)
	tr := guestagent.DialUnix(sock, guestagent.Options{})
	c := guestagent.New(tr, guestagent.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 3 {
		require.Eventually(t, func() bool {
			err := c.Ping(ctx)
			if err != nil {
				require.ErrorIs(t, err, guestagent.ErrDisconnected)
			}
			return err == nil
		}, 5*time.Second, 10*time.Millisecond)
		require.NoError(t, tr.Close())
	}
}
