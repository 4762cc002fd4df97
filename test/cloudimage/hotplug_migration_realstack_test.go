//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package cloudimage_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/libvirt"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// The shared-storage migration test's nodes: names of their own, so the
// agents of other real-stack tests on the same daemons leave its domain
// alone.
const (
	sharedMigNodeA = "storage-mig-a" // libvirtd A
	sharedMigNodeB = "storage-mig-b" // libvirtd B
	sharedMigNS    = "storage-mig"
)

// TestRealHotplugVolumeSurvivesMigrationOnSharedStorage boots the Debian
// cloud image from a DataVolume on the shared storage class (imported
// over HTTP, ReadWriteMany), hot-plugs a blank shared DataVolume into it,
// writes to the disk from the guest, live-migrates the guest from one
// libvirtd to the other and finds the disk, with the data written before
// the migration, in the guest on the target, where it writes again.
//
// Both daemons run on one host, whose filesystem libvirt 9.0 cannot tell
// from a node-local one: it refuses a writable disk there as unsafe to
// migrate. The cluster's migration configuration sets KubeVirt's
// unsafeMigrationOverride, which asks libvirt to skip that check
// (VIR_MIGRATE_UNSAFE), as a KubeVirt administrator does for shared
// storage libvirt does not recognise; the disks are really shared (one
// file both daemons open), and the test shows the guest's data made it.
func TestRealHotplugVolumeSurvivesMigrationOnSharedStorage(t *testing.T) {
	img := requireCloudStack(t)
	if _, err := exec.LookPath("qemu-img"); err != nil {
		unavailable(t, "qemu-img not installed; "+howTo)
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:16510", time.Second); err != nil {
		unavailable(t, "libvirtd B ("+libvirttest.PeerURI+") not listening: "+err.Error()+"; "+howTo)
	} else {
		_ = c.Close()
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(img)))
	defer srv.Close()
	vm := decodeVM(t, "testdata/shared-root.yaml", "HTTP_HOST", strings.TrimPrefix(srv.URL, "http://"))
	c, hvs := startSharedMigrationCluster(t, img)
	ctx, cancel := context.WithTimeout(context.Background(), importTimeout+2*bootTimeout)
	defer cancel()
	t.Cleanup(func() { deleteVM(t, c, vm) })

	start := time.Now()
	require.NoError(t, c.Apply(ctx, vm))
	got := waitSharedGuest(ctx, t, c, vm.Namespace, vm.Name, func(v *virtkit.VirtualMachineInstance) bool { return v.IsMigratable() })
	t.Logf("apply to guest agent (import on the shared class, boot): %s", time.Since(start).Round(100*time.Millisecond))
	source := got.Status.NodeName
	dom := domain.DomainName(got)
	x, err := hvs[source].XML(ctx, dom)
	require.NoError(t, err)
	assert.Regexp(t, `/shared/dv/`+sharedMigNS+`/storage-mig-root\.img`, x, "the root disk is on the shared class")

	// The hot-plugged disk: a blank DataVolume on the shared class.
	objs, err := virtkit.DecodeBytes([]byte(sharedDataVolume))
	require.NoError(t, err)
	dv := objs[0].(*virtkit.DataVolume)
	require.NoError(t, c.Apply(ctx, dv))
	require.True(t, poll(ctx, func() bool {
		cur := &virtkit.DataVolume{}
		return c.Store().Get(ctx, store.KeyOf(dv), cur) == nil && cur.Status.Phase == virtkit.DataVolumeSucceeded
	}, 2*time.Minute, 500*time.Millisecond), "the blank shared DataVolume is created")

	const serial = "storage-mig-data"
	// The VM's addvolume (virtctl addvolume VM): its VMI is owned by the VM.
	require.NoError(t, actions.AddVMVolume(ctx, c.Store(), store.Key{Namespace: vm.Namespace, Name: vm.Name}, &virtkit.AddVolumeOptions{Name: "data",
		Disk:         &virtkit.Disk{Serial: serial, DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: virtkit.DiskBusSCSI}}},
		VolumeSource: &virtkit.HotplugVolumeSource{DataVolume: &virtkit.DataVolumeSource{Name: dv.Name, Hotpluggable: true}}}))
	_, err = c.WaitForVMI(ctx, vm.Namespace, vm.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		vs, ok := hotplugStatus(v, "data")
		return found && ok && vs.Phase == virtkit.VolumeReady
	})
	require.NoError(t, err, "the hot-plugged volume turns Ready")
	x, err = hvs[source].XML(ctx, dom)
	require.NoError(t, err)
	assert.Regexp(t, `/shared/dv/`+sharedMigNS+`/storage-mig-data\.img`, x, "the hot-plugged disk is on the shared class")

	// Written in the guest on the source.
	g := sharedGuest(hvs[source], dom)
	dev := findDisk(ctx, t, g, serial, "67108864")
	const before, after = "written-on-the-source", "written-on-the-target"
	w, err := g.exec(ctx, "/bin/sh", "-c", "echo "+before+" | dd of=/dev/"+dev+" oflag=direct,sync bs=512 conv=sync status=none && head -c 21 /dev/"+dev)
	require.NoError(t, err)
	require.Equal(t, 0, w.Code, "%s", w.Stderr)
	require.Equal(t, before, w.Stdout)
	t.Logf("guest on %s: /dev/%s holds %q", source, dev, w.Stdout)

	// Live-migrated to the other daemon.
	migStart := time.Now()
	mig, err := actions.Migrate(ctx, c.Store(), store.KeyOf(got), actions.MigrateOptions{})
	require.NoError(t, err)
	done := &virtkit.VirtualMachineInstanceMigration{}
	require.True(t, poll(ctx, func() bool {
		return c.Store().Get(ctx, store.KeyOf(mig), done) == nil && done.IsFinal()
	}, 10*time.Minute, 500*time.Millisecond), "the migration ends (last: %+v)", done.Status)
	require.Equal(t, virtkit.MigrationSucceeded, done.Status.Phase, "state: %+v", done.Status.MigrationState)
	moved, err := c.WaitForVMI(ctx, vm.Namespace, vm.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Status.NodeName != source && v.Status.NodeName != "" &&
			virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected)
	})
	require.NoError(t, err)
	target := moved.Status.NodeName
	t.Logf("migration %s -> %s: %s (apply to succeeded and the agent connected on the target)", source, target, time.Since(migStart).Round(100*time.Millisecond))
	vs, ok := hotplugStatus(moved, "data")
	require.True(t, ok, "the hot-plugged volume is still in the status")
	assert.Equal(t, virtkit.VolumeReady, vs.Phase)
	x, err = hvs[target].XML(ctx, dom)
	require.NoError(t, err)
	assert.Regexp(t, `/shared/dv/`+sharedMigNS+`/storage-mig-data\.img`, x, "the target domain holds the hot-plugged disk")

	// The guest on the target still sees the disk and what it wrote.
	g = sharedGuest(hvs[target], dom)
	dev2 := findDisk(ctx, t, g, serial, "67108864")
	r, err := g.exec(ctx, "/bin/sh", "-c", "head -c 21 /dev/"+dev2)
	require.NoError(t, err)
	require.Equal(t, 0, r.Code, "%s", r.Stderr)
	assert.Equal(t, before, r.Stdout, "the data written before the migration is on the disk after it")
	w, err = g.exec(ctx, "/bin/sh", "-c", "echo "+after+" | dd of=/dev/"+dev2+" oflag=direct,sync bs=512 seek=1 conv=sync status=none && dd if=/dev/"+dev2+" bs=512 skip=1 count=1 iflag=direct status=none | head -c 21")
	require.NoError(t, err)
	require.Equal(t, 0, w.Code, "%s", w.Stderr)
	assert.Equal(t, after, w.Stdout)
	t.Logf("guest on %s: /dev/%s holds %q, then %q", target, dev2, r.Stdout, w.Stdout)

	// Both writes are in the shared file the node agents gave QEMU.
	m := regexp.MustCompile(`file='([^']*/shared/dv/` + sharedMigNS + `/storage-mig-data\.img)'`).FindStringSubmatch(x)
	require.Len(t, m, 2, "the hot-plugged disk's source file in the target's XML")
	onHost, err := os.ReadFile(m[1])
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(onHost), 1024)
	assert.Equal(t, before, string(onHost[:21]))
	assert.Equal(t, after, string(onHost[512:533]))
}

