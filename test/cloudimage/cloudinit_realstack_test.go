//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package cloudimage_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/libvirt"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

const (
	// cloudImage is the containerDisk and kernelBoot image the manifests
	// name; the test maps it to build/cloud-image.
	cloudImage = "localhost/virtkit/debian-cloud:12"
	nodeName   = "img-a"
	sourceURI  = "qemu:///system"
	howTo      = "run as root: hack/realstack/install.sh && hack/realstack/build-cloud-image.sh && hack/realstack/libvirtd.sh start"

	// What the manifests' user-data asks for.
	wantUser     = "virtkit"
	wantPassHash = "$6$virtkitsalt$sse5EoR8YV9Jlz6g87RUsIShTOxBHngHLr0/KJepzVtogNRYojbcnr7J7vgqNE7p.iC9XGa5t0a9.kFf6EK6r."
	wantKey      = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAID1SEf4eiwTnWVmgdjZZwBV+LpVM0x8CaZeokxC1i3uS virtkit-test"
	runcmdFile   = "/var/tmp/virtkit-runcmd"
	largeFile    = "/var/tmp/virtkit-large"

	// TCG boots the guest in about a minute on an idle machine; CI shares
	// two cores, so the bounds are generous.
	bootTimeout      = 10 * time.Minute
	cloudInitTimeout = 8 * time.Minute
)

// TestRealCloudInitNoCloud boots the Debian cloud image with a NoCloud
// volume on a virtio disk and checks what its cloud-init did.
func TestRealCloudInitNoCloud(t *testing.T) {
	parallelLane(t)
	runCloudInit(t, "testdata/nocloud.yaml", "DataSourceNoCloud")
}

// TestRealCloudInitConfigDrive boots the Debian cloud image with a
// ConfigDrive volume on a CD-ROM (virtio-scsi) and checks what its cloud-init did.
func TestRealCloudInitConfigDrive(t *testing.T) {
	parallelLane(t)
	runCloudInit(t, "testdata/configdrive.yaml", "DataSourceConfigDrive")
}

