package apply

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
	"github.com/virtkit/virtkit/store"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		args    []string
		wantErr string
	}{
		{name: "files", opts: Options{Files: []string{"vm.yaml"}}},
		{name: "no files", opts: Options{}, wantErr: "-f: required (a file, a directory or - for standard input)"},
		{name: "arguments", opts: Options{Files: []string{"vm.yaml"}}, args: []string{"vm"},
			wantErr: `unknown command "vm": apply takes its manifests from -f`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			err := o.Complete(tt.args)
			if err == nil {
				err = o.Validate()
			}
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.NotNil(t, o.Report)
				return
			}
			require.EqualError(t, err, tt.wantErr)
		})
	}
}

const vm = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: web
spec:
  runStrategy: Halted
  template:
    spec:
      domain:
        devices: {}
        resources: {requests: {memory: 64Mi}}
`

// Created, then unchanged, then configured; an invalid object fails with
// its field path while the others are still applied.
func TestRun(t *testing.T) {
	st, err := store.NewMemoryWithOptions(store.Options{StartResourceVersion: 1})
	require.NoError(t, err)
	e, err := kube.StartEmbedded(t.Context(), kube.EmbeddedOptions{Store: st})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	objects := func(manifests ...string) []*unstructured.Unstructured {
		var out []*unstructured.Unstructured
		for _, m := range manifests {
			u := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal([]byte(m), &u.Object))
			out = append(out, u)
		}
		return out
	}
	var out, errOut bytes.Buffer
	o := &Options{Out: &out, ErrOut: &errOut, Files: []string{"-"}, API: e.Client, Namespace: "default", Objects: objects(vm)}
	require.NoError(t, o.Complete(nil))
	require.NoError(t, o.Validate())
	require.NoError(t, o.Run(t.Context()))
	assert.Equal(t, "virtualmachine.kubevirt.io/web created\n", out.String())

	out.Reset()
	bad := strings.Replace(strings.Replace(vm, "name: web", "name: bad", 1), "memory: 64Mi", "memory: -1", 1)
	o.Objects = objects(bad, strings.Replace(vm, "runStrategy: Halted", "runStrategy: Always", 1))
	require.ErrorIs(t, o.Run(t.Context()), ErrReported)
	assert.Contains(t, errOut.String(), "spec.template.spec.domain.resources.requests.memory")
	assert.Equal(t, "virtualmachine.kubevirt.io/web configured\n", out.String())
	require.NoError(t, st.Get(t.Context(), store.Key{Namespace: "default", Name: "web"}, &virtkit.VirtualMachine{}))
}

func TestRunNeedsTransport(t *testing.T) {
	o := &Options{Files: []string{"-"}}
	require.NoError(t, o.Complete(nil))
	assert.ErrorIs(t, o.Run(t.Context()), ErrNoTransport)
}
