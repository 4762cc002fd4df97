package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
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
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/virtkit/virtkit/internal/testenv"
)

var dataVolumes = schema.GroupVersionResource{Group: "cdi.kubevirt.io", Version: "v1beta1", Resource: "datavolumes"}

// startUploadController runs `virtkit controller --api-addr
// --uploadproxy-addr` in-process and returns its admin kubeconfig and the
// upload proxy's URL.
func startUploadController(t *testing.T) (kubeconfig, proxyURL string) {
	t.Helper()
	dir := t.TempDir()
	kc := filepath.Join(dir, "admin.kubeconfig")
	cmd := newRootCmd()
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"controller", "--nodes", "1", "--api-addr", "127.0.0.1:0", "--api-cert-dir", filepath.Join(dir, "pki"),
		"--write-kubeconfig", kc, "--uploadproxy-addr", "127.0.0.1:0"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Error("controller did not stop")
		}
	})
	re := regexp.MustCompile(`uploadproxy: (https://\S+)`)
	require.Eventually(t, func() bool {
		_, err := os.Stat(kc)
		return err == nil && strings.Contains(out.String(), "api: https://") && re.MatchString(out.String())
	}, 30*time.Second, 20*time.Millisecond, "the controller starts the API and the upload proxy: %s", &out)
	return kc, re.FindStringSubmatch(out.String())[1]
}

// virtctlUpload performs what `virtctl image-upload` does once the
// DataVolume or claim exists: wait until the claim's upload pod is ready
// (the DataVolume's phase UploadReady, or the claim's
// cdi.kubevirt.io/storage.pod.ready annotation), ask the API for an upload
// token, look for the async endpoint with HEAD, POST the image with the
// token, then wait for the claim's cdi.kubevirt.io/storage.pod.phase to
// be Succeeded.
func virtctlUpload(t *testing.T, cfg *rest.Config, proxyURL, ns, name string, viaDV bool, image []byte) {
	t.Helper()
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	require.Eventually(t, func() bool {
		if viaDV {
			dv, err := dyn.Resource(dataVolumes).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			phase, _, _ := unstructured.NestedString(dv.Object, "status", "phase")
			return phase == "UploadReady"
		}
		pvc, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && pvc.Annotations["cdi.kubevirt.io/storage.pod.ready"] == "true"
	}, 60*time.Second, 100*time.Millisecond, "the upload becomes ready")

	token := uploadToken(t, cfg, ns, name)

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // virtctl --insecure
	send := func(method, path string, body io.Reader, size int64) int {
		req, err := http.NewRequest(method, proxyURL+path, body)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/octet-stream")
		req.ContentLength = size
		r, err := client.Do(req)
		require.NoError(t, err)
		msg, _ := io.ReadAll(r.Body)
		r.Body.Close()
		require.Less(t, r.StatusCode, 500, "%s", msg)
		return r.StatusCode
	}
	path := "/v1beta1/upload"
	if send(http.MethodHead, "/v1beta1/upload-async", nil, 0) == http.StatusOK {
		path = "/v1beta1/upload-async"
	}
	require.Equal(t, http.StatusOK, send(http.MethodPost, path, strings.NewReader(string(image)), int64(len(image))))
	require.Eventually(t, func() bool {
		pvc, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return pvc.Annotations["cdi.kubevirt.io/storage.pod.phase"] == "Succeeded"
	}, 60*time.Second, 100*time.Millisecond, "processing completes")
}