func runCloudInit(t *testing.T, manifest, wantDatasource string) {
	img := requireCloudStack(t)
	data, err := os.ReadFile(manifest)
	require.NoError(t, err)
	objs, err := virtkit.DecodeBytes(data)
	require.NoError(t, err)
	require.Len(t, objs, 1)
	vmi := objs[0].(*virtkit.VirtualMachineInstance)
	wantHost := vmi.Spec.Hostname
	wantMAC := vmi.Spec.Domain.Devices.Interfaces[0].MacAddress
	wantIP := vmi.Annotations["test.virtkit.io/static-ip"]
	require.NotEmpty(t, wantIP, "the manifest names the address its network data configures")
	// User-data close to KubeVirt's 2048-byte limit: a write_files entry
	// carrying 640 pseudo-random bytes, compared byte for byte below.
	large := largeContent(640)
	addWriteFile(t, vmi, largeFile, large)

	c := startCluster(t, img)
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout+cloudInitTimeout)
	defer cancel()
	t.Logf("user-data: %d bytes", userDataLen(vmi))
	start := time.Now()
	_, g := bootVMI(ctx, t, c, vmi, vmi)

	// cloud-init's final stage writes boot-finished; until then, poll.
	// When ds-identify found no datasource (no disk with the label, say)
	// cloud-init is off for this boot: fail at once.
	var finished []byte
	for {
		finished, err = g.readFile(ctx, "/var/lib/cloud/instance/boot-finished")
		if err == nil || ctx.Err() != nil {
			break
		}
		if ds, derr := g.readFile(ctx, "/run/cloud-init/ds-identify.log"); derr == nil && bytes.Contains(ds, []byte("No ds found")) {
			dumpCloudInit(t, g)
			t.Fatalf("cloud-init found no datasource and disabled itself")
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
	if err != nil {
		dumpCloudInit(t, g)
		require.NoError(t, err, "cloud-init never finished")
	}
	t.Logf("boot to cloud-init done: %s (%s)", time.Since(start).Round(100*time.Millisecond), strings.TrimSpace(string(finished)))

	// cloud-init's own verdict: which datasource, and no errors.
	raw, err := g.readFile(ctx, "/run/cloud-init/result.json")
	require.NoError(t, err)
	var result struct {
		V1 struct {
			Datasource string   `json:"datasource"`
			Errors     []string `json:"errors"`
		} `json:"v1"`
	}
	require.NoError(t, json.Unmarshal(raw, &result), "%s", raw)
	assert.Contains(t, result.V1.Datasource, wantDatasource)
	assert.Empty(t, result.V1.Errors, "cloud-init errors")
	logWarnings(t, g)
	if r, err := g.exec(ctx, "/usr/bin/systemd-analyze", "time"); err == nil {
		t.Logf("guest: %s", strings.TrimSpace(r.Stdout))
	}

	// Host name (from the seed's metadata, set from spec.hostname).
	host, err := g.c.HostName(ctx)
	require.NoError(t, err)
	assert.Equal(t, wantHost, host)

	// The user: password hash, groups, authorized key.
	shadow, err := g.readFile(ctx, "/etc/shadow")
	require.NoError(t, err)
	assert.Contains(t, string(shadow), wantUser+":"+wantPassHash+":", "the user's password")
	id, err := g.exec(ctx, "/usr/bin/id", "-nG", wantUser)
	require.NoError(t, err)
	require.Equal(t, 0, id.Code, "id %s: %s", wantUser, id.Stderr)
	assert.Contains(t, strings.Fields(id.Stdout), "sudo")
	keys, err := g.readFile(ctx, "/home/"+wantUser+"/.ssh/authorized_keys")
	require.NoError(t, err)
	assert.Contains(t, string(keys), wantKey)

	// write_files wrote the large file intact.
	gotLarge, err := g.readFile(ctx, largeFile)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(large, gotLarge), "write_files content: %d bytes, want %d", len(gotLarge), len(large))

	// runcmd ran (in the final stage, after the host name was set).
	out, err := g.readFile(ctx, runcmdFile)
	require.NoError(t, err)
	assert.Equal(t, "runcmd-ran-on-"+wantHost+"\n", string(out))

	// The network data matched the NIC by MAC and gave it a static
	// address (cloud-init's fallback would have run DHCP, which user-mode
	// networking answers with 10.0.2.15).
	var v4 []string
	assert.Eventually(t, func() bool {
		ifaces, err := g.c.NetworkInterfaces(ctx)
		if err != nil {
			return false
		}
		v4 = nil
		for _, i := range ifaces {
			if !strings.EqualFold(i.HardwareAddress, wantMAC) {
				continue
			}
			for _, a := range i.IPAddresses {
				if a.Type == "ipv4" {
					v4 = append(v4, a.Address+"/"+strconv.Itoa(a.Prefix))
				}
			}
		}
		return len(v4) == 1 && v4[0] == wantIP
	}, time.Minute, time.Second, "the NIC %s has exactly the network data's address %s", wantMAC, wantIP)
	if !t.Failed() {
		t.Logf("NIC %s: %v", wantMAC, v4)
	}

	// The VMI's guestOSInfo, from the node's guest-agent poller.
	octx, ocancel := context.WithTimeout(ctx, 2*time.Minute)
	defer ocancel()
	got, err := c.WaitForVMI(octx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Status.GuestOSInfo.ID != ""
	})
	require.NoError(t, err, "guestOSInfo is reported")
	osInfo := got.Status.GuestOSInfo
	assert.Equal(t, "debian", osInfo.ID)
	assert.Equal(t, "12", osInfo.VersionID)
	assert.Equal(t, "Debian GNU/Linux 12 (bookworm)", osInfo.PrettyName)
	assert.Contains(t, osInfo.KernelRelease, "cloud-amd64")
}

// requireCloudStack skips (fails under VIRTKIT_STRICT=1) unless the test
// runs as root next to libvirtd A with the cloud image built, and returns
// the image's directory.
func requireCloudStack(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, "not root; "+howTo)
	}
	c, err := net.DialTimeout("unix", "/run/libvirt/libvirt-sock", time.Second)
	if err != nil {
		unavailable(t, "libvirtd ("+sourceURI+") not listening: "+err.Error()+"; "+howTo)
	}
	_ = c.Close()
	dir := os.Getenv("VIRTKIT_CLOUD_IMAGE_DIR")
	if dir == "" {
		dir = "../../build/cloud-image"
	}
	dir, err = filepath.Abs(dir)
	require.NoError(t, err)
	for _, f := range []string{"disk.qcow2", "vmlinuz", "initrd.img"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			unavailable(t, "cloud image not built ("+err.Error()+"); "+howTo)
		}
	}
	return dir
}

func unavailable(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("VIRTKIT_STRICT") == "1" {
		t.Fatalf("required by the full test suite (VIRTKIT_STRICT=1): %s", why)
	}
	t.Skip(why)
}

