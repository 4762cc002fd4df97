package main

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

// TestImageUploadToNodeProcess: the upload proxy of a `virtkit controller`
// alone (no node agents of its own) forwards virtctl image-upload's
// requests to the endpoint of the `virtkit node` process whose node holds
// the DataVolume, which writes the volume: an async upload (virtctl's
// choice) and a sync one each end in a succeeded DataVolume, and the
// node's refusal of a third upload to a filled volume reaches the
// uploader.
func TestImageUploadToNodeProcess(t *testing.T) {
	dir := t.TempDir()
	testenv.DiskFixture(t, dir, "disk", 4<<20, 1<<20, "virtkit-upload-marker")
	image, err := os.ReadFile(filepath.Join(dir, "disk.qcow2"))
	require.NoError(t, err)

	endpoints := etcdtest.StartServer(t)
	storeArg := "etcd://" + strings.TrimPrefix(endpoints[0], "http://")
	kc := filepath.Join(dir, "admin.kubeconfig")
	pki := filepath.Join(dir, "pki")
	ctrlOut := startCommand(t, true, "controller", "--store", storeArg, "--leader-ttl", "5s", "--api-addr", "127.0.0.1:0",
		"--api-cert-dir", pki, "--write-kubeconfig", kc, "--uploadproxy-addr", "127.0.0.1:0")
	re := regexp.MustCompile(`uploadproxy: (https://\S+)`)
	require.Eventually(t, func() bool {
		_, err := os.Stat(kc)
		return err == nil && re.MatchString(ctrlOut.String())
	}, 30*time.Second, 20*time.Millisecond, "the controller serves the API and the upload proxy: %s", ctrlOut)
	proxyURL := re.FindStringSubmatch(ctrlOut.String())[1]
	nodeOut := startCommand(t, true, "node", "--name", "upload-node-1", "--store", storeArg, "--hypervisor", "sim",
		"--heartbeat-interval", "200ms", "--status-interval", "200ms",
		"--endpoint-addr", "127.0.0.1:0", "--endpoint-cert-dir", pki, "--storage-dir", filepath.Join(dir, "node"))

	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	require.NoError(t, err)
	dyn := dynamic.NewForConfigOrDie(cfg)
	ctx := context.Background()
	newDV := func(name string) {
		dv := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataVolume",
			"metadata": map[string]any{"name": name, "namespace": "default"},
			"spec": map[string]any{"source": map[string]any{"upload": map[string]any{}},
				"storage": map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": "16Mi"}}}},
		}}
		_, err := dyn.Resource(dataVolumes).Namespace("default").Create(ctx, dv, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	phase := func(name string) string {
		got, err := dyn.Resource(dataVolumes).Namespace("default").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		p, _, _ := unstructured.NestedString(got.Object, "status", "phase")
		return p
	}

	t.Run("async", func(t *testing.T) {
		newDV("node-up-async")
		virtctlUpload(t, cfg, proxyURL, "default", "node-up-async", true, image)
		assert.Equal(t, "Succeeded", phase("node-up-async"))
	})
	t.Run("sync", func(t *testing.T) {
		newDV("node-up-sync")
		require.Eventually(t, func() bool { return phase("node-up-sync") == "UploadReady" }, 60*time.Second, 100*time.Millisecond)
		code, msg := postUpload(t, cfg, proxyURL, "node-up-sync", "/v1beta1/upload", image)
		require.Equal(t, http.StatusOK, code, "%s\ncontroller: %s\nnode: %s", msg, ctrlOut, nodeOut)
		assert.Equal(t, "Succeeded", phase("node-up-sync"), "a sync upload is answered once the volume is written")

		code, msg = postUpload(t, cfg, proxyURL, "node-up-sync", "/v1beta1/upload", image)
		assert.Equal(t, http.StatusServiceUnavailable, code, "the node refuses an upload to a filled volume: %s", msg)
		assert.Contains(t, msg, `is in phase "Succeeded"`, "the node's reason reaches the uploader")
	})
}

// postUpload asks for an upload token for DataVolume default/name and
// posts image to the proxy's path with it.
func postUpload(t *testing.T, cfg *rest.Config, proxyURL, name, path string, image []byte) (int, string) {
	t.Helper()
	token := uploadToken(t, cfg, "default", name)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // test server
	req, err := http.NewRequest(http.MethodPost, proxyURL+path, strings.NewReader(string(image)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/octet-stream")
	r, err := client.Do(req)
	require.NoError(t, err)
	defer r.Body.Close()
	msg, _ := io.ReadAll(r.Body)
	return r.StatusCode, string(msg)
}
