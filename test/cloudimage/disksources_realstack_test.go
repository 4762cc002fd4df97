//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package cloudimage_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cdi/oci/ocitest"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/store"
)

// sourcesNamespace is where the manifests of this file live.
const sourcesNamespace = "img-sources"

// importTimeout bounds the HTTP import of the image (qcow2 to raw) on a
// loaded two-core machine.
const importTimeout = 5 * time.Minute

// TestRealDataVolumeHTTPBoot serves the cloud image's qcow2 from a
// loopback HTTP server and applies a VirtualMachine whose
// dataVolumeTemplates import it: the DataVolume goes through the importer
// (qemu-img converts it to raw), the VMI waits for it, and the guest boots
// from the imported disk (its kernel and initrd from the host's kernel map)
// to its guest agent, which reports Debian.
func TestRealDataVolumeHTTPBoot(t *testing.T) {
	parallelLane(t)
	img := requireCloudStack(t)
	if _, err := exec.LookPath("qemu-img"); err != nil {
		unavailable(t, "qemu-img not installed; "+howTo)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(img)))
	defer srv.Close()
	vm := decodeVM(t, "testdata/datavolume-http.yaml", "HTTP_HOST", strings.TrimPrefix(srv.URL, "http://"))
	dvName := vm.Spec.DataVolumeTemplates[0].ObjectMeta.Name

	c := startCluster(t, img)
	ctx, cancel := context.WithTimeout(context.Background(), importTimeout+bootTimeout)
	defer cancel()
	destroyLeftover(ctx, t, c, vm)
	t.Cleanup(func() { deleteVM(t, c, vm) })

	start := time.Now()
	require.NoError(t, c.Apply(ctx, vm))

	// The import: its phases and progress as the DataVolume shows them.
	ictx, icancel := context.WithTimeout(ctx, importTimeout)
	defer icancel()
	var seen []string
	dv := &virtkit.DataVolume{}
	for {
		err := c.Store().Get(ictx, store.Key{Namespace: sourcesNamespace, Name: dvName}, dv)
		if err == nil {
			s := string(dv.Status.Phase) + " " + string(dv.Status.Progress)
			if len(seen) == 0 || seen[len(seen)-1] != s {
				seen = append(seen, s)
			}
			if dv.Status.Phase == virtkit.DataVolumeSucceeded || dv.Status.Phase == virtkit.DataVolumeFailed {
				break
			}
		}
		select {
		case <-ictx.Done():
			t.Fatalf("DataVolume %s not imported within %s; seen %q, last status %+v", dvName, importTimeout, seen, dv.Status)
		case <-time.After(500 * time.Millisecond):
		}
	}
	t.Logf("import: %s; phases and progress seen: %q", time.Since(start).Round(100*time.Millisecond), seen)
	require.Equal(t, virtkit.DataVolumeSucceeded, dv.Status.Phase, "conditions: %+v", dv.Status.Conditions)
	assert.Equal(t, virtkit.FormatDataVolumeProgress(100), dv.Status.Progress)
	require.NotEmpty(t, dv.OwnerReferences, "the VM owns its template's DataVolume")
	assert.Equal(t, vm.Name, dv.OwnerReferences[0].Name)

	got := waitDebianGuest(ctx, t, c, sourcesNamespace, vm.Name, start)
	assert.True(t, virtkit.IsConditionTrue(got.Status.Conditions, virtkit.VirtualMachineInstanceDataVolumesReady))

	// The guest's disk is the DataVolume's raw file, not the image.
	xml, err := c.Node(got.Status.NodeName).Hypervisor.XML(ctx, domain.DomainName(got))
	require.NoError(t, err)
	assert.Contains(t, xml, filepath.Join("dv", sourcesNamespace, dvName+".img"))
	assert.NotContains(t, xml, filepath.Join(img, "disk.qcow2"))
}

