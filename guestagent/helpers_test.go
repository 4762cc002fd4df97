package guestagent_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/guestagent/qgaserver"
	"github.com/virtkit/virtkit/internal/testenv"
)

// blockedOnHost are the commands that would act on the host when the real
// qemu-ga runs there as a stand-in guest (hack/realstack/README.md).
const blockedOnHost = "guest-shutdown,guest-suspend-disk,guest-suspend-ram,guest-suspend-hybrid," +
	"guest-set-time,guest-set-user-password,guest-fsfreeze-freeze,guest-exec,guest-file-open"

// qemuGA finds the real agent; Debian installs it in /usr/sbin, which a
// non-root PATH lacks.
func qemuGA(t testing.TB) string {
	t.Helper()
	const debianPath = "/usr/sbin/qemu-ga"
	if _, err := exec.LookPath("qemu-ga"); err != nil {
		if st, err := os.Stat(debianPath); err == nil && st.Mode()&0o111 != 0 {
			return debianPath
		}
	}
	return testenv.LookTool(t, "qemu-ga", "Debian qemu-guest-agent")
}

// startRealAgent runs qemu-ga -m unix-listen as a stand-in guest and returns
// its socket path. The agent is killed when the test ends.
func startRealAgent(t testing.TB) string {
	t.Helper()
	bin := qemuGA(t)
	// A short directory: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "qga")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "qga.sock")
	var logBuf lockedBuffer
	cmd := exec.Command(bin, "-m", "unix-listen", "-p", sock, "-t", dir, "-b", blockedOnHost)
	cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("qemu-ga output: %q", logBuf.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The socket file appears at bind(), before listen(): only a
		// successful connection shows the agent is ready.
		if conn, err := net.DialTimeout("unix", sock, time.Second); err == nil {
			_ = conn.Close()
			return sock
		}
		if time.Now().After(deadline) {
			t.Fatalf("qemu-ga did not create %s within 10s; output: %q", sock, logBuf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// pipeDialer connects to srv over an in-memory pipe; every dial starts a new
// server connection, as a reconnect to the virtio-serial socket would.
func pipeDialer(ctx context.Context, srv *qgaserver.Server) guestagent.Dialer {
	return func(context.Context) (net.Conn, error) {
		client, server := net.Pipe()
		go func() { _ = srv.ServeConn(ctx, server) }()
		return client, nil
	}
}

// serveUnix runs srv on a fresh unix socket and returns its path.
func serveUnix(t testing.TB, srv *qgaserver.Server) string {
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
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return sock
}

// passthrough is an AgentCommander backed by a qgaserver, the way the
// simulated hypervisor implements it.
type passthrough struct{ srv *qgaserver.Server }

func (p passthrough) AgentCommand(ctx context.Context, domain, command string) (string, error) {
	return p.srv.HandleCommand(ctx, command)
}

// testGuest is the simulated guest most tests use.
func testGuest() qgaserver.Config {
	cfg := qgaserver.LinuxGuest("guest-1", "52:54:00:12:34:56", "10.0.2.15")
	cfg.Users = []guestagent.User{{User: "fedora", LoginTime: 1700000000.5}}
	cfg.Timezone = guestagent.Timezone{Zone: "CET", Offset: 3600}
	cfg.Clock = func() time.Time { return time.Unix(1700000000, 123).UTC() }
	return cfg
}

func hostOSReleaseID(t *testing.T) string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "ID="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}
