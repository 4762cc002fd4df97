package qgaserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/guestagent/qgaserver"
	"github.com/virtkit/virtkit/internal/testenv"
)

// rawConn sends raw request bytes and reads raw reply lines.
type rawConn struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dialRaw(t *testing.T, sock string) *rawConn {
	t.Helper()
	var conn net.Conn
	require.Eventually(t, func() bool {
		var err error
		conn, err = net.Dial("unix", sock)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	t.Cleanup(func() { _ = conn.Close() })
	return &rawConn{t: t, conn: conn, r: bufio.NewReader(conn)}
}

func (c *rawConn) send(s string) {
	c.t.Helper()
	require.NoError(c.t, c.conn.SetDeadline(time.Now().Add(5*time.Second)))
	_, err := c.conn.Write([]byte(s))
	require.NoError(c.t, err)
}

func (c *rawConn) line() []byte {
	c.t.Helper()
	b, err := c.r.ReadBytes('\n')
	require.NoError(c.t, err)
	return b
}

// normalize keeps what a client may rely on: the 0xFF prefix, return
// values' JSON kinds (or the sync id itself), error classes and the id.
func normalize(t *testing.T, line []byte) map[string]any {
	t.Helper()
	out := map[string]any{}
	if len(line) > 0 && line[0] == 0xFF {
		out["marker"] = true
		line = line[1:]
	}
	var v map[string]any
	require.NoError(t, json.Unmarshal(line, &v), "%q", line)
	if r, ok := v["return"]; ok {
		switch r := r.(type) {
		case float64:
			out["return"] = r
		default:
			out["return-kind"] = kind(r)
		}
	}
	if e, ok := v["error"].(map[string]any); ok {
		out["class"] = e["class"]
	}
	if id, ok := v["id"]; ok {
		out["id"] = id
	}
	return out
}

func kind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case nil:
		return "null"
	}
	return "other"
}

func startRealAgent(t *testing.T) string {
	t.Helper()
	bin := "/usr/sbin/qemu-ga"
	if _, err := os.Stat(bin); err != nil {
		bin = testenv.LookTool(t, "qemu-ga", "Debian qemu-guest-agent")
	}
	dir, err := os.MkdirTemp("", "qga")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "qga.sock")
	cmd := exec.Command(bin, "-m", "unix-listen", "-p", sock, "-t", dir, "-b",
		"guest-shutdown,guest-suspend-disk,guest-suspend-ram,guest-suspend-hybrid,guest-set-time,"+
			"guest-set-user-password,guest-fsfreeze-freeze,guest-exec,guest-file-open")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.Eventually(t, func() bool { _, err := os.Stat(sock); return err == nil }, 10*time.Second, 10*time.Millisecond)
	return sock
}

func serve(t *testing.T, srv *qgaserver.Server) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "qgas")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "qga.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	return sock
}

