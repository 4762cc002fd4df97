package libvirttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/internal/testenv"
)

const (
	// TestURI is libvirt's in-process test driver: no daemon, no root.
	TestURI = "test:///default"
	// SourceURI is libvirtd instance A, the host's normal system daemon.
	SourceURI = "qemu:///system"
	// PeerURI is libvirtd instance B (own mount namespace and host UUID),
	// the migration target, as both the tests and A's daemon reach it.
	PeerURI = "qemu+tcp://127.0.0.1:16510/system"

	// sourceSocket and peerAddr are what RequireStack probes.
	sourceSocket = "/run/libvirt/libvirt-sock"
	peerAddr     = "127.0.0.1:16510"

	howTo = "run as root: hack/realstack/install.sh && hack/realstack/build-guest.sh && hack/realstack/libvirtd.sh start"
)

// TestDomainXML is a minimal domain for the test driver.
func TestDomainXML(name string) string {
	return fmt.Sprintf(`<domain type='test'>
  <name>%s</name>
  <memory unit='MiB'>128</memory>
  <currentMemory unit='MiB'>128</currentMemory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64'>hvm</type></os>
</domain>`, xmlEscape(name))
}

// Guest is the tiny guest built by hack/realstack/build-guest.sh.
type Guest struct {
	Kernel    string
	Initramfs string
}

// FindGuest locates the guest: $VIRTKIT_GUEST_DIR, else build/guest under
// the module root (found by walking up from the working directory).
func FindGuest() (Guest, error) {
	dir := os.Getenv("VIRTKIT_GUEST_DIR")
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return Guest{}, err
		}
		dir = filepath.Join(root, "build", "guest")
	}
	g := Guest{Kernel: filepath.Join(dir, "vmlinuz"), Initramfs: filepath.Join(dir, "initramfs.gz")}
	for _, f := range []string{g.Kernel, g.Initramfs} {
		if _, err := os.Stat(f); err != nil {
			return Guest{}, fmt.Errorf("tiny guest: %w", err)
		}
	}
	return g, nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// GuestOptions shape one guest.
type GuestOptions struct {
	// MemoryMiB is the guest's memory; 0 means 128 (the cloud kernel
	// needs at least 80).
	MemoryMiB int
	// VCPUs; 0 means 1.
	VCPUs int
	// DirtyMiBPerSec > 0 makes the guest dirty memory from boot at that
	// rate (kernel parameter dirty_mb_s) over DirtyMiB (0 means 48).
	DirtyMiBPerSec int
	DirtyMiB       int
}

// DomainXML is a TCG domain (type='qemu': nested KVM is unusably slow here)
// that boots the guest directly, with the guest-agent channel, a virtio
// balloon reporting stats every second, ACPI for graceful shutdown and a
// serial console logged to /var/log/libvirt/qemu/NAME-serial.log.
func (g Guest) DomainXML(name string, opts GuestOptions) string {
	if opts.MemoryMiB <= 0 {
		opts.MemoryMiB = 128
	}
	if opts.VCPUs <= 0 {
		opts.VCPUs = 1
	}
	cmdline := KernelArgs(opts)
	n := xmlEscape(name)
	return fmt.Sprintf(`<domain type='qemu'>
  <name>%s</name>
  <memory unit='MiB'>%d</memory>
  <currentMemory unit='MiB'>%d</currentMemory>
  <vcpu>%d</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>%s</kernel>
    <initrd>%s</initrd>
    <cmdline>%s</cmdline>
  </os>
  <features><acpi/></features>
  <clock offset='utc'/>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <serial type='pty'>
      <log file='/var/log/libvirt/qemu/%s-serial.log' append='off'/>
      <target port='0'/>
    </serial>
    <console type='pty'><target type='serial' port='0'/></console>
    <channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel>
    <memballoon model='virtio'><stats period='1'/></memballoon>
  </devices>
</domain>`, n, opts.MemoryMiB, opts.MemoryMiB, opts.VCPUs,
		xmlEscape(g.Kernel), xmlEscape(g.Initramfs), cmdline, n)
}

// KernelArgs is the guest's kernel command line for opts: serial console,
// quiet boot (serial output is slow under TCG), reboot-free panics and the
// dirtier's parameters. Callers that build their own domain (a VMI's
// firmware.kernelBoot.kernelArgs) use it to get the same guest.
func KernelArgs(opts GuestOptions) string {
	args := "console=ttyS0 quiet panic=-1"
	if opts.DirtyMiBPerSec > 0 {
		size := opts.DirtyMiB
		if size <= 0 {
			size = 48
		}
		args += fmt.Sprintf(" dirty_mb_s=%d dirty_mb=%d", opts.DirtyMiBPerSec, size)
	}
	return args
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "'", "&apos;", `"`, "&quot;").Replace(s)
}

