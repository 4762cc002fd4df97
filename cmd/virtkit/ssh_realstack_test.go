//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
	"github.com/virtkit/virtkit/internal/testenv"
)

// sshCloudImage is the image name the ssh test's VMI uses; the test maps it
// to build/cloud-image.
const sshCloudImage = "localhost/virtkit/debian-cloud:12"

// sshVMIManifest is a Debian cloud guest on the pod network (bridge
// binding: it takes its pod address by DHCP) whose cloud-init authorizes
// the test's key for user virtkit. %s is the public key.
const sshVMIManifest = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: ssh-debian
  namespace: ssh-realstack
spec:
  hostname: ssh-debian-host
  terminationGracePeriodSeconds: 10
  domain:
    memory:
      guest: 512Mi
    firmware:
      kernelBoot:
        kernelArgs: console=ttyS0 root=LABEL=virtkit-root rw
        container:
          image: localhost/virtkit/debian-cloud:12
          kernelPath: /boot/vmlinuz
          initrdPath: /boot/initrd.img
    devices:
      disks:
      - name: rootdisk
        disk:
          bus: virtio
      - name: cloudinitdisk
        disk:
          bus: virtio
      interfaces:
      - name: default
        bridge: {}
  networks:
  - name: default
    pod: {}
  volumes:
  - name: rootdisk
    containerDisk:
      image: localhost/virtkit/debian-cloud:12
  - name: cloudinitdisk
    cloudInitNoCloud:
      userData: |
        #cloud-config
        users:
        - name: virtkit
          shell: /bin/bash
          ssh_authorized_keys:
          - %s