// TestRealContainerDiskRegistryBoot pushes the cloud image as a
// KubeVirt-format containerDisk (the qcow2 under /disk/) and its kernel and
// initrd as a kernelBoot container to Debian's docker-registry on loopback,
// and applies a VirtualMachine naming both: the node pulls them (nothing is
// mapped on the host) and the guest boots from a qcow2 overlay on the
// pulled disk to its guest agent, which reports Debian.
func TestRealContainerDiskRegistryBoot(t *testing.T) {
	parallelLane(t)
	img := requireCloudStack(t)
	if _, err := exec.LookPath(ocitest.Binary); err != nil {
		unavailable(t, ocitest.Binary+" not installed; "+howTo)
	}
	reg := ocitest.Start(t, "", "")
	pstart := time.Now()
	pushFiles(t, reg.Host+"/virtkit/debian-cloud:12", []tarFile{
		{name: "disk/", dir: true}, {name: "disk/disk.qcow2", src: filepath.Join(img, "disk.qcow2")}})
	pushFiles(t, reg.Host+"/virtkit/debian-cloud-kernel:12", []tarFile{
		{name: "boot/", dir: true},
		{name: "boot/vmlinuz", src: filepath.Join(img, "vmlinuz")},
		{name: "boot/initrd.img", src: filepath.Join(img, "initrd.img")}})
	t.Logf("pushed the containerDisk and kernel images in %s", time.Since(pstart).Round(100*time.Millisecond))
	vm := decodeVM(t, "testdata/containerdisk-registry.yaml", "REGISTRY_HOST", reg.Host)

	// No image or kernel map: what boots comes from the registry.
	c := startCluster(t, img, func(o *cluster.Options) {
		r := o.Domain.VolumeResolver.(*domain.DirResolver)
		r.Images, r.Kernels = nil, nil
		o.Storage.PullContainerDisks = true
	})
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()
	destroyLeftover(ctx, t, c, vm)
	t.Cleanup(func() { deleteVM(t, c, vm) })

	start := time.Now()
	require.NoError(t, c.Apply(ctx, vm))
	got := waitDebianGuest(ctx, t, c, sourcesNamespace, vm.Name, start)

	// The guest's disk is an overlay whose backing file is the pulled disk.
	xml, err := c.Node(got.Status.NodeName).Hypervisor.XML(ctx, domain.DomainName(got))
	require.NoError(t, err)
	assert.Contains(t, xml, "backingStore")
	assert.NotContains(t, xml, filepath.Join(img, "disk.qcow2"))
	assert.NotContains(t, xml, filepath.Join(img, "vmlinuz"))
}

// decodeVM reads a VirtualMachine manifest, replacing placeholder with value.
func decodeVM(t *testing.T, manifest, placeholder, value string) *virtkit.VirtualMachine {
	t.Helper()
	data, err := os.ReadFile(manifest)
	require.NoError(t, err)
	require.Contains(t, string(data), placeholder)
	objs, err := virtkit.DecodeBytes([]byte(strings.ReplaceAll(string(data), placeholder, value)))
	require.NoError(t, err)
	require.Len(t, objs, 1)
	vm, ok := objs[0].(*virtkit.VirtualMachine)
	require.True(t, ok, "%s holds a %T", manifest, objs[0])
	return vm
}

// destroyLeftover removes a guest an interrupted run left behind under the
// name the VM's VMI will have.
func destroyLeftover(ctx context.Context, t *testing.T, c *cluster.Cluster, vm *virtkit.VirtualMachine) {
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name = vm.Namespace, vm.Name
	hv := c.Node(nodeName).Hypervisor
	if err := hv.Destroy(ctx, domain.DomainName(vmi)); err == nil {
		t.Logf("destroyed a leftover %s", domain.DomainName(vmi))
	}
	_ = hv.Undefine(ctx, domain.DomainName(vmi))
}

// deleteVM deletes the VM (else its run strategy restarts the VMI that
// startCluster's cleanup deletes) and waits until its VMI is gone.
func deleteVM(t *testing.T, c *cluster.Cluster, vm *virtkit.VirtualMachine) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cur := &virtkit.VirtualMachine{}
	if err := c.Store().Get(ctx, store.Key{Namespace: vm.Namespace, Name: vm.Name}, cur); err != nil {
		return
	}
	if err := c.Store().Delete(ctx, cur, store.DeleteOptions{}); err != nil {
		t.Logf("delete VM %s: %v", vm.Name, err)
	}
	if _, err := c.WaitForVMI(ctx, vm.Namespace, vm.Name, cluster.Gone[*virtkit.VirtualMachineInstance]()); err != nil {
		t.Errorf("VMI %s/%s not gone: %v", vm.Namespace, vm.Name, err)
	}
}

