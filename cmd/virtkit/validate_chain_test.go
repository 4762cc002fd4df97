package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/admission"
	validatecmd "github.com/virtkit/virtkit/cmd/virtkit/internal/validate"
	"github.com/virtkit/virtkit/store"
)

// validate reports, for every manifest, the field errors of the admission
// chain that cluster.Apply and the API server run (with the common
// instance types), in the same order.
func TestValidateRunsTheAdmissionChain(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	catalogue, err := virtkit.CommonInstancetypes()
	require.NoError(t, err)
	for _, o := range catalogue {
		virtkit.SetDefaults(o)
		require.NoError(t, st.Create(ctx, o))
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "admission", "testdata", "parity", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			manifest, err := os.ReadFile(f)
			require.NoError(t, err)
			objs, err := virtkit.Decode(strings.NewReader(string(manifest)))
			require.NoError(t, err)
			require.Len(t, objs, 1)
			obj := objs[0]
			aerr := admission.New(admission.Options{Lookup: st}).Admit(ctx, admission.AttributesFor(admission.Create, obj, nil))
			want := admission.FieldErrors(aerr)
			require.NotEmpty(t, want)
			var wantFindings []validatecmd.Finding
			for _, e := range want {
				wantFindings = append(wantFindings, validatecmd.Finding{File: f, Kind: obj.GetObjectKind().GroupVersionKind().Kind,
					Namespace: obj.GetNamespace(), Name: obj.GetName(), Field: e.Field, Type: validatecmd.FieldErrorKind(e.Type), Message: e.ErrorBody()})
			}

			out, err := runValidate(t, "", "-o", "json", "-f", f)
			require.Error(t, err)
			var got []validatecmd.Finding
			require.NoError(t, json.Unmarshal([]byte(out), &got))
			assert.Equal(t, wantFindings, got)
		})
	}
}

// A VM's inferFromVolume is resolved from a DataVolume given among the
// paths (without a namespace, as apply puts both in "default").
func TestValidateInfersFromGivenDataVolume(t *testing.T) {
	dir := t.TempDir()
	dv := `apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: root-dv
  labels: {instancetype.kubevirt.io/default-instancetype: u1.small}
spec:
  source: {http: {url: "http://127.0.0.1:1/disk.img"}}
  storage: {resources: {requests: {storage: 1Gi}}}
`
	vm := `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: inferred}
spec:
  runStrategy: Halted
  instancetype: {inferFromVolume: root}
  template:
    spec:
      domain:
        devices:
          disks: [{name: root}]
      volumes:
      - name: root
        dataVolume: {name: root-dv}
`
	dvFile, vmFile := filepath.Join(dir, "dv.yaml"), filepath.Join(dir, "vm.yaml")
	require.NoError(t, os.WriteFile(dvFile, []byte(dv), 0o600))
	require.NoError(t, os.WriteFile(vmFile, []byte(vm), 0o600))

	out, err := runValidate(t, "", "-f", dvFile, "-f", vmFile)
	require.NoError(t, err, out)
	assert.Equal(t, "OK DataVolume root-dv\nOK VirtualMachine inferred\n", out)

	out, err = runValidate(t, "", "-f", vmFile)
	require.Error(t, err)
	assert.Equal(t, "VirtualMachine inferred: spec.instancetype.inferFromVolume: Invalid: Invalid value: \"root\": DataVolume default/root-dv not found\n", out)
}
