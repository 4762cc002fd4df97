package realqemu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/migration/bench"
)

// The real guests a profile can run on (Options.Guest).
const (
	// GuestTiny is the busybox initramfs of hack/realstack/build-guest.sh
	// with its own dirtier (the default).
	GuestTiny = "tiny"
	// GuestDebian is the Debian 12 cloud image of
	// hack/realstack/build-cloud-image.sh (systemd, the real qemu-ga) with
	// Debian's stress-ng as the workload.
	GuestDebian = "debian"
)

const (
	// MinDebianMemoryMiB and MaxDebianMemoryMiB bound the Debian guest:
	// systemd and the cloud kernel want about 300 MiB; larger guests cost
	// too much under TCG.
	MinDebianMemoryMiB = 512
	MaxDebianMemoryMiB = 2048
	// DebianReserveMiB is guest memory stress-ng's working set leaves to
	// the kernel, systemd and the agent.
	DebianReserveMiB = 384
	// stressNG is Debian's stress-ng in the image.
	stressNG = "/usr/bin/stress-ng"
	// maxExecReply bounds the agent's guest-exec replies.
	maxExecReply = 4 << 10
)

// RealiseDebian maps profile i onto the Debian guest running
// `stress-ng --vm 1 --vm-keep --vm-method rand-set --vm-bytes W`: one
// worker that rewrites its working set W with random bytes, pass after
// pass (so page sampling sees every write too). A dirtyRate below W per
// second becomes --vm-hang H, a pause of H = round(W/rate) whole seconds
// after each pass: the average rate is then at most the profile's, with
// the writes in bursts. A rate of W per second or more runs stress-ng
// flat out, as fast as its vCPU writes. The profile's shape (uniform or
// sequential) is stress-ng's sequential pass either way.
func RealiseDebian(i int, p bench.Profile) (Guest, field.ErrorList) {
	path := field.NewPath("profiles").Index(i)
	g := Guest{Kind: GuestDebian}
	errs := realiseMemory(path, p, &g, guestLimits{
		what: "the Debian guest", minMiB: MinDebianMemoryMiB, maxMiB: MaxDebianMemoryMiB,
		reserveMiB: DebianReserveMiB, reserveFor: "its system",
		minWorkingSetMiB: 4, minWorkingSetWhy: "stress-ng's vm worker takes at least 4Mi",
	})
	// DirtyMiB is 0 for an idle guest.
	if g.DirtyMiB > 0 && g.DirtyMiBPerSec < g.DirtyMiB {
		g.HangSeconds = max(1, int(math.Round(float64(g.DirtyMiB)/float64(g.DirtyMiBPerSec))))
	}
	errs = append(errs, realiseCommon(path, p, &g)...)
	return g, errs
}

// StressArgs is the stress-ng command line of the Debian guest's
// workload (empty for an idle guest).
func (g Guest) StressArgs() []string {
	if g.DirtyMiBPerSec == 0 || g.DirtyMiB == 0 {
		return nil
	}
	args := []string{"--vm", "1", "--vm-bytes", strconv.Itoa(g.DirtyMiB) + "m", "--vm-keep",
		"--vm-method", "rand-set", "--vm-madvise", "nohugepage"}
	if g.HangSeconds > 0 {
		args = append(args, "--vm-hang", strconv.Itoa(g.HangSeconds))
	}
	return append(args, "--timeout", "1h", "--quiet")
}

// DebianDomainXML is the Debian guest as a TCG domain booting the cloud
// image's kernel and initrd directly, its root file system on disk (a raw
// copy of the image, shareable: both daemons run on one host and see the
// same file, which libvirt otherwise refuses to migrate without shared
// storage), cloud-init disabled (no data source: the benchmark needs only
// the agent), with the guest-agent channel.
func (g Guest) DebianDomainXML(name, kernel, initrd, disk string) string {
	return fmt.Sprintf(`<domain type='qemu'>
  <name>%s</name>
  <memory unit='MiB'>%d</memory>
  <currentMemory unit='MiB'>%d</currentMemory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>%s</kernel>
    <initrd>%s</initrd>
    <cmdline>console=ttyS0 root=LABEL=virtkit-root rw quiet panic=-1 cloud-init=disabled</cmdline>
  </os>
  <features><acpi/></features>
  <clock offset='utc'/>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw' cache='none'/>
      <source file='%s'/>
      <target dev='vda' bus='virtio'/>
      <shareable/>
    </disk>
    <channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel>
    <memballoon model='none'/>
  </devices>
</domain>`, xmlEscape(name), g.MemoryMiB, g.MemoryMiB, xmlEscape(kernel), xmlEscape(initrd), xmlEscape(disk))
}

