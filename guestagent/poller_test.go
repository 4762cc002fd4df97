package guestagent_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/guestagent/qgaserver"
)

type changeRecorder struct {
	mu    sync.Mutex
	snaps []guestagent.Snapshot
}

func (r *changeRecorder) record(s guestagent.Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snaps = append(r.snaps, s)
}

func (r *changeRecorder) last() (guestagent.Snapshot, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.snaps) == 0 {
		return guestagent.Snapshot{}, 0
	}
	return r.snaps[len(r.snaps)-1], len(r.snaps)
}

// TestPollerSchedule checks KubeVirt's schedule with the default intervals
// in virtual time: every worker at once, then 10 s doubling up to its
// interval (fsfreeze: 5 s).
func TestPollerSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		srv := qgaserver.New(testGuest())
		tr := guestagent.NewStreamTransport(pipeDialer(ctx, srv), guestagent.Options{})
		p := guestagent.NewPoller(guestagent.New(tr, guestagent.Options{}), guestagent.PollerOptions{})
		done := make(chan error, 1)
		go func() { done <- p.Start(ctx) }()

		// Just after the poll at 70 s: sys and version ran at 0, 10, 30, 70;
		// users every 10 s from 0; fsfreeze every 5 s from 0.
		time.Sleep(75 * time.Second)
		synctest.Wait()
		assert.Equal(t, 4, srv.Calls(guestagent.CmdGetOSInfo))
		assert.Equal(t, 4, srv.Calls(guestagent.CmdNetworkInterfaces))
		assert.Equal(t, 4, srv.Calls(guestagent.CmdInfo))
		assert.Equal(t, 4, srv.Calls(guestagent.CmdGetFSInfo))
		assert.Equal(t, 8, srv.Calls(guestagent.CmdGetUsers))
		assert.Equal(t, 16, srv.Calls(guestagent.CmdFSFreezeStatus))

		// sys caps at 120 s: 150, 270, 390; version at 300 s: 150, 310(+160)...
		time.Sleep(400*time.Second - 75*time.Second)
		synctest.Wait()
		assert.Equal(t, 7, srv.Calls(guestagent.CmdGetOSInfo), "0,10,30,70,150,270,390")
		assert.Equal(t, 6, srv.Calls(guestagent.CmdInfo), "0,10,30,70,150,310")

		cancel()
		require.NoError(t, <-done)
		assert.True(t, p.Snapshot().Connected, "stopping the poller is not a disconnect")
		require.Error(t, p.Start(context.Background()), "a poller starts once")
		_ = tr.Close()
	})
}

// TestPollerSnapshotAndChanges: the snapshot reflects the guest, "lo" is
// dropped, and OnChange fires for OS info, interfaces, connectivity and
// fsfreeze changes.
func TestPollerSnapshotAndChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		srv := qgaserver.New(testGuest())
		tr := guestagent.NewStreamTransport(pipeDialer(ctx, srv), guestagent.Options{})
		var rec changeRecorder
		p := guestagent.NewPoller(guestagent.New(tr, guestagent.Options{CallTimeout: 2 * time.Second}), guestagent.PollerOptions{
			InitialInterval: time.Second, VersionInterval: time.Second, FSInfoInterval: time.Second,
			FSFreezeInterval: time.Second, SysInterval: time.Second, UsersInterval: time.Second,
			OnChange: rec.record,
		})
		done := make(chan error, 1)
		go func() { done <- p.Start(ctx) }()
		synctest.Wait()

		s := p.Snapshot()
		assert.True(t, s.Connected)
		assert.Equal(t, qgaserver.DefaultVersion, s.AgentVersion)
		assert.Empty(t, guestagent.MissingRequiredCommands(guestagent.Info{SupportedCommands: s.SupportedCommands}))
		assert.Equal(t, "Fedora Linux", s.OSInfo.Name)
		assert.Equal(t, "guest-1", s.HostName)
		assert.Equal(t, guestagent.Timezone{Zone: "CET", Offset: 3600}, s.Timezone)
		require.Len(t, s.Interfaces, 1, "lo is dropped")
		assert.Equal(t, "eth0", s.Interfaces[0].Name)
		assert.Equal(t, "10.0.2.15", guestagent.PrimaryIP(s.Interfaces[0]))
		require.Len(t, s.Users, 1)
		require.Len(t, s.Filesystems, 1)
		assert.Equal(t, guestagent.FreezeStatusThawed, s.FSFreezeStatus)
		_, n := rec.last()
		require.Positive(t, n)

		// Snapshot is a deep copy.
		s.Interfaces[0].IPAddresses[0].Address = "mutated"
		assert.Equal(t, "10.0.2.15", p.Snapshot().Interfaces[0].IPAddresses[0].Address)

		// OS info and a new interface, with hostile strings.
		srv.Update(func(c *qgaserver.Config) {
			c.OSInfo.Name = "Evil\u202eOS\x1b[2J"
			c.Interfaces = append(c.Interfaces, guestagent.NetworkInterface{Name: "eth1", HardwareAddress: "52:54:00:00:00:02",
				IPAddresses: []guestagent.IPAddress{{Type: "ipv6", Address: "fd00::2", Prefix: 64}}})
		})
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		last, _ := rec.last()
		assert.Equal(t, "Evil\uFFFDOS\uFFFD[2J", last.OSInfo.Name)
		require.Len(t, last.Interfaces, 2)
		assert.Equal(t, "fd00::2", guestagent.PrimaryIP(last.Interfaces[1]))

		// fsfreeze.
		_, err := guestagent.New(guestagent.NewPassthroughTransport(passthrough{srv}, "vm", guestagent.Options{}), guestagent.Options{}).FSFreeze(context.Background())
		require.NoError(t, err)
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		last, _ = rec.last()
		assert.Equal(t, guestagent.FreezeStatusFrozen, last.FSFreezeStatus)

		// The agent stops answering: connectivity drops, then returns.
		srv.SetFault(qgaserver.Fault{Mode: qgaserver.FaultSilent})
		time.Sleep(5 * time.Second)
		synctest.Wait()
		last, _ = rec.last()
		assert.False(t, last.Connected)
		assert.Contains(t, last.LastError, "deadline exceeded")
		assert.False(t, p.Snapshot().Connected)

		srv.SetFault(qgaserver.Fault{})
		time.Sleep(10 * time.Second)
		synctest.Wait()
		last, _ = rec.last()
		assert.True(t, last.Connected)
		assert.True(t, p.Snapshot().Connected)

		// Nothing watched changes: no more OnChange calls.
		_, before := rec.last()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		_, after := rec.last()
		assert.Equal(t, before, after)

		cancel()
		require.NoError(t, <-done)
		_ = tr.Close()
	})
}