// sharedDataVolume is the blank disk the test hot-plugs, on the shared
// class.
const sharedDataVolume = `
apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: storage-mig-data
  namespace: ` + sharedMigNS + `
spec:
  source:
    blank: {}
  storage:
    storageClassName: shared
    accessModes: [ReadWriteMany]
    resources:
      requests:
        storage: 64Mi
`

// startSharedMigrationCluster runs a control plane with node
// sharedMigNodeA on libvirtd A and sharedMigNodeB on libvirtd B, one
// volume resolver (the Debian image's kernel and initrd) and one storage
// directory (its shared class) for both, each node with a runtime
// directory of its own, and migrations allowed past libvirt's storage
// check (unsafeMigrationOverride).
func startSharedMigrationCluster(t *testing.T, img string) (*cluster.Cluster, map[string]*libvirt.Hypervisor) {
	t.Helper()
	work, uid, gid := libvirttest.QEMUWorkDir(t, "virtkit-storage-mig-")
	dopts := domain.Options{
		Type: domain.TypeQEMU,
		VolumeResolver: &domain.DirResolver{Dir: filepath.Join(work, "volumes"), Create: true,
			Kernels: map[string]domain.HostKernel{cloudImage: {
				Kernel: filepath.Join(img, "vmlinuz"), Initrd: filepath.Join(img, "initrd.img")}}},
	}
	// Both daemons share /tmp: two QEMUs binding one guest-agent socket
	// path would cut the target's agent off when the source's QEMU exits.
	domainOf := func(nodeName string) domain.Options {
		o := dopts
		o.RuntimeDir = filepath.Join(work, "run-"+nodeName)
		return o
	}
	for _, n := range []string{sharedMigNodeA, sharedMigNodeB} {
		require.NoError(t, os.MkdirAll(domainOf(n).RuntimeDir, 0o755))
	}
	uris := map[string]string{sharedMigNodeA: libvirttest.SourceURI, sharedMigNodeB: libvirttest.PeerURI}
	migrationURIs := map[string]string{sharedMigNodeA: "qemu+tcp://127.0.0.1:16509/system", sharedMigNodeB: libvirttest.PeerURI}
	hvs := map[string]*libvirt.Hypervisor{}
	ctx, cancel := context.WithCancel(context.Background())
	unsafe := true
	copts := cluster.Options{
		NodeNames: []string{sharedMigNodeA, sharedMigNodeB},
		NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
			h, err := libvirt.New(ctx, libvirt.Options{URI: uris[name]})
			if err != nil {
				return nil, err
			}
			hvs[name] = h
			return h, nil
		},
		Domain: dopts,
		NodeAgent: node.Options{
			RuntimeDirOwner:   &node.Owner{UID: uid, GID: gid},
			StatusInterval:    time.Second,
			HeartbeatInterval: 2 * time.Second,
			Migration:         node.MigrationOptions{StatusInterval: 250 * time.Millisecond},
		},
		ConfigureNode: func(name string, no *node.Options) {
			no.Domain = domainOf(name)
			no.Migration.URI = migrationURIs[name]
			no.Migration.DataURI = "tcp://127.0.0.1"
			no.Migration.DestinationXML = func(vmi *virtkit.VirtualMachineInstance, target, sourceXML string) (string, error) {
				from, to := domain.RuntimeDir(vmi, domainOf(name)), domain.RuntimeDir(vmi, domainOf(target))
				return strings.ReplaceAll(sourceXML, from, to), nil
			}
		},
		Migration:  controller.MigrationOptions{Config: &virtkit.MigrationConfiguration{UnsafeMigrationOverride: &unsafe}},
		GuestAgent: node.GuestAgentSourceOptions{Poller: guestagent.PollerOptions{SysInterval: 5 * time.Second}},
	}
	copts.Storage.Dir = filepath.Join(work, "storage")
	copts.Storage.AllowedNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
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
		for _, h := range hvs {
			_ = h.Close()
		}
	})
	return c, hvs
}