// TestWireCompatibleWithQemuGA sends the same bytes to the real qemu-ga and
// to the server and compares what a client can rely on.
func TestWireCompatibleWithQemuGA(t *testing.T) {
	realSock := startRealAgent(t)
	srv := qgaserver.New(qgaserver.Config{Disabled: []string{"guest-shutdown", "guest-fsfreeze-freeze"}})
	fakeSock := serve(t, srv)

	exchanges := []struct {
		name    string
		request string
		lines   int
	}{
		{"sync-delimited after flush", "\xff{\"execute\":\"guest-sync-delimited\",\"arguments\":{\"id\":4242}}\n", 2},
		{"sync", `{"execute":"guest-sync","arguments":{"id":17}}` + "\n", 1},
		{"ping with id", `{"execute":"guest-ping","id":"abc"}` + "\n", 1},
		{"info", `{"execute":"guest-info"}` + "\n", 1},
		{"osinfo", `{"execute":"guest-get-osinfo","id":7}` + "\n", 1},
		{"host name", `{"execute":"guest-get-host-name"}` + "\n", 1},
		{"users", `{"execute":"guest-get-users"}` + "\n", 1},
		{"fsinfo", `{"execute":"guest-get-fsinfo"}` + "\n", 1},
		{"interfaces", `{"execute":"guest-network-get-interfaces"}` + "\n", 1},
		{"timezone", `{"execute":"guest-get-timezone"}` + "\n", 1},
		{"vcpus", `{"execute":"guest-get-vcpus"}` + "\n", 1},
		{"disks", `{"execute":"guest-get-disks"}` + "\n", 1},
		{"fsfreeze status", `{"execute":"guest-fsfreeze-status"}` + "\n", 1},
		{"thaw", `{"execute":"guest-fsfreeze-thaw"}` + "\n", 1},
		{"disabled freeze", `{"execute":"guest-fsfreeze-freeze","id":1}` + "\n", 1},
		{"disabled shutdown", `{"execute":"guest-shutdown"}` + "\n", 1},
		{"unknown", `{"execute":"guest-virtkit-no-such-command"}` + "\n", 1},
		{"unexpected argument", `{"execute":"guest-ping","arguments":{"x":1}}` + "\n", 1},
		{"garbage", "garbage\n", 1},
		{"not an object", "[1,2]\n", 1},
		{"two on one line", `{"execute":"guest-ping"}{"execute":"guest-sync","arguments":{"id":3}}` + "\n", 2},
		{"half request then flush", "{\"execute\":\"guest-ping\"\xff{\"execute\":\"guest-sync-delimited\",\"arguments\":{\"id\":5}}\n", 2},
	}
	real, fake := dialRaw(t, realSock), dialRaw(t, fakeSock)
	for _, ex := range exchanges {
		t.Run(ex.name, func(t *testing.T) {
			real.send(ex.request)
			fake.send(ex.request)
			for range ex.lines {
				want, got := normalize(t, real.line()), normalize(t, fake.line())
				assert.Equal(t, want, got)
			}
		})
	}
}

