package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/store"
)

const apiInstancetype = `apiVersion: instancetype.kubevirt.io/v1beta1
kind: VirtualMachineClusterInstancetype
metadata: {name: api-small}
spec:
  cpu: {guest: 2}
  memory: {guest: 1Gi}
`

const apiLabelledDV = `apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: api-root
  namespace: default
  labels: {instancetype.kubevirt.io/default-instancetype: api-small}
spec:
  source: {http: {url: "http://127.0.0.1:1/disk.img"}}
  storage: {resources: {requests: {storage: 1Gi}}}
`

// apiVM is a VM naming an instance type; edit changes its spec before it is
// posted.
func apiVM(t *testing.T, name string, edit func(spec map[string]any)) []byte {
	t.Helper()
	var vm map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(`apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: NAME, namespace: default}
spec:
  runStrategy: Halted
  instancetype: {name: api-small}
  template:
    spec:
      domain: {devices: {}}
      volumes:
      - name: root
        dataVolume: {name: api-root}
`), &vm))
	vm["metadata"].(map[string]any)["name"] = name
	if edit != nil {
		edit(vm["spec"].(map[string]any))
	}
	b, err := json.Marshal(vm)
	require.NoError(t, err)
	return b
}

// VMs created or updated through the API go through the same instance type
// admission as cluster.Apply: inferFromVolume is resolved from the
// DataVolume's labels, a missing instance type and a template that sets
// what the instance type sets are refused at their paths.
func TestInstancetypeAdmissionThroughTheAPI(t *testing.T) {
	ts := startServer(t, newStore(t), apiserver.GenericOptions{})
	tr, err := rest.TransportFor(ts.admin())
	require.NoError(t, err)
	client := &http.Client{Transport: tr}
	send := func(method, path string, body []byte) (int, metav1.Status) {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), method, ts.URL+path, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var st metav1.Status
		_ = json.NewDecoder(resp.Body).Decode(&st)
		return resp.StatusCode, st
	}
	post := func(path, manifest string) {
		t.Helper()
		b, err := yaml.YAMLToJSON([]byte(manifest))
		require.NoError(t, err)
		code, st := send(http.MethodPost, path, b)
		require.Equal(t, http.StatusCreated, code, "%+v", st)
	}
	post("/apis/instancetype.kubevirt.io/v1beta1/virtualmachineclusterinstancetypes", apiInstancetype)
	post("/apis/cdi.kubevirt.io/v1beta1/namespaces/default/datavolumes", apiLabelledDV)
	const vms = "/apis/kubevirt.io/v1/namespaces/default/virtualmachines"

	tests := []struct {
		name  string
		edit  func(spec map[string]any)
		paths []string // nil: created
	}{
		{name: "known instancetype"},
		{name: "missing instancetype", edit: func(spec map[string]any) {
			spec["instancetype"] = map[string]any{"name": "nowhere"}
		}, paths: []string{"spec.instancetype.name"}},
		{name: "template sets the instancetype's cpu", edit: func(spec map[string]any) {
			dom := spec["template"].(map[string]any)["spec"].(map[string]any)["domain"].(map[string]any)
			dom["cpu"] = map[string]any{"sockets": 4}
		}, paths: []string{"spec.template.spec.domain.cpu.sockets"}},
		{name: "inferred from the DataVolume", edit: func(spec map[string]any) {
			spec["instancetype"] = map[string]any{"inferFromVolume": "root"}
		}},
		{name: "inferred from an unlabelled volume", edit: func(spec map[string]any) {
			spec["instancetype"] = map[string]any{"inferFromVolume": "root"}
			vols := spec["template"].(map[string]any)["spec"].(map[string]any)["volumes"].([]any)
			vols[0].(map[string]any)["dataVolume"] = map[string]any{"name": "not-there"}
		}, paths: []string{"spec.instancetype.inferFromVolume"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "api-it-" + string(rune('a'+i))
			code, st := send(http.MethodPost, vms, apiVM(t, name, tt.edit))
			if tt.paths == nil {
				require.Equal(t, http.StatusCreated, code, "%+v", st)
				stored := &virtkit.VirtualMachine{}
				require.NoError(t, ts.Store.Get(context.Background(), store.Key{Namespace: "default", Name: name}, stored))
				require.NotNil(t, stored.Spec.Instancetype)
				assert.Equal(t, "api-small", stored.Spec.Instancetype.Name)
				assert.Empty(t, stored.Spec.Instancetype.InferFromVolume)
				return
			}
			require.Equal(t, http.StatusUnprocessableEntity, code, "%+v", st)
			assert.Equal(t, metav1.StatusReasonInvalid, st.Reason)
			require.NotNil(t, st.Details)
			var got []string
			for _, c := range st.Details.Causes {
				got = append(got, c.Field)
			}
			assert.Equal(t, tt.paths, got)
			err := ts.Store.Get(context.Background(), store.Key{Namespace: "default", Name: name}, &virtkit.VirtualMachine{})
			assert.ErrorIs(t, err, store.ErrNotFound, "nothing stored")
		})
	}

	// An update that makes the template conflict is refused the same way.
	stored := &virtkit.VirtualMachine{}
	require.NoError(t, ts.Store.Get(context.Background(), store.Key{Namespace: "default", Name: "api-it-a"}, stored))
	body := apiVM(t, "api-it-a", func(spec map[string]any) {
		dom := spec["template"].(map[string]any)["spec"].(map[string]any)["domain"].(map[string]any)
		dom["cpu"] = map[string]any{"sockets": 4}
	})
	var vm map[string]any
	require.NoError(t, json.Unmarshal(body, &vm))
	vm["metadata"].(map[string]any)["resourceVersion"] = stored.ResourceVersion
	body, err = json.Marshal(vm)
	require.NoError(t, err)
	code, st := send(http.MethodPut, vms+"/api-it-a", body)
	require.Equal(t, http.StatusUnprocessableEntity, code, "%+v", st)
	require.NotNil(t, st.Details)
	require.Len(t, st.Details.Causes, 1)
	assert.Equal(t, "spec.template.spec.domain.cpu.sockets", st.Details.Causes[0].Field)
}