// startCluster runs a control plane with one node on t's libvirtd (its
// lane's, else A) whose resolver maps cloudImage to the built image (qcow2
// overlay per VMI) and its kernel and initrd; configure, when given,
// adjusts the options last.
func startCluster(t *testing.T, img string, configure ...func(*cluster.Options)) *cluster.Cluster {
	t.Helper()
	work, uid, gid := libvirttest.QEMUWorkDir(t, "virtkit-img-")
	dopts := domain.Options{
		Type:       domain.TypeQEMU,
		RuntimeDir: filepath.Join(work, "run"),
		VolumeResolver: &domain.DirResolver{Dir: filepath.Join(work, "volumes"), Create: true,
			Images: map[string]string{cloudImage: filepath.Join(img, "disk.qcow2")},
			Kernels: map[string]domain.HostKernel{cloudImage: {
				Kernel: filepath.Join(img, "vmlinuz"), Initrd: filepath.Join(img, "initrd.img")}}},
	}
	require.NoError(t, os.MkdirAll(dopts.RuntimeDir, 0o755))

	uri := laneURI(t)
	ctx, cancel := context.WithCancel(context.Background())
	var hv *libvirt.Hypervisor
	copts := cluster.Options{
		NodeNames: []string{nodeName},
		NewHypervisor: func(string) (hypervisor.Hypervisor, error) {
			h, err := libvirt.New(ctx, libvirt.Options{URI: uri})
			hv = h
			return h, err
		},
		Domain: dopts,
		NodeAgent: node.Options{
			RuntimeDirOwner:   &node.Owner{UID: uid, GID: gid},
			StatusInterval:    time.Second,
			HeartbeatInterval: 2 * time.Second,
		},
		GuestAgent: node.GuestAgentSourceOptions{Poller: guestagent.PollerOptions{SysInterval: 5 * time.Second}},
	}
	// The tests' HTTP servers and registries are on loopback.
	copts.Storage.AllowedNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	for _, f := range configure {
		f(&copts)
	}
	c, err := cluster.New(copts)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		deleteAll(t, c)
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("cluster: %v", err)
		}
		if hv != nil {
			_ = hv.Close()
		}
	})
	return c
}

// deleteAll deletes the test's VMIs and waits until their guests are gone.
func deleteAll(t *testing.T, c *cluster.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	vmis := &virtkit.VirtualMachineInstanceList{}
	if err := c.Store().List(ctx, vmis, store.ListOptions{}); err != nil {
		t.Logf("list VMIs: %v", err)
		return
	}
	for i := range vmis.Items {
		v := &vmis.Items[i]
		_ = c.Store().Delete(ctx, v, store.DeleteOptions{})
		if _, err := c.WaitForVMI(ctx, v.Namespace, v.Name, cluster.Gone[*virtkit.VirtualMachineInstance]()); err != nil {
			t.Errorf("VMI %s/%s not gone: %v", v.Namespace, v.Name, err)
		}
	}
}

// dumpCloudInit logs what explains a cloud-init that never finished.
func dumpCloudInit(t *testing.T, g guest) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, f := range []string{"/run/cloud-init/ds-identify.log", "/run/cloud-init/cloud-init-generator.log", "/var/log/cloud-init.log"} {
		b, err := g.readFile(ctx, f)
		if err != nil {
			t.Logf("%s: %v", f, err)
			continue
		}
		s := string(b)
		if len(s) > 16<<10 {
			s = "..." + s[len(s)-16<<10:]
		}
		t.Logf("%s:\n%s", f, s)
	}
}

// logWarnings logs cloud-init's warnings: what it did not like in the data.
func logWarnings(t *testing.T, g guest) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := g.readFile(ctx, "/var/log/cloud-init.log")
	if err != nil {
		t.Logf("cloud-init.log: %v", err)
		return
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "WARNING") {
			t.Logf("cloud-init: %s", l)
		}
	}
}

// largeContent is n deterministic pseudo-random bytes (a SHA-256 chain).
func largeContent(n int) []byte {
	out := make([]byte, 0, n+sha256.Size)
	sum := sha256.Sum256([]byte("virtkit cloud-init"))
	for len(out) < n {
		out = append(out, sum[:]...)
		sum = sha256.Sum256(sum[:])
	}
	return out[:n]
}

// addWriteFile appends a write_files entry to the VMI's cloud-init
// user-data (which must be a #cloud-config without write_files).
func addWriteFile(t *testing.T, vmi *virtkit.VirtualMachineInstance, path string, data []byte) {
	t.Helper()
	entry := "write_files:\n- path: " + path + "\n  encoding: b64\n  permissions: '0644'\n  content: " +
		base64.StdEncoding.EncodeToString(data) + "\n"
	for i := range vmi.Spec.Volumes {
		src := &vmi.Spec.Volumes[i].VolumeSource
		var ud *string
		switch {
		case src.CloudInitNoCloud != nil:
			ud = &src.CloudInitNoCloud.UserData
		case src.CloudInitConfigDrive != nil:
			ud = &src.CloudInitConfigDrive.UserData
		default:
			continue
		}
		require.True(t, strings.HasPrefix(*ud, "#cloud-config\n") && !strings.Contains(*ud, "write_files:"))
		if !strings.HasSuffix(*ud, "\n") {
			*ud += "\n"
		}
		*ud += entry
		return
	}
	t.Fatal("no cloud-init volume")
}

func userDataLen(vmi *virtkit.VirtualMachineInstance) int {
	for _, v := range vmi.Spec.Volumes {
		switch {
		case v.CloudInitNoCloud != nil:
			return len(v.CloudInitNoCloud.UserData)
		case v.CloudInitConfigDrive != nil:
			return len(v.CloudInitConfigDrive.UserData)
		}
	}
	return 0
}
