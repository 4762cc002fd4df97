package apply

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		args    []string
		wantErr string
	}{
		{name: "store", opts: Options{Files: []string{"vm.yaml"}}},
		{name: "api with -n", opts: Options{Files: []string{"vm.yaml"}, UseAPI: true, NamespaceSet: true}},
		{name: "no files", opts: Options{}, wantErr: "-f: required (a file, a directory or - for standard input)"},
		{name: "store with -n", opts: Options{Files: []string{"vm.yaml"}, NamespaceSet: true},
			wantErr: "-n: needs the API (a kubeconfig); with --store a manifest's namespace, else default, is used"},
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

// Through a store: created, then configured; an invalid object fails with
// its field path while the others are still applied.
func TestRunStore(t *testing.T) {
	st := store.NewMemory()
	good, err := virtkit.DecodeBytes([]byte(vm))
	require.NoError(t, err)
	bad, err := virtkit.DecodeBytes([]byte(strings.Replace(strings.Replace(vm, "name: web", "name: bad", 1),
		"memory: 64Mi", "memory: -1", 1)))
	require.NoError(t, err)

	var out bytes.Buffer
	o := &Options{Out: &out, Files: []string{"-"}, Store: st, StoreObjects: good}
	require.NoError(t, o.Complete(nil))
	require.NoError(t, o.Validate())
	require.NoError(t, o.Run(t.Context()))
	assert.Equal(t, "virtualmachine/web created\n", out.String())

	out.Reset()
	again, err := virtkit.DecodeBytes([]byte(vm)) // Run wrote the first copies' resourceVersion
	require.NoError(t, err)
	o.StoreObjects = append(bad, again...)
	err = o.Run(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.template.spec.domain.resources.requests.memory")
	assert.Equal(t, "virtualmachine/web configured\n", out.String())
	require.NoError(t, st.Get(t.Context(), store.Key{Namespace: "default", Name: "web"}, &virtkit.VirtualMachine{}))
}

func TestRunNeedsTransport(t *testing.T) {
	for _, useAPI := range []bool{false, true} {
		o := &Options{Files: []string{"-"}, UseAPI: useAPI}
		require.NoError(t, o.Complete(nil))
		assert.ErrorIs(t, o.Run(t.Context()), ErrNoTransport)
	}
}
