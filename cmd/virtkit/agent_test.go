package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/guestagent/qgaserver"
)

// agentTestSocket serves a simulated guest on a unix socket.
func agentTestSocket(t *testing.T, srv *qgaserver.Server) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "vkagent")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "qga.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	t.Cleanup(func() { cancel(); <-done })
	return sock
}

func runAgentCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"agent"}, args...))
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func TestAgentCmd(t *testing.T) {
	cfg := qgaserver.LinuxGuest("web-1", "52:54:00:ab:cd:ef", "10.0.0.7")
	cfg.Version = "8.2.0"
	cfg.Disabled = []string{guestagent.CmdShutdown}
	cfg.OSInfo.Name = "Evil\x1b[2JOS" // a hostile guest: text output must escape it
	cfg.Users = []guestagent.User{{User: "fedora", LoginTime: 1700000000.5}}
	cfg.Timezone = guestagent.Timezone{Zone: "CET", Offset: 3600}
	cfg.Clock = func() time.Time { return time.Unix(1700000000, 42).UTC() }
	sock := agentTestSocket(t, qgaserver.New(cfg))

	tests := []struct {
		args []string
		want string
	}{
		{[]string{"ping"}, "ok\n"},
		{[]string{"ping", "-o", "json"}, "{}\n"},
		{[]string{"hostname"}, "web-1\n"},
		{[]string{"hostname", "--output", "json"}, "{\n  \"host-name\": \"web-1\"\n}\n"},
		{[]string{"timezone"}, "CET +0100\n"},
		{[]string{"timezone", "-o", "json"}, "{\n  \"zone\": \"CET\",\n  \"offset\": 3600\n}\n"},
		{[]string{"time"}, "2023-11-14T22:13:20.000000042Z\n"},
		{[]string{"time", "-o", "json"}, "1700000000000000042\n"},
		{[]string{"users"}, "USER    DOMAIN  LOGIN\nfedora          2023-11-14T22:13:20Z\n"},
		{[]string{"users", "-o", "json"}, "[\n  {\n    \"user\": \"fedora\",\n    \"login-time\": 1700000000.5\n  }\n]\n"},
		{[]string{"fsinfo"}, "MOUNTPOINT  TYPE  DEVICE  USED        TOTAL\n/           ext4  vda1    1073741824  10737418240\n"},
		{[]string{"interfaces"}, "NAME  MAC                ADDRESSES\nlo    00:00:00:00:00:00  127.0.0.1/8,::1/128\neth0  52:54:00:ab:cd:ef  10.0.0.7/24\n"},
		{[]string{"interfaces", "-o", "json"}, `[
  {
    "name": "lo",
    "hardware-address": "00:00:00:00:00:00",
    "ip-addresses": [
      {
        "ip-address-type": "ipv4",
        "ip-address": "127.0.0.1",
        "prefix": 8
      },
      {
        "ip-address-type": "ipv6",
        "ip-address": "::1",
        "prefix": 128
      }
    ]
  },
  {
    "name": "eth0",
    "hardware-address": "52:54:00:ab:cd:ef",
    "ip-addresses": [
      {
        "ip-address-type": "ipv4",
        "ip-address": "10.0.0.7",
        "prefix": 24
      }
    ]
  }
]
`},
		{[]string{"osinfo"}, "name:           Evil\uFFFD[2JOS\npretty-name:    Fedora Linux 40 (Cloud Edition)\nid:             fedora\n" +
			"version:        40 (Cloud Edition)\nversion-id:     40\nvariant:        Cloud Edition\n" +
			"kernel-release: 6.8.5-301.fc40.x86_64\nkernel-version: #1 SMP PREEMPT_DYNAMIC Thu Apr 11 20:00:10 UTC 2024\nmachine:        x86_64\n"},
	}
	for _, tt := range tests {
		t.Run(tt.args[0]+" "+tt.args[len(tt.args)-1], func(t *testing.T) {
			out, err := runAgentCmd(t, append(tt.args, "--socket", sock)...)
			require.NoError(t, err)
			assert.Equal(t, tt.want, out)
		})
	}

	t.Run("info", func(t *testing.T) {
		out, err := runAgentCmd(t, "info", "--socket", sock)
		require.NoError(t, err)
		assert.Contains(t, out, "version: 8.2.0\nmissing required commands: guest-shutdown\nCOMMAND")
		assert.Contains(t, out, "guest-shutdown                false\n")
		assert.Contains(t, out, "guest-ping                    true\n")
	})
	t.Run("osinfo json keeps the guest's bytes, escaped", func(t *testing.T) {
		out, err := runAgentCmd(t, "osinfo", "-o", "json", "--socket", sock)
		require.NoError(t, err)
		assert.Contains(t, out, `"name": "Evil\u001b[2JOS"`)
		assert.Contains(t, out, `"pretty-name": "Fedora Linux 40 (Cloud Edition)"`)
	})
}

func TestAgentCmdErrors(t *testing.T) {
	silent := qgaserver.New(qgaserver.Config{Fault: qgaserver.Fault{Mode: qgaserver.FaultSilent}})
	silentSock := agentTestSocket(t, silent)
	okSock := agentTestSocket(t, qgaserver.New(qgaserver.Config{}))
	tests := []struct {
		name    string
		args    []string
		wantErr error
		wantMsg string
	}{
		{name: "no socket", args: []string{"ping"}, wantMsg: "--socket: required"},
		{name: "unknown query", args: []string{"exec", "--socket", okSock}, wantMsg: `unknown query "exec"`},
		{name: "bad output", args: []string{"ping", "--socket", okSock, "-o", "yaml"}, wantMsg: `--output "yaml"`},
		{name: "bad timeout", args: []string{"ping", "--socket", okSock, "--timeout", "0s"}, wantMsg: "--timeout 0s"},
		{name: "no query", args: []string{"--socket", okSock}, wantMsg: "accepts 1 arg"},
		{name: "silent agent", args: []string{"ping", "--socket", silentSock, "--timeout", "200ms"}, wantErr: context.DeadlineExceeded},
		{name: "nothing listening", args: []string{"ping", "--socket", filepath.Join(t.TempDir(), "none.sock")}, wantErr: guestagent.ErrDisconnected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runAgentCmd(t, tt.args...)
			require.Error(t, err)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
			}
			assert.Contains(t, err.Error(), tt.wantMsg)
		})
	}
}
