//go:build realstack

package domain_test

import (
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/internal/testenv"
)

// TestRealStackBoot builds the tiny guest's kernel-boot VMI with a
// cloud-init disk, an empty disk, a pod interface, rng and the default
// devices, starts it on the real libvirtd (qemu:///system, TCG) and waits
// for the real qemu-ga to answer through the channel the builder wired.
func TestRealStackBoot(t *testing.T) {
	virsh := testenv.LookTool(t, "virsh", "Debian libvirt-clients")
	guestDir := os.Getenv("GUEST_DIR")
	if guestDir == "" {
		guestDir = "../build/guest"
	}
	kernel, _ := filepath.Abs(filepath.Join(guestDir, "vmlinuz"))
	initrd, _ := filepath.Abs(filepath.Join(guestDir, "initramfs.gz"))
	for _, f := range []string{kernel, initrd} {
		if _, err := os.Stat(f); err != nil {
			testenv.Unavailable(t, "tiny guest missing ("+f+"); run hack/realstack/build-guest.sh")
		}
	}
	qemuUser, err := user.Lookup("libvirt-qemu")
	if err != nil {
		testenv.Unavailable(t, "no libvirt-qemu user: install Debian libvirt-daemon-system")
	}
	uid, _ := strconv.Atoi(qemuUser.Uid)
	gid, _ := strconv.Atoi(qemuUser.Gid)

	// QEMU (libvirt-qemu) must traverse the work and runtime directories.
	base, err := os.MkdirTemp("", "virtkit-domain-real-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o755))

	vmi := decodeVMI(t, "testdata/vmi/kernel-boot.yaml")
	vmi.Name = "domain-real-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	vmi.UID = ""
	vmi.Spec.Domain.Firmware.KernelBoot.KernelArgs = "console=ttyS0 quiet"
	vmi.Spec.Domain.Devices.Rng = &virtkit.Rng{}
	vmi.Spec.Networks = []virtkit.Network{{Name: "default", NetworkSource: virtkit.NetworkSource{Pod: &virtkit.PodNetwork{VMNetworkCIDR: "10.0.2.0/24"}}}}
	vmi.Spec.Domain.Devices.Interfaces = []virtkit.Interface{{Name: "default", InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Masquerade: &virtkit.InterfaceMasquerade{}}}}
	vmi.Spec.Volumes = []virtkit.Volume{
		{Name: "ci", VolumeSource: virtkit.VolumeSource{CloudInitNoCloud: &virtkit.CloudInitNoCloudSource{UserData: "#cloud-config\n"}}},
		{Name: "scratch", VolumeSource: virtkit.VolumeSource{EmptyDisk: &virtkit.EmptyDiskSource{Capacity: resource.MustParse("1Gi")}}},
	}
	vmi.Spec.Domain.Devices.Disks = []virtkit.Disk{
		{Name: "ci", DiskDevice: virtkit.DiskDevice{CDRom: &virtkit.CDRomTarget{Bus: virtkit.DiskBusSATA}}},
		{Name: "scratch", DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: virtkit.DiskBusVirtio}}},
	}
	// KubeVirt's layout: CPU hot-plug room (the LiveUpdate default), an
	// empty CD-ROM drive, and a disk with a dedicated IO thread next to the
	// shared one.
	vmi.Spec.Domain.CPU = &virtkit.CPU{Sockets: 1, Cores: 1, Threads: 1, MaxSockets: 4}
	guest, maxGuest := resource.MustParse("1Gi"), resource.MustParse("4Gi")
	vmi.Spec.Domain.Memory = &virtkit.Memory{Guest: &guest, MaxGuest: &maxGuest}
	vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks,
		virtkit.Disk{Name: "empty-drive", DiskDevice: virtkit.DiskDevice{CDRom: &virtkit.CDRomTarget{Bus: virtkit.DiskBusSATA}}},
		virtkit.Disk{Name: "fast", DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: virtkit.DiskBusVirtio}}, DedicatedIOThread: ptr(true)})
	vmi.Spec.Volumes = append(vmi.Spec.Volumes,
		virtkit.Volume{Name: "fast", VolumeSource: virtkit.VolumeSource{EmptyDisk: &virtkit.EmptyDiskSource{Capacity: resource.MustParse("64Mi")}}})
	opts := domain.Options{
		RuntimeDir: filepath.Join(base, "run"),
		VolumeResolver: &domain.DirResolver{Dir: filepath.Join(base, "work"), Create: true, Kernels: map[string]domain.HostKernel{
			"localhost/virtkit/tiny-guest:latest": {Kernel: kernel, Initrd: initrd},
		}},
	}
	doc, err := domain.BuildXML(vmi, opts)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(opts.RuntimeDir, 0o755))
	_, err = domain.MakeRuntimeDir(vmi, opts, uid, gid)
	require.NoError(t, err)
	require.NoError(t, filepath.Walk(filepath.Join(base, "work"), func(p string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() {
			err = os.Chmod(p, 0o755)
		}
		return err
	}))
	xmlFile := filepath.Join(base, "domain.xml")
	require.NoError(t, os.WriteFile(xmlFile, []byte(doc), 0o644))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, virsh, append([]string{"-c", "qemu:///system"}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := run("create", xmlFile) // transient: gone once destroyed
	require.NoError(t, err, "%s\n%s", out, doc)
	name := domain.DomainName(vmi)
	t.Cleanup(func() {
		// ctx is gone by now; the transient domain disappears on destroy.
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		out, err := exec.CommandContext(cctx, virsh, "-c", "qemu:///system", "destroy", name).CombinedOutput()
		if err != nil {
			t.Errorf("destroy %s: %v: %s", name, err, out)
		}
	})

	var reply string
	for ctx.Err() == nil {
		reply, err = run("qemu-agent-command", name, `{"execute":"guest-ping"}`)
		if err == nil {
			break
		}
		time.Sleep(time.Second)
	}
	require.NoError(t, err, "guest agent never answered: %s", reply)
	require.Contains(t, reply, `"return"`)
	_, err = os.Stat(domain.GuestAgentSocket(vmi, opts))
	require.NoError(t, err, "the agent channel is the builder's socket")
	out, err = run("domblklist", name)
	require.NoError(t, err)
	require.True(t, strings.Contains(out, "vda") && strings.Contains(out, "sda"), out)
	assert.Regexp(t, `(?m)^\s*sd\w+\s+-\s*$`, out, "the empty CD-ROM drive has no medium")
	out, err = run("vcpucount", name)
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^maximum\s+live\s+4\s*$`, out)
	assert.Regexp(t, `(?m)^current\s+live\s+1\s*$`, out)
	out, err = run("dumpxml", name)
	require.NoError(t, err)
	assert.Contains(t, out, "<maxMemory slots='16' unit='KiB'>4194304</maxMemory>", "memory hot-plug room of KubeVirt's LiveUpdate default")
	out, err = run("iothreadinfo", name)
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^\s*2\s`, out, "the shared thread 1 and the dedicated thread 2")
}
