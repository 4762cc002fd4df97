package etcdproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/virtkit/virtkit"
)

// BinaryEnv names the environment variable that overrides where
// [FindBinary] looks for the etcd server.
const BinaryEnv = "VIRTKIT_ETCD_BIN"

// DefaultReadyTimeout bounds how long a start waits for the server to
// answer /health when [Options.ReadyTimeout] is zero.
const DefaultReadyTimeout = 60 * time.Second

var (
	// errInvalidOptions wraps every configuration error of this package;
	// it matches virtkit.ErrInvalidOptions.
	errInvalidOptions = virtkit.InvalidOptions("etcd process")
	// ErrNotFound is returned by [FindBinary] when no etcd server binary
	// is available.
	ErrNotFound = errors.New("etcdproc: etcd server binary not found")
	// ErrNotReady wraps a server that exited or did not become healthy in
	// time.
	ErrNotReady = errors.New("etcdproc: etcd server not ready")
	// ErrRunning is returned by [Server.Restart] while the server runs.
	ErrRunning = errors.New("etcdproc: etcd server still running")
)

// Options configure a [Server]. Binary and Dir are required.
type Options struct {
	// Binary is the etcd server executable.
	Binary string
	// Dir is the member's data directory; it survives kills and restarts.
	Dir string
	// Name is the member name; default "etcdproc".
	Name string
	// LogFile receives the server's output (appended across restarts);
	// default discards it.
	LogFile string
	// ReadyTimeout bounds each start; default DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Fsync makes the server fsync its log and database. The default skips
	// fsync (etcd's --unsafe-no-fsync): a killed process loses nothing it
	// wrote, only a machine crash would, and tests are faster without it.
	Fsync bool
}

// Server is one etcd server process. Its methods are safe for concurrent
// use.
type Server struct {
	opts       Options
	clientAddr string
	peerAddr   string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd exited
}

// FindBinary returns the etcd server to use: $VIRTKIT_ETCD_BIN when set,
// else build/bin/etcd under moduleRoot, else etcd on $PATH.
func FindBinary(moduleRoot string) (string, error) {
	if p := os.Getenv(BinaryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: $%s: %w", ErrNotFound, BinaryEnv, err)
		}
		return p, nil
	}
	if moduleRoot != "" {
		p := filepath.Join(moduleRoot, "build", "bin", "etcd")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w: set $%s, run hack/etcd.sh (builds build/bin/etcd) or install etcd on $PATH", ErrNotFound, BinaryEnv)
}

// Version returns the first line of `etcd --version` ("etcd Version: X").
func Version(ctx context.Context, binary string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("etcdproc: %s --version: %w", binary, err)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line), nil
}

// Start picks two free loopback ports and starts the server, returning
// once it answers /health.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Binary == "" {
		return nil, fmt.Errorf("%w: Binary: required", errInvalidOptions)
	}
	if opts.Dir == "" {
		return nil, fmt.Errorf("%w: Dir: required", errInvalidOptions)
	}
	if opts.ReadyTimeout < 0 {
		return nil, fmt.Errorf("%w: ReadyTimeout: %v is negative", errInvalidOptions, opts.ReadyTimeout)
	}
	if opts.Name == "" {
		opts.Name = "etcdproc"
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	s := &Server{opts: opts}
	var lastErr error
	// A port found free can be taken before etcd binds it: try new ports.
	for range 3 {
		var err error
		if s.clientAddr, err = freeAddr(); err != nil {
			return nil, err
		}
		if s.peerAddr, err = freeAddr(); err != nil {
			return nil, err
		}
		if lastErr = s.start(ctx); lastErr == nil {
			return s, nil
		}
	}
	return nil, lastErr
}

// ClientAddr is the HOST:PORT clients connect to; it does not change across
// restarts.
func (s *Server) ClientAddr() string { return s.clientAddr }

// Endpoint is the client URL (http://HOST:PORT).
func (s *Server) Endpoint() string { return "http://" + s.clientAddr }

// PID is the running server's process id, 0 when it is not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.exited() {
		return 0
	}
	return s.cmd.Process.Pid
}

// Running reports whether the server process is alive.
func (s *Server) Running() bool { return s.PID() != 0 }

func (s *Server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (s *Server) Kill(ctx context.Context) error { return s.signal(ctx, syscall.SIGKILL) }

// Stop sends SIGTERM and waits for the process to exit; a server still
// running after ctx ends is killed.
func (s *Server) Stop(ctx context.Context) error {
	err := s.signal(ctx, syscall.SIGTERM)
	if err != nil && s.Running() {
		return s.Kill(context.WithoutCancel(ctx))
	}
	return err
}

func (s *Server) signal(ctx context.Context, sig syscall.Signal) error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("etcdproc: signal %v: %w", sig, err)
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("etcdproc: waiting for exit after %v: %w", sig, ctx.Err())
	}
}

// Restart starts the stopped or killed server again on the same data
// directory and ports, returning once it answers /health.
func (s *Server) Restart(ctx context.Context) error {
	if s.Running() {
		return ErrRunning
	}
	return s.start(ctx)
}

func (s *Server) start(ctx context.Context) error {
	client, peer := "http://"+s.clientAddr, "http://"+s.peerAddr
	args := []string{
		"--name", s.opts.Name,
		"--data-dir", s.opts.Dir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", s.opts.Name + "=" + peer,
		"--log-level", "warn",
	}
	if !s.opts.Fsync {
		args = append(args, "--unsafe-no-fsync")
	}
	var out io.Writer = io.Discard
	var logf *os.File
	if s.opts.LogFile != "" {
		f, err := os.OpenFile(s.opts.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("etcdproc: log file: %w", err)
		}
		logf, out = f, f
	}
	// Not CommandContext: the server must outlive the start call.
	cmd := exec.Command(s.opts.Binary, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		if logf != nil {
			_ = logf.Close()
		}
		return fmt.Errorf("etcdproc: start %s: %w", s.opts.Binary, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		if logf != nil {
			_ = logf.Close()
		}
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	if err := s.waitReady(ctx, done); err != nil {
		_ = cmd.Process.Kill()
		<-done
		return err
	}
	return nil
}

func (s *Server) waitReady(ctx context.Context, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.ReadyTimeout)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	url := "http://" + s.clientAddr + "/health"
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("etcdproc: %w", err)
		}
		resp, err := hc.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK && bytes.Contains(body, []byte(`"health":"true"`)) {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, bytes.TrimSpace(body))
		} else {
			last = err.Error()
		}
		select {
		case <-exited:
			return fmt.Errorf("%w: the process exited (last /health: %s)", ErrNotReady, last)
		case <-ctx.Done():
			return fmt.Errorf("%w: after %v (last /health: %s): %w", ErrNotReady, s.opts.ReadyTimeout, last, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freeAddr returns a loopback HOST:PORT that was free just now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("etcdproc: finding a free port: %w", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return "", fmt.Errorf("etcdproc: finding a free port: %w", err)
	}
	return addr, nil
}
