package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

// virtiofs shares (devices.filesystems): before a domain with shares is
// defined, the agent writes each share's files into its directory and
// starts one virtiofsd per share on the socket the domain names, as
// KubeVirt's launcher runs one virtiofsd container per share. The
// processes outlive the reconcile that started them and are stopped when
// the domain is removed. Each records its pid next to its socket, so an
// agent that restarted stops the processes of a domain it removes, and
// sweeps those whose domain is gone when it starts.

// DefaultVirtiofsdPaths are where VirtiofsOptions.Binary is looked for when
// unset: Debian's QEMU 7.2 ships the C virtiofsd in qemu-system-common,
// newer distributions the Rust one in the virtiofsd package; one installed
// by hand (as hack/realstack/install.sh does beside a newer QEMU) goes in
// /usr/local/libexec.
var DefaultVirtiofsdPaths = []string{"/usr/lib/qemu/virtiofsd", "/usr/libexec/virtiofsd", "/usr/lib/virtiofsd", "/usr/local/libexec/virtiofsd"}

// ErrNoVirtiofsd marks a VMI with filesystems on a host without virtiofsd.
var ErrNoVirtiofsd = errors.New("virtiofsd not found")

// VirtiofsOptions configure the virtiofsd processes of virtiofs shares.
type VirtiofsOptions struct {
	// Binary is virtiofsd's path; empty looks in DefaultVirtiofsdPaths.
	Binary string
	// StartTimeout bounds the wait for a share's socket; default 15 s.
	StartTimeout time.Duration
}

// virtiofsds tracks the virtiofsd processes this agent started, per domain.
type virtiofsds struct {
	mu   sync.Mutex
	byDo map[string][]*virtiofsd
	// adopted are pid files of live domains' virtiofsd processes that an
	// earlier agent started, per domain (see sweepShares).
	adopted map[string][]string
}

// shareDomainFile names the file in a VMI's virtiofs directory that
// records the domain the shares belong to.
const shareDomainFile = "domain"

type virtiofsd struct {
	share domain.Share
	cmd   *exec.Cmd
	done  chan struct{} // closed when the process has been reaped
}

func (o VirtiofsOptions) binary() (string, error) {
	if o.Binary != "" {
		if _, err := os.Stat(o.Binary); err != nil {
			return "", fmt.Errorf("%w: %v", ErrNoVirtiofsd, err)
		}
		return o.Binary, nil
	}
	for _, p := range DefaultVirtiofsdPaths {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w in %s (Debian: apt-get install qemu-system-common)", ErrNoVirtiofsd, strings.Join(DefaultVirtiofsdPaths, ", "))
}

// startShares writes the files of vmi's shares and starts their
// virtiofsd processes (again, when some run from an earlier attempt).
func (a *Agent) startShares(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string) error {
	if len(vmi.Spec.Domain.Devices.Filesystems) == 0 {
		return nil
	}
	shares, err := domain.Shares(ctx, vmi, a.opts.Domain)
	if err != nil {
		return err
	}
	if sb, ok := a.opts.Hypervisor.(virtiofsBackend); ok {
		return a.serveShares(ctx, sb, domName, shares)
	}
	bin, err := a.opts.Virtiofs.binary()
	if err != nil {
		return fmt.Errorf("spec.domain.devices.filesystems: %w", err)
	}
	a.stopShares(domName)
	dir := domain.VirtiofsDir(vmi, a.opts.Domain)
	a.stopStaleShares(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, shareDomainFile), []byte(domName), 0o644); err != nil {
		return err
	}
	var started []*virtiofsd
	for _, sh := range shares {
		p, err := a.startShare(ctx, bin, sh)
		if err != nil {
			for _, s := range started {
				s.stop(a.opts.Virtiofs.StartTimeout)
			}
			return fmt.Errorf("%s: virtiofsd for %q: %w", sh.Field, sh.Name, err)
		}
		started = append(started, p)
	}
	a.vfs.mu.Lock()
	if a.vfs.byDo == nil {
		a.vfs.byDo = map[string][]*virtiofsd{}
	}
	a.vfs.byDo[domName] = started
	a.vfs.mu.Unlock()
	a.log.Info("virtiofs shares started", "domain", domName, "shares", len(started))
	return nil
}