// RequireStack checks that the guest is built and both daemons listen;
// otherwise it skips the test with how to start them (fails under
// VIRTKIT_STRICT=1). It returns the guest.
func RequireStack(t testing.TB) Guest {
	t.Helper()
	g, err := FindGuest()
	if err != nil {
		testenv.Unavailable(t, fmt.Sprintf("%v; %s", err, howTo))
		return Guest{}
	}
	for _, probe := range []struct{ network, addr, what string }{
		{"unix", sourceSocket, "libvirtd A (" + SourceURI + ")"},
		{"tcp", peerAddr, "libvirtd B (" + PeerURI + ")"},
	} {
		c, err := net.DialTimeout(probe.network, probe.addr, time.Second)
		if err != nil {
			testenv.Unavailable(t, fmt.Sprintf("%s not listening: %v; %s", probe.what, err, howTo))
			return Guest{}
		}
		_ = c.Close()
	}
	return g
}

// MigrateURI returns a migration data URI on a free local port, where the
// destination QEMU will listen.
func MigrateURI(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pick a migration port: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return "tcp://127.0.0.1:" + strconv.Itoa(port)
}

// WaitAgent pings the guest agent of domain until it answers or ctx ends.
// Only ErrAgentUnavailable (not connected yet) is retried.
func WaitAgent(ctx context.Context, a hypervisor.AgentCommander, domain string) error {
	delay := 100 * time.Millisecond
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := a.AgentCommand(cctx, domain, `{"execute":"guest-ping"}`)
		cancel()
		if err == nil {
			return nil
		}
		if !errors.Is(err, hypervisor.ErrAgentUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("guest agent of %s: %w (last error: %w)", domain, ctx.Err(), err)
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// StartDirtier starts the guest's memory dirtier through the agent's
// guest-exec: mibPerSec MiB/s of distinct pages over a working set of mib
// MiB, random data, until the guest stops.
func StartDirtier(ctx context.Context, a hypervisor.AgentCommander, domain string, mibPerSec, mib int) error {
	cmd, err := json.Marshal(map[string]any{
		"execute": "guest-exec",
		"arguments": map[string]any{
			"path": "/bin/dirtier",
			"arg":  []string{strconv.Itoa(mibPerSec), strconv.Itoa(mib)},
		},
	})
	if err != nil {
		return err
	}
	reply, err := a.AgentCommand(ctx, domain, string(cmd))
	if err != nil {
		return fmt.Errorf("start dirtier in %s: %w", domain, err)
	}
	var r struct {
		Return struct {
			PID *int `json:"pid"`
		} `json:"return"`
	}
	if err := json.Unmarshal([]byte(reply), &r); err != nil || r.Return.PID == nil {
		return fmt.Errorf("start dirtier in %s: unexpected reply %q", domain, reply)
	}
	return nil
}

// DirtyMemory returns a hypervisortest-style hook that waits for the agent
// (up to timeout) and starts the dirtier in the named guest.
func DirtyMemory(a hypervisor.AgentCommander, timeout time.Duration, mibPerSec, mib int) func(t *testing.T, name string) {
	return func(t *testing.T, name string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := WaitAgent(ctx, a, name); err != nil {
			t.Fatalf("dirty memory: %v", err)
		}
		if err := StartDirtier(ctx, a, name, mibPerSec, mib); err != nil {
			t.Fatalf("dirty memory: %v", err)
		}
	}
}

// QEMUWorkDir makes a temporary directory that QEMU, running as the
// libvirt-qemu user, can traverse (for runtime sockets and disks), removed
// when the test ends, and returns it with that user's uid and gid (for
// node.Options.RuntimeDirOwner).
func QEMUWorkDir(t testing.TB, prefix string) (dir string, uid, gid int) {
	t.Helper()
	qemu, err := user.Lookup("libvirt-qemu")
	if err != nil {
		testenv.Unavailable(t, "no libvirt-qemu user: install Debian libvirt-daemon-system ("+err.Error()+")")
	}
	uid, _ = strconv.Atoi(qemu.Uid)
	gid, _ = strconv.Atoi(qemu.Gid)
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatalf("work dir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("work dir: %v", err)
	}
	return dir, uid, gid
}