// waitDebianGuest waits until the VM's VMI runs with its guest agent
// connected, then checks through the agent that the guest is the Debian
// image booted from its first virtio disk, and that the VMI's guestOSInfo
// says Debian 12.
func waitDebianGuest(ctx context.Context, t *testing.T, c *cluster.Cluster, namespace, name string, start time.Time) *virtkit.VirtualMachineInstance {
	t.Helper()
	bctx, bcancel := context.WithTimeout(ctx, bootTimeout)
	got, err := c.WaitForVMI(bctx, namespace, name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && (v.IsFinal() || v.IsRunning() &&
			virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected))
	})
	bcancel()
	if err != nil {
		v := &virtkit.VirtualMachineInstance{}
		if gerr := c.Store().Get(context.Background(), store.Key{Namespace: namespace, Name: name}, v); gerr == nil {
			t.Logf("VMI status: %+v", v.Status)
		}
	}
	require.NoError(t, err, "the Debian guest boots and its agent answers")
	require.False(t, got.IsFinal(), "VMI ended: %s", got.Status.Phase)
	t.Logf("apply to guest agent: %s", time.Since(start).Round(100*time.Millisecond))

	opts := guestagent.Options{CallTimeout: 30 * time.Second}
	hv := c.Node(got.Status.NodeName).Hypervisor
	g := guest{c: guestagent.New(guestagent.NewPassthroughTransport(hv.(hypervisor.AgentCommander), domain.DomainName(got), opts), opts)}
	osRelease, err := g.readFile(ctx, "/etc/os-release")
	require.NoError(t, err)
	assert.Contains(t, string(osRelease), "\nID=debian\n")
	root, err := g.exec(ctx, "/usr/bin/findmnt", "-n", "-o", "SOURCE", "/")
	require.NoError(t, err)
	require.Equal(t, 0, root.Code, "findmnt: %s", root.Stderr)
	assert.Equal(t, "/dev/vda", strings.TrimSpace(root.Stdout), "the root file system is the VM's disk")

	octx, ocancel := context.WithTimeout(ctx, 2*time.Minute)
	defer ocancel()
	got, err = c.WaitForVMI(octx, namespace, name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Status.GuestOSInfo.ID != ""
	})
	require.NoError(t, err, "guestOSInfo is reported")
	osInfo := got.Status.GuestOSInfo
	assert.Equal(t, "debian", osInfo.ID)
	assert.Equal(t, "12", osInfo.VersionID)
	assert.Contains(t, osInfo.KernelRelease, "cloud-amd64")
	return got
}

// tarFile is one entry of a pushed image's layer: a directory, or a host
// file streamed in.
type tarFile struct {
	name string
	dir  bool
	src  string
}

// pushFiles pushes a one-layer image holding files (owned by 107:107, as
// KubeVirt's containerDisks are) to ref. The layer is streamed from the
// host files, never held in memory.
func pushFiles(t *testing.T, ref string, files []tarFile) {
	t.Helper()
	opener := func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeTar(pw, files)) }()
		return pr, nil
	}
	layer, err := tarball.LayerFromOpener(opener, tarball.WithCompressionLevel(gzip.BestSpeed))
	require.NoError(t, err)
	img, err := mutate.AppendLayers(empty.Image, layer)
	require.NoError(t, err)
	require.NoError(t, ocitest.Push(ref, img, nil), "push %s", ref)
}

func writeTar(w io.Writer, files []tarFile) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		if f.dir {
			if err := tw.WriteHeader(&tar.Header{Name: f.name, Typeflag: tar.TypeDir, Mode: 0o555, Uid: 107, Gid: 107}); err != nil {
				return err
			}
			continue
		}
		if err := copyIntoTar(tw, f); err != nil {
			return err
		}
	}
	return tw.Close()
}

func copyIntoTar(tw *tar.Writer, f tarFile) error {
	in, err := os.Open(f.src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: f.name, Typeflag: tar.TypeReg, Mode: 0o440, Size: st.Size(), Uid: 107, Gid: 107}); err != nil {
		return err
	}
	if n, err := io.Copy(tw, in); err != nil || n != st.Size() {
		return fmt.Errorf("%s: copied %d of %d bytes: %v", f.src, n, st.Size(), err)
	}
	return nil
}
