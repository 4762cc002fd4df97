package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/store"
)

// send does one request as the admin and returns its status and body.
func send(t *testing.T, client *http.Client, method, url string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, out
}

// virtctl's subresources: the server version, expand-spec of a given and
// of a stored VM, volume hotplug, and answers naming what is not
// supported instead of 404s.
func TestKubeVirtSubresources(t *testing.T) {
	ts := startServer(t, newStore(t), apiserver.GenericOptions{})
	client := rawClient(t, ts)
	const sub = "/apis/subresources.kubevirt.io/v1"

	code, body := send(t, client, http.MethodGet, ts.URL+sub+"/version", nil)
	require.Equal(t, http.StatusOK, code, "%s", body)
	var info map[string]string
	require.NoError(t, json.Unmarshal(body, &info))
	assert.NotEmpty(t, info["gitVersion"])
	assert.NotEmpty(t, info["goVersion"])
	assert.Contains(t, info, "gitCommit")

	itJSON, err := yaml.ToJSON([]byte(apiInstancetype))
	require.NoError(t, err)
	code, body = send(t, client, http.MethodPost, ts.URL+"/apis/instancetype.kubevirt.io/v1beta1/virtualmachineclusterinstancetypes", itJSON)
	require.Equal(t, http.StatusCreated, code, "%s", body)
	vmJSON := apiVM(t, "expand", func(spec map[string]any) {
		tmpl := spec["template"].(map[string]any)["spec"].(map[string]any)
		tmpl["volumes"] = []any{map[string]any{"name": "root", "containerDisk": map[string]any{"image": "img"}}}
	})
	expanded := func(body []byte) {
		t.Helper()
		var vm virtkit.VirtualMachine
		require.NoError(t, json.Unmarshal(body, &vm), "%s", body)
		assert.Nil(t, vm.Spec.Instancetype)
		require.NotNil(t, vm.Spec.Template.Spec.Domain.CPU)
		assert.EqualValues(t, 2, vm.Spec.Template.Spec.Domain.CPU.Sockets)
		require.NotNil(t, vm.Spec.Template.Spec.Domain.Memory)
		assert.Equal(t, "1Gi", vm.Spec.Template.Spec.Domain.Memory.Guest.String())
	}
	code, body = send(t, client, http.MethodPut, ts.URL+sub+"/namespaces/default/expand-spec", vmJSON)
	require.Equal(t, http.StatusOK, code, "%s", body)
	expanded(body)
	code, body = send(t, client, http.MethodPost, ts.URL+"/apis/kubevirt.io/v1/namespaces/default/virtualmachines", vmJSON)
	require.Equal(t, http.StatusCreated, code, "%s", body)
	code, body = send(t, client, http.MethodGet, ts.URL+sub+"/namespaces/default/virtualmachines/expand/expand-spec", nil)
	require.Equal(t, http.StatusOK, code, "%s", body)
	expanded(body)
	code, _ = send(t, client, http.MethodGet, ts.URL+sub+"/namespaces/default/virtualmachines/nowhere/expand-spec", nil)
	assert.Equal(t, http.StatusNotFound, code)

	// Volume hotplug with virtctl's bodies: a VM queues the request on its
	// status; a VMI that does not exist is not found; an empty body names
	// what is missing, as KubeVirt's API does.
	for _, verb := range []string{"addvolume", "removevolume"} {
		code, body = send(t, client, http.MethodPut, ts.URL+sub+"/namespaces/default/virtualmachines/expand/"+verb, []byte(`{}`))
		assert.Equal(t, http.StatusBadRequest, code, "%s", verb)
		assert.Contains(t, string(body), "VolumeOptions requires name to be set")
	}
	addBody := []byte(`{"name":"hp","disk":{"name":"hp","disk":{"bus":"scsi"}},"volumeSource":{"persistentVolumeClaim":{"claimName":"hp-claim","hotpluggable":true}}}`)
	code, body = send(t, client, http.MethodPut, ts.URL+sub+"/namespaces/default/virtualmachines/expand/addvolume", addBody)
	require.Equal(t, http.StatusAccepted, code, "%s", body)
	queued := &virtkit.VirtualMachine{}
	require.NoError(t, ts.Store.Get(t.Context(), store.Key{Namespace: "default", Name: "expand"}, queued))
	require.Len(t, queued.Status.VolumeRequests, 1)
	assert.Equal(t, "hp", queued.Status.VolumeRequests[0].AddVolumeOptions.Name)
	code, body = send(t, client, http.MethodPut, ts.URL+sub+"/namespaces/default/virtualmachines/expand/addvolume", addBody)
	assert.Equal(t, http.StatusConflict, code, "%s", body)
	assert.Contains(t, string(body), "add volume request for volume [hp] already exists")
	code, body = send(t, client, http.MethodPut, ts.URL+sub+"/namespaces/default/virtualmachines/expand/removevolume", []byte(`{"name":"root"}`))
	assert.Equal(t, http.StatusConflict, code, "%s", body)
	assert.Contains(t, string(body), "Unable to remove volume [root] because it is not hotpluggable")
	code, _ = send(t, client, http.MethodPut, ts.URL+sub+"/namespaces/default/virtualmachineinstances/expand/addvolume", addBody)
	assert.Equal(t, http.StatusNotFound, code)

	// A VM's portforward goes the way of its VMI's: this server has no
	// way to the node agents.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+sub+"/namespaces/default/virtualmachines/expand/portforward/22", nil)
	require.NoError(t, err)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	resp, err := client.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}

