package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/admission"
	"github.com/virtkit/virtkit/apiserver"
)

// A create through the API is refused with the causes the admission chain
// (the one cluster.Apply and virtkit validate run) gives: same fields,
// types and messages, in the same order.
func TestCreateRunsTheAdmissionChain(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	catalogue, err := virtkit.CommonInstancetypes()
	require.NoError(t, err)
	for _, o := range catalogue {
		virtkit.SetDefaults(o)
		require.NoError(t, st.Create(ctx, o))
	}
	ts := startServer(t, st, apiserver.GenericOptions{})
	tr, err := rest.TransportFor(ts.admin())
	require.NoError(t, err)
	client := &http.Client{Transport: tr}
	paths := map[string]string{
		"VirtualMachine":         "/apis/kubevirt.io/v1/namespaces/default/virtualmachines",
		"VirtualMachineInstance": "/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstances",
	}
	files, err := filepath.Glob(filepath.Join("..", "admission", "testdata", "parity", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			manifest, err := os.ReadFile(f)
			require.NoError(t, err)
			objs, err := virtkit.Decode(strings.NewReader(string(manifest)))
			require.NoError(t, err)
			require.Len(t, objs, 1)
			aerr := admission.New(admission.Options{Lookup: st}).Admit(ctx, admission.AttributesFor(admission.Create, objs[0], nil))
			want := admission.FieldErrors(aerr)
			require.NotEmpty(t, want)
			var wantCauses []metav1.StatusCause
			for _, e := range want {
				wantCauses = append(wantCauses, metav1.StatusCause{Type: metav1.CauseType(e.Type), Message: e.ErrorBody(), Field: e.Field})
			}

			body, err := yaml.YAMLToJSON(manifest)
			require.NoError(t, err)
			path := paths[objs[0].GetObjectKind().GroupVersionKind().Kind]
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+path, bytes.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			var status metav1.Status
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&status))
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%+v", status)
			require.NotNil(t, status.Details)
			assert.Equal(t, wantCauses, status.Details.Causes)
		})
	}
}
