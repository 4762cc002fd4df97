package guestagent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/guestagent/qgaserver"
)

// TestTypedCallsSimulated: every typed call decodes exactly what the
// simulated guest holds, over both transports.
func TestTypedCallsSimulated(t *testing.T) {
	cfg := testGuest()
	transports := map[string]func(t *testing.T, srv *qgaserver.Server) guestagent.Transport{
		"stream": func(t *testing.T, srv *qgaserver.Server) guestagent.Transport {
			tr := guestagent.DialUnix(serveUnix(t, srv), guestagent.Options{})
			t.Cleanup(func() { _ = tr.Close() })
			return tr
		},
		"passthrough": func(t *testing.T, srv *qgaserver.Server) guestagent.Transport {
			return guestagent.NewPassthroughTransport(passthrough{srv}, "vm-1", guestagent.Options{})
		},
	}
	for name, newTransport := range transports {
		t.Run(name, func(t *testing.T) {
			var shutdowns []string
			cfg := cfg
			cfg.OnShutdown = func(mode string) error { shutdowns = append(shutdowns, mode); return nil }
			srv := qgaserver.New(cfg)
			c := guestagent.New(newTransport(t, srv), guestagent.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			require.NoError(t, c.Ping(ctx))
			info, err := c.Info(ctx)
			require.NoError(t, err)
			assert.Equal(t, qgaserver.DefaultVersion, info.Version)
			assert.Len(t, info.SupportedCommands, len(qgaserver.ImplementedCommands()))
			assert.True(t, guestagent.AgentSupported(info))

			osInfo, err := c.OSInfo(ctx)
			require.NoError(t, err)
			assert.Equal(t, cfg.OSInfo, osInfo)
			host, err := c.HostName(ctx)
			require.NoError(t, err)
			assert.Equal(t, cfg.HostName, host)
			users, err := c.Users(ctx)
			require.NoError(t, err)
			assert.Equal(t, cfg.Users, users)
			fs, err := c.FSInfo(ctx)
			require.NoError(t, err)
			assert.Equal(t, cfg.Filesystems, fs)
			ifaces, err := c.NetworkInterfaces(ctx)
			require.NoError(t, err)
			assert.Equal(t, cfg.Interfaces, ifaces)
			tz, err := c.Timezone(ctx)
			require.NoError(t, err)
			assert.Equal(t, cfg.Timezone, tz)
			now, err := c.Time(ctx)
			require.NoError(t, err)
			assert.Equal(t, cfg.Clock(), now)
			vcpus, err := c.VCPUs(ctx)
			require.NoError(t, err)
			assert.Equal(t, cfg.VCPUs, vcpus)
			disks, err := c.Disks(ctx)
			require.NoError(t, err)
			assert.Equal(t, cfg.Disks, disks)

			n, err := c.FSFreeze(ctx)
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			st, err := c.FSFreezeStatus(ctx)
			require.NoError(t, err)
			assert.Equal(t, guestagent.FreezeStatusFrozen, st)
			n, err = c.FSThaw(ctx)
			require.NoError(t, err)
			assert.Equal(t, 1, n)

			require.NoError(t, c.Shutdown(ctx, guestagent.ShutdownPowerdown))
			require.NoError(t, c.Shutdown(ctx, guestagent.ShutdownReboot))
			assert.Equal(t, []string{"powerdown", "reboot"}, shutdowns)
			require.NoError(t, c.Ping(ctx))
		})
	}
}