`

// requireSSHStack skips (fails under VIRTKIT_STRICT=1) without root,
// libvirtd, the Debian cloud image, the host networking tools, the ssh
// client or the go command; it returns the image directory and go.
func requireSSHStack(t *testing.T) (img, goBin string) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, "host networking and libvirt need root")
		return "", ""
	}
	c, err := net.DialTimeout("unix", "/run/libvirt/libvirt-sock", time.Second)
	if err != nil {
		testenv.Unavailable(t, "libvirtd ("+libvirttest.SourceURI+") not listening: "+err.Error()+"; hack/realstack/libvirtd.sh start")
		return "", ""
	}
	_ = c.Close()
	for _, tool := range []string{"ip", "nft", "dnsmasq", "bridge", "ssh", "ssh-keygen", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Unavailable(t, fmt.Sprintf("%s missing (hack/realstack/install.sh installs it): %v", tool, err))
			return "", ""
		}
	}
	goBin, _ = exec.LookPath("go")
	img = os.Getenv("VIRTKIT_CLOUD_IMAGE_DIR")
	if img == "" {
		img = "../../build/cloud-image"
	}
	img, err = filepath.Abs(img)
	require.NoError(t, err)
	for _, f := range []string{"disk.qcow2", "vmlinuz", "initrd.img"} {
		if _, err := os.Stat(filepath.Join(img, f)); err != nil {
			testenv.Unavailable(t, "cloud image not built ("+err.Error()+"); hack/realstack/build-cloud-image.sh")
			return "", ""
		}
	}
	return img, goBin
}

// virtkit ssh logs into a real Debian guest's sshd through the API and the
// node agent (port-forward to port 22 on the pod network) with a key
// cloud-init installed, runs a command, checks the host key against the
// known_hosts file it recorded, and refuses a guest whose key differs.
func TestRealStackSSH(t *testing.T) {
	img, goBin := requireSSHStack(t)
	dir := t.TempDir()

	// The virtkit binary: ssh runs it as its ProxyCommand.
	bin := filepath.Join(dir, "virtkit")
	build := exec.Command(goBin, "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	key := filepath.Join(dir, "id_ed25519")
	out, err = exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "virtkit-ssh-test", "-f", key).CombinedOutput()
	require.NoError(t, err, "ssh-keygen: %s", out)
	pub, err := os.ReadFile(key + ".pub")
	require.NoError(t, err)

	rc := startRealAPICluster(t, realAPIClusterOptions{Node: "ssh-node", WorkPrefix: "virtkit-ssh-",
		Images: map[string]string{sshCloudImage: filepath.Join(img, "disk.qcow2")},
		Kernels: map[string]domain.HostKernel{sshCloudImage: {
			Kernel: filepath.Join(img, "vmlinuz"), Initrd: filepath.Join(img, "initrd.img")}},
		PodRange: netip.MustParsePrefix("10.249.0.0/16"), PodBridge: "vkssh0", PodTable: "vkssh"})
	c, kc, ctx := rc.C, rc.Kubeconfig, rc.Ctx
	objs, err := virtkit.DecodeBytes([]byte(fmt.Sprintf(sshVMIManifest, strings.TrimSpace(string(pub)))))
	require.NoError(t, err)
	vmi := objs[0].(*virtkit.VirtualMachineInstance)
	rc.deleteAtCleanup(t, vmi)
	tctx, tcancel := context.WithTimeout(ctx, 15*time.Minute)
	defer tcancel()
	require.NoError(t, c.Apply(tctx, vmi))
	pod := netip.MustParsePrefix("10.249.0.0/16")
	_, err = c.WaitForVMI(tctx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		if !found || !v.IsRunning() || len(v.Status.Interfaces) == 0 {
			return false
		}
		a, err := netip.ParseAddr(v.Status.Interfaces[0].IP)
		return err == nil && pod.Contains(a)
	})
	require.NoError(t, err, "the guest boots and reports its pod address")

	knownHosts := filepath.Join(dir, "known_hosts")
	ssh := func(ctx context.Context, stdin io.Reader, extra ...string) (string, string, error) {
		args := append([]string{"ssh", "--kubeconfig", kc, "-n", vmi.Namespace, "-i", key, "-l", "virtkit",
			"--known-hosts", knownHosts, "-t", "-o BatchMode=yes -o ConnectTimeout=60"}, extra...)
		cmd := exec.CommandContext(ctx, bin, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}

	// sshd answers once cloud-init has installed the key: retry until then.
	// The first login records the host key (accept-new).
	var stdout, stderr string
	for {
		actx, acancel := context.WithTimeout(tctx, 2*time.Minute)
		stdout, stderr, err = ssh(actx, nil, "-t", "-o StrictHostKeyChecking=accept-new", "vmi/"+vmi.Name, "-c", "echo hello-from-$(hostname)")
		acancel()
		if err == nil || tctx.Err() != nil {
			break
		}
		t.Logf("ssh not yet: %v: %s", err, strings.TrimSpace(stderr))
		time.Sleep(5 * time.Second)
	}
	require.NoError(t, err, "virtkit ssh: %s", stderr)
	assert.Equal(t, "hello-from-ssh-debian-host\n", stdout)
	// ssh may hash the names it records (Debian's HashKnownHosts): ask
	// ssh-keygen for the alias.
	out, err = exec.Command("ssh-keygen", "-F", "vmi/ssh-debian.ssh-realstack", "-f", knownHosts).CombinedOutput()
	require.NoError(t, err, "host key recorded under the alias: %s", out)
	assert.Contains(t, string(out), "ssh-ed25519 ")

	// The recorded key is checked strictly; 256 KiB of input go through
	// the tunnel and come back hashed.
	input := bytes.Repeat([]byte("virtkit ssh through the API\n"), 256<<10/28)
	sum := sha256.Sum256(input)
	stdout, stderr, err = ssh(tctx, bytes.NewReader(input), "-t", "-o StrictHostKeyChecking=yes", "virtkit@vmi/"+vmi.Name, "--", "sha256sum")
	require.NoError(t, err, "virtkit ssh with the recorded host key: %s", stderr)
	assert.Equal(t, hex.EncodeToString(sum[:])+"  -\n", stdout)

	// Another key recorded for the alias: ssh refuses the guest.
	other := filepath.Join(dir, "other_key")
	out, err = exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other).CombinedOutput()
	require.NoError(t, err, "ssh-keygen: %s", out)
	otherPub, err := os.ReadFile(other + ".pub")
	require.NoError(t, err)
	f := strings.Fields(string(otherPub))
	require.NoError(t, os.WriteFile(knownHosts, []byte("vmi/ssh-debian.ssh-realstack "+f[0]+" "+f[1]+"\n"), 0o600))
	_, stderr, err = ssh(tctx, nil, "-t", "-o StrictHostKeyChecking=yes", "vmi/"+vmi.Name, "-c", "true")
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "a changed host key is refused")
	assert.Equal(t, 255, ee.ExitCode())
	assert.Contains(t, stderr, "Host key verification failed")
}