// writeShare replaces a share's directory with its files.
func writeShare(sh domain.Share) error {
	if err := os.RemoveAll(sh.Dir); err != nil {
		return err
	}
	if err := os.MkdirAll(sh.Dir, 0o755); err != nil {
		return err
	}
	for _, f := range sh.Files {
		if !filepath.IsLocal(f.Path) {
			return fmt.Errorf("file %q is not a relative path inside the share", f.Path)
		}
		p := filepath.Join(sh.Dir, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		// Kubernetes' default mode for projected files.
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (a *Agent) startShare(ctx context.Context, bin string, sh domain.Share) (*virtiofsd, error) {
	if err := writeShare(sh); err != nil {
		return nil, err
	}
	_ = os.Remove(sh.Socket)
	logf, err := os.Create(sh.Socket + ".log")
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	// The C virtiofsd sandboxes itself (mount, pid and net namespaces) and
	// serves one vhost-user client, exiting when it disconnects.
	cmd := exec.Command(bin, "--socket-path="+sh.Socket, "-o", "source="+sh.Dir, "-o", "cache=auto")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &virtiofsd{share: sh, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	if err := os.WriteFile(sh.Socket+".pid", []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		p.stop(time.Second)
		return nil, err
	}
	timeout := a.opts.Virtiofs.StartTimeout
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if _, err := os.Stat(sh.Socket); err == nil {
			break
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("exited before serving: %s", logTail(sh.Socket+".log"))
		case <-wctx.Done():
			p.stop(time.Second)
			return nil, fmt.Errorf("no socket after %v: %w", timeout, wctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	// QEMU connects as the runtime directory's owner.
	if o := a.opts.RuntimeDirOwner; o != nil {
		if err := os.Chown(sh.Socket, o.UID, o.GID); err != nil {
			p.stop(time.Second)
			return nil, err
		}
	}
	return p, nil
}

// stop ends the process (SIGTERM, then SIGKILL after grace) and reaps it.
func (p *virtiofsd) stop(grace time.Duration) {
	if grace <= 0 {
		grace = 5 * time.Second
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	_ = os.Remove(p.share.Socket + ".pid")
}

// stopShares stops the virtiofsd processes of a domain: those this agent
// started and, by their pid files, those an earlier agent started.
func (a *Agent) stopShares(domName string) {
	if sb, ok := a.opts.Hypervisor.(virtiofsBackend); ok {
		sb.StopVirtiofs(domName)
	}
	a.vfs.mu.Lock()
	ps := a.vfs.byDo[domName]
	delete(a.vfs.byDo, domName)
	adopted := a.vfs.adopted[domName]
	delete(a.vfs.adopted, domName)
	a.vfs.mu.Unlock()
	for _, p := range ps {
		p.stop(a.opts.Virtiofs.StartTimeout)
	}
	for _, pf := range adopted {
		killRecorded(pf)
	}
}

// stopStaleShares stops virtiofsd processes recorded under a runtime
// directory that this agent does not track (an earlier agent's).
func (a *Agent) stopStaleShares(runtimeDir string) {
	pids, _ := filepath.Glob(filepath.Join(runtimeDir, "virtiofs", "*.sock.pid"))
	for _, pf := range pids {
		killRecorded(pf)
	}
}

// killRecorded stops the process a pid file names when it still is the
// virtiofsd of that socket, and removes the file.
func killRecorded(pidFile string) {
	defer os.Remove(pidFile)
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	socket := strings.TrimSuffix(pidFile, ".pid")
	if err != nil || !bytes.Contains(cmdline, []byte("--socket-path="+socket+"\x00")) {
		return // gone, or another process now has the pid
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for range 50 {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// sweepShares runs when the agent starts: the virtiofsd processes an
// earlier agent left are stopped when their domain no longer runs, and
// adopted (stopped with the domain) when it does.
func (a *Agent) sweepShares(ctx context.Context) {
	root := a.opts.Domain.RuntimeDir
	if root == "" {
		root = domain.DefaultRuntimeDir
	}
	pids, _ := filepath.Glob(filepath.Join(root, "*", "virtiofs", "*.sock.pid"))
	if len(pids) == 0 {
		return
	}
	doms, err := a.opts.Hypervisor.List(ctx)
	if err != nil {
		a.log.Warn("virtiofs sweep: list domains", "err", err)
		return
	}
	live := map[string]bool{}
	for _, d := range doms {
		if d.State.IsActive() {
			live[d.Name] = true
		}
	}
	for _, pf := range pids {
		b, _ := os.ReadFile(filepath.Join(filepath.Dir(pf), shareDomainFile))
		name := string(b)
		if name != "" && live[name] {
			a.vfs.mu.Lock()
			if a.vfs.adopted == nil {
				a.vfs.adopted = map[string][]string{}
			}
			a.vfs.adopted[name] = append(a.vfs.adopted[name], pf)
			a.vfs.mu.Unlock()
			continue
		}
		a.log.Info("stopping a virtiofsd left by an earlier agent", "pidfile", pf)
		killRecorded(pf)
	}
}

// logTail is the end of a virtiofsd log, for errors (bounded).
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 1024 {
		b = b[len(b)-1024:]
	}
	return strings.TrimSpace(string(b))
}
