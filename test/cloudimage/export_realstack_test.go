//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package cloudimage_test

import (
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// exportNamespace and exportVMName name the export test's VM (and so its
// libvirt domain).
const (
	exportNamespace = "export-real"
	exportVMName    = "export-vm"
)

// exportVM boots the cloud image (a qcow2 overlay per VMI) with a second
// disk, a DataVolume imported over HTTP from the test's qcow2.
const exportVM = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: export-vm
  namespace: export-real
spec:
  runStrategy: Always
  dataVolumeTemplates:
  - metadata:
      name: export-vm-data
    spec:
      source:
        http:
          url: http://HTTP_HOST/data.qcow2
      storage:
        resources:
          requests:
            storage: 64Mi
  template:
    spec:
      terminationGracePeriodSeconds: 5
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
            disk: {bus: virtio}
          - name: data
            disk: {bus: virtio}
      volumes:
      - name: rootdisk
        containerDisk:
          image: localhost/virtkit/debian-cloud:12
      - name: data
        dataVolume:
          name: export-vm-data
`

// TestRealExportDownloadsIdenticalDisk imports a qcow2 (random data in
// several places, holes between) into a DataVolume on the real node's
// storage, runs a VM on libvirt/QEMU with it as its second disk, and
// exports the VM: while the VM runs the export waits (Pending, InUse,
// "is running"); once the VM is stopped the export server serves the
// disk over HTTPS. The raw and the gzipped downloads, fetched with the
// token from the export's Secret and verified with the CA from its
// status, are each identical to the source qcow2 by qemu-img compare.
func TestRealExportDownloadsIdenticalDisk(t *testing.T) {
	parallelLane(t)
	img := requireCloudStack(t)
	if _, err := exec.LookPath("qemu-img"); err != nil {
		unavailable(t, "qemu-img not installed; "+howTo)
	}
	src := t.TempDir()
	srcQcow2 := exportFixture(t, src, 48<<20)
	srv := httptest.NewServer(http.FileServer(http.Dir(src)))
	defer srv.Close()
	vm := decodeVMBytes(t, strings.ReplaceAll(exportVM, "HTTP_HOST", strings.TrimPrefix(srv.URL, "http://")))

	c := startCluster(t, img)
	ctx, cancel := context.WithTimeout(context.Background(), importTimeout+bootTimeout)
	defer cancel()
	destroyLeftover(ctx, t, c, vm)
	t.Cleanup(func() { deleteVM(t, c, vm) })
	require.NoError(t, c.Apply(ctx, vm))

	_, err := c.WaitForVMI(ctx, exportNamespace, exportVMName, cluster.VMIPhaseIs(virtkit.Running))
	require.NoError(t, err, "the VM runs with its imported disk")

	// An export of a running VM waits.
	exp := &virtkit.VirtualMachineExport{}
	exp.APIVersion, exp.Kind = virtkit.ExportSchemeGroupVersion.String(), virtkit.KindVirtualMachineExport
	exp.Namespace, exp.Name = exportNamespace, "export-vm-export"
	group := virtkit.GroupName
	exp.Spec.Source = virtkit.TypedLocalObjectReference{APIGroup: &group, Kind: virtkit.KindVirtualMachine, Name: exportVMName}
	require.NoError(t, c.Apply(ctx, exp))
	key := store.Key{Namespace: exportNamespace, Name: exp.Name}
	newExp := func() *virtkit.VirtualMachineExport { return &virtkit.VirtualMachineExport{} }
	pending, err := cluster.WaitFor(ctx, c.Store(), key, newExp, &virtkit.VirtualMachineExportList{},
		func(e *virtkit.VirtualMachineExport, found bool) bool {
			return found && e.Status != nil && readyCondition(e).Reason == virtkit.ExportReasonInUse
		})
	require.NoError(t, err)
	assert.Equal(t, virtkit.ExportPending, pending.Status.Phase)
	assert.Equal(t, fmt.Sprintf("Virtual Machine %s/%s is running", exportNamespace, exportVMName), readyCondition(pending).Message)

	// Stop the VM: the export becomes Ready.
	stopVM(ctx, t, c, vm)
	_, err = c.WaitForVMI(ctx, exportNamespace, exportVMName, cluster.Gone[*virtkit.VirtualMachineInstance]())
	require.NoError(t, err)
	ready, err := cluster.WaitFor(ctx, c.Store(), key, newExp, &virtkit.VirtualMachineExportList{},
		func(e *virtkit.VirtualMachineExport, found bool) bool {
			return found && e.Status != nil && e.Status.Phase == virtkit.ExportReady
		})
	require.NoError(t, err)

	sec := &corev1.Secret{}
	require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: exportNamespace, Name: *ready.Status.TokenSecretRef}, sec))
	token := string(sec.Data[virtkit.ExportTokenKey])
	require.NotEmpty(t, token)
	link := ready.Status.Links.External
	require.NotNil(t, link)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM([]byte(link.Cert)), "status cert is the CA")
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}

	out := t.TempDir()
	for _, f := range []virtkit.ExportVolumeFormat{virtkit.ExportFormatRaw, virtkit.ExportFormatGzip} {
		url := exportURL(t, link, "export-vm-data", f)
		dst := filepath.Join(out, "download-"+string(f)+".img")
		start := time.Now()
		n := downloadExport(ctx, t, client, url, token, dst, f == virtkit.ExportFormatGzip)
		t.Logf("%s download: %d bytes of raw image in %s", f, n, time.Since(start).Round(10*time.Millisecond))
		cmp, err := exec.CommandContext(ctx, "qemu-img", "compare", "-f", "qcow2", "-F", "raw", srcQcow2, dst).CombinedOutput()
		require.NoError(t, err, "qemu-img compare %s %s: %s", srcQcow2, dst, cmp)
		assert.Contains(t, string(cmp), "Images are identical")
	}

	// Without the token: 401.
	resp, err := client.Get(exportURL(t, link, "export-vm-data", virtkit.ExportFormatRaw))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

// exportFixture writes a size-byte raw image with random data in a few
// places and holes elsewhere, converts it to data.qcow2 in dir and
// returns the qcow2's path.
func exportFixture(t *testing.T, dir string, size int64) string {
	t.Helper()
	raw := filepath.Join(dir, "data.raw")
	f, err := os.Create(raw)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(size))
	for _, off := range []int64{0, 3 << 20, 17<<20 + 4096, size - 1<<20} {
		b := make([]byte, 1<<20)
		_, err := rand.Read(b)
		require.NoError(t, err)
		_, err = f.WriteAt(b, off)
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
	qcow := filepath.Join(dir, "data.qcow2")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "qemu-img", "convert", "-f", "raw", "-O", "qcow2", raw, qcow).CombinedOutput()
	require.NoError(t, err, "qemu-img convert: %s", out)
	require.NoError(t, os.Remove(raw))
	return qcow
}

func decodeVMBytes(t *testing.T, manifest string) *virtkit.VirtualMachine {
	t.Helper()
	objs, err := virtkit.DecodeBytes([]byte(manifest))
	require.NoError(t, err)
	require.Len(t, objs, 1)
	vm, ok := objs[0].(*virtkit.VirtualMachine)
	require.True(t, ok)
	return vm
}

// stopVM sets the VM's run strategy to Halted, retrying on conflicts.
func stopVM(ctx context.Context, t *testing.T, c *cluster.Cluster, vm *virtkit.VirtualMachine) {
	t.Helper()
	halted := virtkit.RunStrategyHalted
	for {
		cur := &virtkit.VirtualMachine{}
		require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: vm.Namespace, Name: vm.Name}, cur))
		cur.Spec.RunStrategy = &halted
		cur.Spec.Running = nil
		err := c.Store().Update(ctx, cur)
		if err == nil {
			return
		}
		require.ErrorIs(t, err, store.ErrConflict)
	}
}

func readyCondition(e *virtkit.VirtualMachineExport) virtkit.Condition {
	for _, c := range e.Status.Conditions {
		if c.Type == virtkit.ExportConditionReady {
			return c
		}
	}
	return virtkit.Condition{}
}

func exportURL(t *testing.T, l *virtkit.VirtualMachineExportLink, volume string, f virtkit.ExportVolumeFormat) string {
	t.Helper()
	for _, v := range l.Volumes {
		for _, ff := range v.Formats {
			if v.Name == volume && ff.Format == f {
				return ff.URL
			}
		}
	}
	t.Fatalf("no %s link for %s in %+v", f, volume, l.Volumes)
	return ""
}

// downloadExport GETs url with the token into dst (gunzipping a gzip
// download) and returns the raw image's size.
func downloadExport(ctx context.Context, t *testing.T, client *http.Client, url, token, dst string, gz bool) int64 {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set(virtkit.ExportTokenHeader, token)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var body io.Reader = resp.Body
	if gz {
		zr, err := gzip.NewReader(resp.Body)
		require.NoError(t, err)
		body = zr
	}
	f, err := os.Create(dst)
	require.NoError(t, err)
	n, err := io.Copy(f, body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	require.False(t, errors.Is(err, context.DeadlineExceeded), "download timed out")
	require.NoError(t, err)
	return n
}