// TestPollerAgentErrorsKeepConnected: an agent that refuses commands still
// answers, so it is connected; the refusal is the last error.
func TestPollerAgentErrorsKeepConnected(t *testing.T) {
	cfg := testGuest()
	cfg.Disabled = []string{guestagent.CmdGetOSInfo}
	srv := qgaserver.New(cfg)
	p := guestagent.NewPoller(guestagent.New(guestagent.NewPassthroughTransport(passthrough{srv}, "vm", guestagent.Options{}), guestagent.Options{}), guestagent.PollerOptions{})
	err := p.PollOnce(context.Background())
	require.ErrorIs(t, err, guestagent.ErrCommandDisabled)
	s := p.Snapshot()
	assert.True(t, s.Connected)
	assert.Empty(t, s.OSInfo.Name)
	assert.Equal(t, "guest-1", s.HostName)
	assert.Equal(t, []string{guestagent.CmdGetOSInfo}, guestagent.MissingRequiredCommands(guestagent.Info{SupportedCommands: s.SupportedCommands}))
}

func TestMissingRequiredCommands(t *testing.T) {
	all := func(disabled ...string) guestagent.Info {
		var info guestagent.Info
		for _, c := range guestagent.RequiredCommands() {
			enabled := true
			for _, d := range disabled {
				if d == c {
					enabled = false
				}
			}
			info.SupportedCommands = append(info.SupportedCommands, guestagent.CommandInfo{Name: c, Enabled: enabled})
		}
		return info
	}
	tests := []struct {
		name  string
		info  guestagent.Info
		extra []string
		want  []string
		ok    bool
	}{
		{name: "all there", info: all(), ok: true},
		{name: "one disabled", info: all("guest-shutdown"), want: []string{"guest-shutdown"}},
		{name: "extra missing", info: all(), extra: []string{"guest-ssh-add-authorized-keys"}, want: []string{"guest-ssh-add-authorized-keys"}},
		{name: "no list, old version", info: guestagent.Info{Version: "4.2.0"}, want: guestagent.RequiredCommands(), ok: true},
		{name: "no list, unknown version", info: guestagent.Info{Version: "7.2.22"}, want: guestagent.RequiredCommands(), ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, guestagent.MissingRequiredCommands(tt.info, tt.extra...))
			assert.Equal(t, tt.ok, guestagent.AgentSupported(tt.info, tt.extra...))
		})
	}
}

func TestVersionSupported(t *testing.T) {
	tests := []struct {
		version  string
		patterns []string
		want     bool
	}{
		{"2.5.0", nil, true},
		{"5.1.0", nil, true},
		{"7.2.22", nil, false},
		{"", nil, false},
		{"7.2.22", []string{"7\\..*"}, true},
		{"7.2.22", []string{"("}, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, guestagent.VersionSupported(tt.version, tt.patterns...), "%q %q", tt.version, tt.patterns)
	}
}