func TestHandleCommand(t *testing.T) {
	var shutdownMode string
	cfg := qgaserver.LinuxGuest("vm-a", "52:54:00:00:00:01", "10.0.0.5")
	cfg.OnShutdown = func(mode string) error { shutdownMode = mode; return nil }
	srv := qgaserver.New(cfg)
	ctx := context.Background()

	tests := []struct {
		name    string
		request string
		want    string
	}{
		{"host name", `{"execute":"guest-get-host-name"}`, `{"return":{"host-name":"vm-a"}}`},
		{"id echoed", `{"execute":"guest-ping","id":"x"}`, `{"return":{},"id":"x"}`},
		{"sync-delimited has no marker through libvirt", `{"execute":"guest-sync-delimited","arguments":{"id":9}}`, `{"return":9}`},
		{"unknown", `{"execute":"guest-nope"}`, `{"error":{"class":"CommandNotFound","desc":"The command guest-nope has not been found"}}`},
		{"bad mode", `{"execute":"guest-shutdown","arguments":{"mode":"explode"}}`, `{"error":{"class":"GenericError","desc":"Invalid parameter 'explode'"}}`},
		{"shutdown sends no reply", `{"execute":"guest-shutdown","arguments":{"mode":"reboot"}}`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := srv.HandleCommand(ctx, tt.request)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	assert.Equal(t, "reboot", shutdownMode)
	assert.Equal(t, 2, srv.Calls(guestagent.CmdShutdown), "the refused and the accepted one")
}

func TestHandleCommandFaults(t *testing.T) {
	srv := qgaserver.New(qgaserver.Config{HostName: "h"})
	req := `{"execute":"guest-get-host-name"}`

	srv.SetFault(qgaserver.Fault{Mode: qgaserver.FaultSilent, Count: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := srv.HandleCommand(ctx, req)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	srv.SetFault(qgaserver.Fault{Mode: qgaserver.FaultDisconnect, Count: 1})
	_, err = srv.HandleCommand(context.Background(), req)
	require.ErrorIs(t, err, guestagent.ErrDisconnected)

	srv.SetFault(qgaserver.Fault{Mode: qgaserver.FaultGarbage, Size: 10, Count: 1})
	got, err := srv.HandleCommand(context.Background(), req)
	require.NoError(t, err)
	assert.False(t, json.Valid([]byte(got)))

	srv.SetFault(qgaserver.Fault{Mode: qgaserver.FaultOversized, Size: 1 << 20, Count: 1})
	got, err = srv.HandleCommand(context.Background(), req)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(got), 1<<20-1)

	// Count spent: back to normal, and a command filter leaves others alone.
	srv.SetFault(qgaserver.Fault{Mode: qgaserver.FaultDisconnect, Commands: []string{"guest-ping"}})
	got, err = srv.HandleCommand(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, `{"return":{"host-name":"h"}}`, got)
	_, err = srv.HandleCommand(context.Background(), `{"execute":"guest-ping"}`)
	require.True(t, errors.Is(err, guestagent.ErrDisconnected))
}

func TestFreezeThaw(t *testing.T) {
	cfg := qgaserver.LinuxGuest("vm", "", "")
	srv := qgaserver.New(cfg)
	c := guestagent.New(guestagent.NewPassthroughTransport(commander{srv}, "vm", guestagent.Options{}), guestagent.Options{})
	ctx := context.Background()
	n, err := c.FSFreeze(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, guestagent.FreezeStatusFrozen, srv.FreezeStatus())
	_, err = c.FSFreeze(ctx)
	require.ErrorIs(t, err, guestagent.ErrGenericError, "already frozen")
	n, err = c.FSThaw(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	st, err := c.FSFreezeStatus(ctx)
	require.NoError(t, err)
	assert.Equal(t, guestagent.FreezeStatusThawed, st)
}

func TestShutdownOverStream(t *testing.T) {
	modes := make(chan string, 3)
	cfg := qgaserver.Config{OnShutdown: func(mode string) error {
		if mode == "halt" {
			return errors.New("halt refused")
		}
		modes <- mode
		return nil
	}}
	srv := qgaserver.New(cfg)
	tr := guestagent.DialUnix(serve(t, srv), guestagent.Options{})
	defer func() { _ = tr.Close() }()
	c := guestagent.New(tr, guestagent.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.Shutdown(ctx, guestagent.ShutdownReboot))
	assert.Equal(t, "reboot", <-modes)
	err := c.Shutdown(ctx, guestagent.ShutdownHalt)
	require.ErrorIs(t, err, guestagent.ErrGenericError)
	assert.Contains(t, err.Error(), "halt refused")
	require.NoError(t, c.Ping(ctx), "the stream is usable after a one-way command")
}

func TestFaultModeString(t *testing.T) {
	assert.Equal(t, "wrong-sync-id", qgaserver.FaultWrongSyncID.String())
	assert.Equal(t, "FaultMode(42)", qgaserver.FaultMode(42).String())
}

type commander struct{ srv *qgaserver.Server }

func (c commander) AgentCommand(ctx context.Context, _ string, cmd string) (string, error) {
	return c.srv.HandleCommand(ctx, cmd)
}

var _ guestagent.AgentCommander = commander{}

// TestRepliesAreASCII: like qemu-ga, non-ASCII is escaped, so a guest's own
// strings can never forge the 0xFF sync marker.
func TestRepliesAreASCII(t *testing.T) {
	srv := qgaserver.New(qgaserver.Config{HostName: "h\xff\u00e9\U0001F600"})
	got, err := srv.HandleCommand(context.Background(), `{"execute":"guest-get-host-name"}`)
	require.NoError(t, err)
	assert.Equal(t, `{"return":{"host-name":"h\ufffd\u00e9\ud83d\ude00"}}`, got)
	var v guestagent.HostNameReply
	require.NoError(t, json.Unmarshal([]byte(got)[len(`{"return":`):len(got)-1], &v))
	assert.Equal(t, "h\uFFFD\u00e9\U0001F600", v.HostName)
}