// uploadToken asks the API for an upload token for claim ns/name with an
// UploadTokenRequest, as CDI's typed client posts it.
func uploadToken(t *testing.T, cfg *rest.Config, ns, name string) string {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(cfg)
	body := `{"apiVersion":"upload.cdi.kubevirt.io/v1beta1","kind":"UploadTokenRequest","metadata":{"name":"token-for-virtctl","namespace":"` + ns +
		`","creationTimestamp":null},"spec":{"pvcName":"` + name + `"},"status":{}}`
	raw, err := kube.CoreV1().RESTClient().Post().AbsPath("/apis/upload.cdi.kubevirt.io/v1beta1/namespaces", ns, "uploadtokenrequests").
		SetHeader("Content-Type", "application/json").Body([]byte(body)).DoRaw(context.Background())
	require.NoError(t, err, "%s", raw)
	var resp struct {
		Kind   string `json:"kind"`
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	require.NoError(t, json.Unmarshal(raw, &resp))
	require.Equal(t, "UploadTokenRequest", resp.Kind)
	require.NotEmpty(t, resp.Status.Token)
	return resp.Status.Token
}

// TestImageUploadAPI follows virtctl image-upload's requests against
// `virtkit controller --uploadproxy-addr`: the CDIConfig naming the proxy,
// dv (a DataVolume with an upload source) and pvc (a claim annotated as an
// upload target), each ending in a succeeded DataVolume; a token is good
// for its claim only.
func TestImageUploadAPI(t *testing.T) {
	dir := t.TempDir()
	testenv.DiskFixture(t, dir, "disk", 4<<20, 1<<20, "virtkit-upload-marker")
	image, err := os.ReadFile(filepath.Join(dir, "disk.qcow2"))
	require.NoError(t, err)
	kc, proxyURL := startUploadController(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	require.NoError(t, err)
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)

	t.Run("cdiconfig", func(t *testing.T) {
		// Without --uploadproxy-url virtctl reads the proxy's URL here.
		raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/apis/cdi.kubevirt.io/v1beta1/cdiconfigs/config").DoRaw(ctx)
		require.NoError(t, err, "%s", raw)
		var cfg struct {
			Kind   string `json:"kind"`
			Status struct {
				UploadProxyURL string `json:"uploadProxyURL"`
			} `json:"status"`
		}
		require.NoError(t, json.Unmarshal(raw, &cfg))
		assert.Equal(t, "CDIConfig", cfg.Kind)
		assert.Equal(t, proxyURL, cfg.Status.UploadProxyURL)
		_, err = kube.CoreV1().RESTClient().Get().AbsPath("/apis/cdi.kubevirt.io/v1beta1/cdiconfigs/other").DoRaw(ctx)
		require.True(t, apierrors.IsNotFound(err), "%v", err)
	})
	t.Run("dv", func(t *testing.T) {
		_, err := kube.CoreV1().PersistentVolumeClaims("default").Get(ctx, "up-dv", metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "virtctl looks for the claim first: %v", err)
		dv := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataVolume",
			"metadata": map[string]any{"name": "up-dv", "namespace": "default"},
			"spec": map[string]any{"source": map[string]any{"upload": map[string]any{}}, "contentType": "kubevirt",
				"storage": map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": "16Mi"}}}},
		}}
		_, err = dyn.Resource(dataVolumes).Namespace("default").Create(ctx, dv, metav1.CreateOptions{})
		require.NoError(t, err)
		virtctlUpload(t, cfg, proxyURL, "default", "up-dv", true, image)
		got, err := dyn.Resource(dataVolumes).Namespace("default").Get(ctx, "up-dv", metav1.GetOptions{})
		require.NoError(t, err)
		phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
		assert.Equal(t, "Succeeded", phase)
	})
	t.Run("pvc", func(t *testing.T) {
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "up-pvc", Annotations: map[string]string{
				"cdi.kubevirt.io/storage.upload.target": "", "cdi.kubevirt.io/storage.contentType": "kubevirt"}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}}},
		}
		created, err := kube.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, "up-pvc", created.Name)
		virtctlUpload(t, cfg, proxyURL, "default", "up-pvc", false, image)

		pvc.Name, pvc.Annotations = "plain", nil
		_, err = kube.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "only upload claims are created: %v", err)
	})
	t.Run("token names one claim", func(t *testing.T) {
		raw, err := kube.CoreV1().RESTClient().Post().AbsPath("/apis/upload.cdi.kubevirt.io/v1beta1/namespaces/default/uploadtokenrequests").
			SetHeader("Content-Type", "application/json").Body([]byte(`{"spec":{"pvcName":"up-dv"}}`)).DoRaw(ctx)
		require.NoError(t, err)
		var resp struct {
			Status struct{ Token string } `json:"status"`
		}
		require.NoError(t, json.Unmarshal(raw, &resp))
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // test server
		req, err := http.NewRequest(http.MethodPost, proxyURL+"/v1beta1/upload", strings.NewReader(string(image)))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+resp.Status.Token)
		r, err := client.Do(req)
		require.NoError(t, err)
		msg, _ := io.ReadAll(r.Body)
		r.Body.Close()
		assert.Equal(t, http.StatusServiceUnavailable, r.StatusCode, "the volume was filled already: %s", msg)

		_, err = kube.CoreV1().RESTClient().Post().AbsPath("/apis/upload.cdi.kubevirt.io/v1beta1/namespaces/default/uploadtokenrequests").
			SetHeader("Content-Type", "application/json").Body([]byte(`{"spec":{}}`)).DoRaw(ctx)
		require.True(t, apierrors.IsInvalid(err), "spec.pvcName is required: %v", err)
	})
}

// --uploadproxy-addr needs the API (which issues the tokens).
func TestControllerUploadProxyFlags(t *testing.T) {
	_, errOut, code := virtkitProcess(t, "controller", "--nodes", "1", "--uploadproxy-addr", "127.0.0.1:0")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errOut, "--uploadproxy-addr: need --api-addr")
}