// waitSharedGuest waits until the VM's VMI runs with its guest agent
// connected and ready also holds.
func waitSharedGuest(ctx context.Context, t *testing.T, c *cluster.Cluster, namespace, name string, ready func(*virtkit.VirtualMachineInstance) bool) *virtkit.VirtualMachineInstance {
	t.Helper()
	bctx, bcancel := context.WithTimeout(ctx, importTimeout+bootTimeout)
	defer bcancel()
	got, err := c.WaitForVMI(bctx, namespace, name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && (v.IsFinal() || v.IsRunning() && ready(v) &&
			virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected))
	})
	if err != nil {
		v := &virtkit.VirtualMachineInstance{}
		if gerr := c.Store().Get(context.Background(), store.Key{Namespace: namespace, Name: name}, v); gerr == nil {
			t.Logf("VMI status: %+v", v.Status)
		}
	}
	require.NoError(t, err, "the Debian guest boots, may migrate, and its agent answers")
	require.False(t, got.IsFinal(), "VMI ended: %s", got.Status.Phase)
	return got
}

// sharedGuest is the guest agent of domain dom on hv.
func sharedGuest(hv *libvirt.Hypervisor, dom string) guest {
	opts := guestagent.Options{CallTimeout: 30 * time.Second}
	return guest{c: guestagent.New(guestagent.NewPassthroughTransport(hv, dom, opts), opts)}
}

// findDisk waits until lsblk in the guest lists a disk with serial of
// size bytes and returns its device name.
func findDisk(ctx context.Context, t *testing.T, g guest, serial, size string) string {
	t.Helper()
	var dev, last string
	require.Eventually(t, func() bool {
		r, err := g.exec(ctx, "/usr/bin/lsblk", "-dn", "-o", "NAME,SERIAL,SIZE", "-b")
		if err != nil || r.Code != 0 {
			last = r.Stderr
			if err != nil {
				last = err.Error()
			}
			return false
		}
		last = r.Stdout
		for _, line := range strings.Split(r.Stdout, "\n") {
			f := strings.Fields(line)
			if len(f) == 3 && f[1] == serial {
				dev = f[0]
				return f[2] == size
			}
		}
		return false
	}, 2*time.Minute, 2*time.Second, "lsblk in the guest lists the disk %s (last: %q)", serial, last)
	return dev
}

// hotplugStatus is the VMI's volume status of volume name.
func hotplugStatus(v *virtkit.VirtualMachineInstance, name string) (virtkit.VolumeStatus, bool) {
	for _, vs := range v.Status.VolumeStatus {
		if vs.Name == name {
			return vs, true
		}
	}
	return virtkit.VolumeStatus{}, false
}
