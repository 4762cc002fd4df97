//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package cloudimage_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cdi/importer"
	"github.com/virtkit/virtkit/cdi/upload"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/store"
)

// importsNode is the node of this file's clusters: not the other tests'
// nodeName, since an agent removes the domains of its node that its own
// store does not know, and other test processes may run on the same
// libvirtd at once.
const importsNode = "upload-img-a"

const (
	s3AccessKey = "AKIAVIRTKITREALSTACK"
	s3SecretKey = "virtkit-realstack-secret"
)

// TestRealDataVolumeS3Boot puts the cloud image's qcow2 in a bucket of an
// S3-compatible server on loopback (gofakes3; it does not check
// signatures itself, so the test checks that every request is signed with
// the Secret's access key) and applies a VirtualMachine whose
// dataVolumeTemplates import it with source.s3 and a secretRef: the node's
// importer converts it into node storage and the guest boots from it to
// its guest agent.
func TestRealDataVolumeS3Boot(t *testing.T) {
	parallelLane(t)
	img := requireCloudStack(t)
	if _, err := exec.LookPath("qemu-img"); err != nil {
		unavailable(t, "qemu-img not installed; "+howTo)
	}
	data, err := os.ReadFile(filepath.Join(img, "disk.qcow2"))
	require.NoError(t, err)
	backend := s3mem.New()
	require.NoError(t, backend.CreateBucket("images"))
	_, err = backend.PutObject("images", "debian/disk.qcow2", map[string]string{
		"Last-Modified": time.Now().UTC().Format(http.TimeFormat), "Content-Type": "application/octet-stream"},
		bytes.NewReader(data), int64(len(data)), nil)
	require.NoError(t, err)
	data = nil
	var unsigned atomic.Int32
	fake := gofakes3.New(backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Authorization"), "Credential="+s3AccessKey+"/") {
			unsigned.Add(1)
			http.Error(w, "unsigned", http.StatusForbidden)
			return
		}
		fake.ServeHTTP(w, r)
	}))
	defer srv.Close()
	vm := decodeVM(t, "testdata/datavolume-s3.yaml", "S3_HOST", strings.TrimPrefix(srv.URL, "http://"))

	c := startCluster(t, img, func(o *cluster.Options) { o.NodeNames = []string{importsNode} })
	ctx, cancel := context.WithTimeout(context.Background(), importTimeout+bootTimeout)
	defer cancel()
	destroyImportsLeftover(ctx, t, c, vm)
	t.Cleanup(func() { deleteVM(t, c, vm) })
	require.NoError(t, c.Store().Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-creds", Namespace: vm.Namespace},
		Data: map[string][]byte{importer.SecretKeyAccessKeyID: []byte(s3AccessKey), importer.SecretKeySecretKey: []byte(s3SecretKey)}}))

	start := time.Now()
	require.NoError(t, c.Apply(ctx, vm))
	dv := waitDataVolume(ctx, t, c, vm.Namespace, vm.Spec.DataVolumeTemplates[0].ObjectMeta.Name, virtkit.DataVolumeSucceeded)
	t.Logf("s3 import: %s", time.Since(start).Round(100*time.Millisecond))
	assert.Equal(t, virtkit.FormatDataVolumeProgress(100), dv.Status.Progress)
	assert.Zero(t, unsigned.Load(), "every request to the S3 server was signed")

	got := waitImportedGuest(ctx, t, c, vm, start)
	xml, err := c.Node(got.Status.NodeName).Hypervisor.XML(ctx, domain.DomainName(got))
	require.NoError(t, err)
	assert.Contains(t, xml, filepath.Join("dv", vm.Namespace, dv.Name+".img"))
}

// waitImportedGuest waits for the VM's guest (waitDebianGuest), first
// logging why its VMI ended if it did.
func waitImportedGuest(ctx context.Context, t *testing.T, c *cluster.Cluster, vm *virtkit.VirtualMachine, start time.Time) *virtkit.VirtualMachineInstance {
	t.Helper()
	v, err := c.WaitForVMI(ctx, vm.Namespace, vm.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && (v.IsFinal() || v.IsRunning())
	})
	require.NoError(t, err)
	if v.IsFinal() {
		t.Logf("VMI ended: %s %s; conditions %+v", v.Status.Phase, v.Status.Reason, v.Status.Conditions)
	}
	return waitDebianGuest(ctx, t, c, vm.Namespace, vm.Name, start)
}