// CloudImage is the Debian cloud image's files
// (hack/realstack/build-cloud-image.sh's output directory).
type CloudImage struct {
	Disk, Kernel, Initrd string
}

// CloudImageIn returns the image in dir, checking that its files exist.
// The paths are absolute: libvirt resolves them, not this process.
func CloudImageIn(dir string) (CloudImage, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return CloudImage{}, fmt.Errorf("the Debian cloud image: %w", err)
	}
	c := CloudImage{Disk: filepath.Join(dir, "disk.qcow2"), Kernel: filepath.Join(dir, "vmlinuz"), Initrd: filepath.Join(dir, "initrd.img")}
	for _, f := range []string{c.Disk, c.Kernel, c.Initrd} {
		if _, err := os.Stat(f); err != nil {
			return CloudImage{}, fmt.Errorf("the Debian cloud image: %w", err)
		}
	}
	return c, nil
}

// prepareDisk writes a raw copy of the image's disk for one run into
// scratch (world-traversable, so QEMU's user reaches it) and returns its
// path.
func prepareDisk(ctx context.Context, img CloudImage, scratch, name string) (string, error) {
	scratch, err := filepath.Abs(scratch)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(scratch, 0o755); err != nil {
		return "", err
	}
	disk := filepath.Join(scratch, name+".raw")
	_ = os.Remove(disk)
	out, err := exec.CommandContext(ctx, "qemu-img", "convert", "-f", "qcow2", "-O", "raw", img.Disk, disk).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("qemu-img convert %s: %w: %.300s", img.Disk, err, out)
	}
	if err := os.Chmod(disk, 0o644); err != nil {
		return "", err
	}
	return disk, nil
}

// startStress starts stress-ng in the guest through its agent
// (guest-exec) and checks a second later that it still runs.
func startStress(ctx context.Context, a hypervisor.AgentCommander, name string, args []string) error {
	cmd, err := json.Marshal(map[string]any{"execute": "guest-exec",
		"arguments": map[string]any{"path": stressNG, "arg": args, "capture-output": true}})
	if err != nil {
		return err
	}
	reply, err := a.AgentCommand(ctx, name, string(cmd))
	if err != nil {
		return fmt.Errorf("guest-exec stress-ng: %w", err)
	}
	var r struct {
		Return struct {
			PID *int `json:"pid"`
		} `json:"return"`
	}
	if len(reply) > maxExecReply || json.Unmarshal([]byte(reply), &r) != nil || r.Return.PID == nil {
		return fmt.Errorf("guest-exec stress-ng: reply %.80q: no pid", reply)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Second):
	}
	reply, err = a.AgentCommand(ctx, name, fmt.Sprintf(`{"execute":"guest-exec-status","arguments":{"pid":%d}}`, *r.Return.PID))
	if err != nil {
		return fmt.Errorf("guest-exec-status stress-ng: %w", err)
	}
	var st struct {
		Return struct {
			Exited   bool   `json:"exited"`
			ExitCode *int   `json:"exitcode"`
			ErrData  string `json:"err-data"`
		} `json:"return"`
	}
	if len(reply) > maxExecReply || json.Unmarshal([]byte(reply), &st) != nil {
		return fmt.Errorf("guest-exec-status stress-ng: reply %.80q", reply)
	}
	if st.Return.Exited {
		code := -1
		if st.Return.ExitCode != nil {
			code = *st.Return.ExitCode
		}
		return fmt.Errorf("stress-ng %v exited at once with status %d (stderr, base64: %.200s): %w", args, code, st.Return.ErrData, errStressExited)
	}
	return nil
}

var errStressExited = errors.New("the guest's workload did not start")