const apiReplicaSet = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstanceReplicaSet
metadata: {name: rs, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: rs}}
  template:
    metadata: {labels: {app: rs}}
    spec:
      domain: {devices: {}, resources: {requests: {memory: 64Mi}}}
`

var vmirsGVR = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstancereplicasets"}

// The scale subresource of VMI replica sets: client-go reads it and
// kubectl scale sets the replicas through it.
func TestReplicaSetScale(t *testing.T) {
	st := newStore(t)
	ts := startServer(t, st, apiserver.GenericOptions{})
	client := rawClient(t, ts)
	rsJSON, err := yaml.ToJSON([]byte(apiReplicaSet))
	require.NoError(t, err)
	code, body := send(t, client, http.MethodPost, ts.URL+"/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstancereplicasets", rsJSON)
	require.Equal(t, http.StatusCreated, code, "%s", body)

	dc, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)
	scale, err := dc.Resource(vmirsGVR).Namespace("default").Get(t.Context(), "rs", metav1.GetOptions{}, "scale")
	require.NoError(t, err)
	assert.Equal(t, "Scale", scale.GetKind())
	replicas, _, _ := unstructuredInt(scale.Object, "spec", "replicas")
	assert.EqualValues(t, 1, replicas)

	rs := &virtkit.VirtualMachineInstanceReplicaSet{}
	get := func() int32 {
		require.NoError(t, st.Get(context.Background(), store.Key{Namespace: "default", Name: "rs"}, rs))
		return *rs.Spec.Replicas
	}
	_, err = dc.Resource(vmirsGVR).Namespace("default").Patch(t.Context(), "rs", "application/merge-patch+json",
		[]byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}, "scale")
	require.NoError(t, err)
	assert.EqualValues(t, 2, get())

	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, apiserver.WriteKubeconfig(kc, apiserver.Kubeconfig{
		Server: ts.URL, CAPEM: ts.Certs.CAPEM, User: apiserver.AdminUser, CertPEM: ts.Certs.AdminCert, KeyPEM: ts.Certs.AdminKey,
	}))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", kc, "-n", "default", "scale", "vmirs", "rs", "--replicas=3")
	cmd.Env = append(os.Environ(), "KUBECONFIG=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.EqualValues(t, 3, get())
}

func unstructuredInt(obj map[string]any, path ...string) (int64, bool, error) {
	cur := any(obj)
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return 0, false, nil
		}
		cur = m[p]
	}
	n, ok := cur.(int64)
	return n, ok, nil
}