// TestRealDataVolumeUploadBoot applies a VirtualMachine whose
// dataVolumeTemplates have an upload source, waits for the DataVolume to
// be UploadReady, uploads the cloud image's qcow2 through the upload proxy
// with a token (as virtctl image-upload does, to upload-async), and the
// guest boots from the volume to its guest agent.
func TestRealDataVolumeUploadBoot(t *testing.T) {
	parallelLane(t)
	img := requireCloudStack(t)
	if _, err := exec.LookPath("qemu-img"); err != nil {
		unavailable(t, "qemu-img not installed; "+howTo)
	}
	vm := decodeVM(t, "testdata/datavolume-upload.yaml", "upload-up", "upload-up")
	dvName := vm.Spec.DataVolumeTemplates[0].ObjectMeta.Name

	c := startCluster(t, img, func(o *cluster.Options) { o.NodeNames = []string{importsNode} })
	key, err := upload.NewKey()
	require.NoError(t, err)
	tokens := &upload.Tokens{Key: key}
	proxy, err := upload.NewProxy(upload.ProxyOptions{Tokens: tokens, Receiver: c})
	require.NoError(t, err)
	psrv := httptest.NewTLSServer(proxy)
	defer psrv.Close()
	defer proxy.Close()

	ctx, cancel := context.WithTimeout(context.Background(), importTimeout+bootTimeout)
	defer cancel()
	destroyImportsLeftover(ctx, t, c, vm)
	t.Cleanup(func() { deleteVM(t, c, vm) })

	start := time.Now()
	require.NoError(t, c.Apply(ctx, vm))
	waitDataVolume(ctx, t, c, vm.Namespace, dvName, virtkit.DataVolumeUploadReady)

	token, err := tokens.Issue(vm.Namespace, dvName)
	require.NoError(t, err)
	f, err := os.Open(filepath.Join(img, "disk.qcow2"))
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, psrv.URL+upload.PathUploadAsync, f)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/octet-stream")
	req.ContentLength = st.Size()
	resp, err := psrv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	t.Logf("upload sent: %s", time.Since(start).Round(100*time.Millisecond))

	dv := waitDataVolume(ctx, t, c, vm.Namespace, dvName, virtkit.DataVolumeSucceeded)
	t.Logf("upload processed: %s", time.Since(start).Round(100*time.Millisecond))
	got := waitImportedGuest(ctx, t, c, vm, start)
	xml, err := c.Node(got.Status.NodeName).Hypervisor.XML(ctx, domain.DomainName(got))
	require.NoError(t, err)
	assert.Contains(t, xml, filepath.Join("dv", vm.Namespace, dv.Name+".img"))
}

// destroyImportsLeftover removes a guest an interrupted run left behind
// under the name the VM's VMI will have.
func destroyImportsLeftover(ctx context.Context, t *testing.T, c *cluster.Cluster, vm *virtkit.VirtualMachine) {
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name = vm.Namespace, vm.Name
	hv := c.Node(importsNode).Hypervisor
	if err := hv.Destroy(ctx, domain.DomainName(vmi)); err == nil {
		t.Logf("destroyed a leftover %s", domain.DomainName(vmi))
	}
	_ = hv.Undefine(ctx, domain.DomainName(vmi))
}

// waitDataVolume waits until the DataVolume reaches phase (failing on
// Failed) within importTimeout.
func waitDataVolume(ctx context.Context, t *testing.T, c *cluster.Cluster, namespace, name string, phase virtkit.DataVolumePhase) *virtkit.DataVolume {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, importTimeout)
	defer cancel()
	dv := &virtkit.DataVolume{}
	for {
		err := c.Store().Get(ctx, store.Key{Namespace: namespace, Name: name}, dv)
		if err == nil && dv.Status.Phase == phase {
			return dv
		}
		if err == nil && dv.Status.Phase == virtkit.DataVolumeFailed {
			t.Fatalf("DataVolume %s/%s failed: %+v", namespace, name, dv.Status.Conditions)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("DataVolume %s/%s not %s within %s; last status %+v", namespace, name, phase, importTimeout, dv.Status)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
