package simulation

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// procState is what a process of the multi-process mode is doing.
type procState int

const (
	procDown    procState = iota // not running (killed, or exited by itself)
	procRunning                  // running
	procStopped                  // frozen by SIGSTOP
)

func (s procState) String() string { return [...]string{"down", "running", "stopped"}[s] }

// proc is one `virtkit` process of the multi-process mode. Unlike a
// supervisor it does not restart a process that exits: an exit the
// simulation did not cause is reported (InvClusterExited).
type proc struct {
	name   string
	binary string
	args   []string
	log    string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	state  procState
	killed bool // the simulation killed the current incarnation
	starts int
	// unexpected records the exits the simulation did not cause.
	unexpected []string
}

func newProc(dir, binary, name string, args ...string) *proc {
	return &proc{name: name, binary: binary, args: args, log: filepath.Join(dir, name+".log")}
}

// start runs a new incarnation when none runs.
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != procDown {
		return nil
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	p.starts++
	fmt.Fprintf(f, "===== start %d at %s: virtkit %s\n", p.starts, time.Now().Format("15:04:05.000"), strings.Join(p.args, " "))
	cmd := exec.Command(p.binary, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	// The processes die with the test binary, whatever ends it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.state, p.killed = cmd, done, procRunning, false
	go p.wait(cmd, f, done)
	return nil
}

func (p *proc) wait(cmd *exec.Cmd, f *os.File, done chan struct{}) {
	err := cmd.Wait()
	how := "exit 0"
	if err != nil {
		how = err.Error()
	}
	fmt.Fprintf(f, "===== exited at %s: %s\n", time.Now().Format("15:04:05.000"), how)
	f.Close()
	p.mu.Lock()
	p.state = procDown
	if !p.killed {
		p.unexpected = append(p.unexpected, fmt.Sprintf("%s (run %d) exited by itself: %s", p.name, p.starts, how))
	}
	p.mu.Unlock()
	close(done)
}

// State reports whether the process runs, is frozen or is down.
func (p *proc) State() procState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// kill9 sends SIGKILL (a frozen process dies too) and waits until the
// process is gone.
func (p *proc) kill9(timeout time.Duration) error {
	p.mu.Lock()
	cmd, done, state := p.cmd, p.done, p.state
	if state == procDown {
		p.mu.Unlock()
		return nil
	}
	p.killed = true
	p.mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%s: SIGKILL: %w", p.name, err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s did not die within %s of SIGKILL", p.name, timeout)
	}
}

// signal sends SIGSTOP (from running) or SIGCONT (from stopped); a
// process in another state is left alone.
func (p *proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	from, to := procRunning, procStopped
	if sig == syscall.SIGCONT {
		from, to = procStopped, procRunning
	}
	if p.state != from {
		return nil
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%s: %v: %w", p.name, sig, err)
	}
	p.state = to
	return nil
}

// shutdown stops the process for good: SIGCONT when frozen, SIGTERM, and
// SIGKILL after timeout.
func (p *proc) shutdown(timeout time.Duration) {
	p.mu.Lock()
	cmd, done, state := p.cmd, p.done, p.state
	p.killed = true
	p.mu.Unlock()
	if state == procDown || cmd == nil {
		return
	}
	if state == procStopped {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
	}
}

// exits are the exits the simulation did not cause.
func (p *proc) exits() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.unexpected...)
}

// tail is the last n lines of the process's log (every incarnation).
func (p *proc) tail(n int) string {
	data, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
