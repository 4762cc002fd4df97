//go:build faults

package faults

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/virtkit/virtkit/internal/proctest"
)

// restartDelay is how long the supervisor waits before restarting a
// process that exited on its own (like systemd's RestartSec).
const restartDelay = 500 * time.Millisecond

// procState is what a supervised process is doing.
type procState int

const (
	procDown    procState = iota // not running (killed and held, or exited and about to restart)
	procRunning                  // running
	procStopped                  // frozen by SIGSTOP
)

func (s procState) String() string {
	return [...]string{"down", "running", "stopped"}[s]
}

// vproc is one supervised `virtkit` process: when it exits on its own it
// is restarted after restartDelay, as systemd or a DaemonSet would, unless
// the suite killed it with hold.
type vproc struct {
	name string
	args []string
	log  string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when the current incarnation exited
	state   procState
	held    bool // do not restart
	closing bool
	starts  int
	exits   []string // how each incarnation ended
}

func newVProc(dir, name string, args ...string) *vproc {
	return &vproc{name: name, args: args, log: filepath.Join(dir, name+".log")}
}

// start runs a new incarnation. The caller holds no lock.
func (p *vproc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.startLocked()
}

func (p *vproc) startLocked() error {
	if p.closing || p.state != procDown {
		return nil
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	p.starts++
	fmt.Fprintf(f, "===== start %d at %s: virtkit %s\n", p.starts, time.Now().Format("15:04:05.000"), strings.Join(p.args, " "))
	cmd := exec.Command(binary, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.state, p.held = cmd, done, procRunning, false
	go p.wait(cmd, f, done)
	return nil
}

// wait reaps an incarnation and restarts the process unless it is held.
func (p *vproc) wait(cmd *exec.Cmd, f *os.File, done chan struct{}) {
	err := cmd.Wait()
	how := "exit 0"
	if err != nil {
		how = err.Error()
	}
	fmt.Fprintf(f, "===== exited at %s: %s\n", time.Now().Format("15:04:05.000"), how)
	f.Close()
	p.mu.Lock()
	p.state = procDown
	p.exits = append(p.exits, how)
	restart := !p.held && !p.closing
	p.mu.Unlock()
	close(done)
	if restart {
		time.AfterFunc(restartDelay, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if !p.held {
				_ = p.startLocked()
			}
		})
	}
}

// State reports whether the process runs, is stopped or is down.
func (p *vproc) State() procState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// kill9 sends SIGKILL and waits until the process is gone. With hold the
// supervisor does not restart it until release.
func (p *vproc) kill9(t testing.TB, hold bool) {
	t.Helper()
	p.mu.Lock()
	cmd, done, state := p.cmd, p.done, p.state
	if hold {
		p.held = true
	}
	p.mu.Unlock()
	if state == procDown || cmd == nil {
		t.Fatalf("%s: kill -9 of a process that is not running", p.name)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("%s: SIGKILL: %v", p.name, err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not die after SIGKILL", p.name)
	}
}

// release starts a held process again.
func (p *vproc) release(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	p.held = false
	err := p.startLocked()
	p.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
}

// stop freezes the process with SIGSTOP. The state changes before the
// signal: the detector stops counting the process's guests no later than
// they stop executing.
func (p *vproc) stop(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != procRunning {
		t.Fatalf("%s: SIGSTOP of a process that is %s", p.name, p.state)
	}
	p.state = procStopped
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("%s: SIGSTOP: %v", p.name, err)
	}
}

// cont resumes a stopped process with SIGCONT. The state changes before
// the signal: the detector counts the guests again no later than they run.
func (p *vproc) cont(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != procStopped {
		t.Fatalf("%s: SIGCONT of a process that is %s", p.name, p.state)
	}
	p.state = procRunning
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("%s: SIGCONT: %v", p.name, err)
	}
}

// shutdown stops the process for good: SIGCONT if frozen, SIGTERM, and
// SIGKILL after timeout. It reports whether the process had to be killed.
func (p *vproc) shutdown(timeout time.Duration) (killed bool) {
	p.mu.Lock()
	p.closing = true
	cmd, done, state := p.cmd, p.done, p.state
	p.mu.Unlock()
	if state == procDown || cmd == nil {
		return false
	}
	if state == procStopped {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return false
	case <-time.After(timeout):
		// SIGQUIT makes a Go process print every goroutine's stack to its
		// log before it exits: the hang's diagnosis.
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		return true
	}
}

// history says how often the process started and how each run ended.
func (p *vproc) history() (starts int, exits []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts, append([]string(nil), p.exits...)
}

func (p *vproc) logText() string {
	data, _ := os.ReadFile(p.log)
	return string(data)
}

// logHas reports whether the process logged a line containing all parts.
func (p *vproc) logHas(parts ...string) bool { return proctest.LogHas(p.logText(), parts...) }
