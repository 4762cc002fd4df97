package apply

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube/kubetest"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/manifest"
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
		{name: "files and namespace", opts: Options{Files: []string{"vm.yaml"}, Namespace: "team-a"}},
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

// Through the API served over a store: created, then unchanged, then
// configured; an invalid object fails with its field path while the others
// are still applied.
func TestRun(t *testing.T) {
	st := kubetest.NewMemory(t)
	api := kubetest.Serve(t, st)
	good, err := manifest.Read(strings.NewReader(vm), []string{"-"})
	require.NoError(t, err)
	bad, err := manifest.Read(strings.NewReader(strings.Replace(strings.Replace(vm, "name: web", "name: bad", 1),
		"memory: 64Mi", "memory: -1", 1)), []string{"-"})
	require.NoError(t, err)

	var out, errOut bytes.Buffer
	o := &Options{Out: &out, ErrOut: &errOut, Files: []string{"-"}, Namespace: "default", API: api, Objects: good}
	require.NoError(t, o.Complete(nil))
	require.NoError(t, o.Validate())
	require.NoError(t, o.Run(t.Context()), errOut.String())
	assert.Equal(t, "virtualmachine.kubevirt.io/web created\n", out.String())

	out.Reset()
	o.Objects = good
	require.NoError(t, o.Run(t.Context()))
	assert.Equal(t, "virtualmachine.kubevirt.io/web unchanged\n", out.String())

	out.Reset()
	changed, err := manifest.Read(strings.NewReader(strings.Replace(vm, "memory: 64Mi", "memory: 128Mi", 1)), []string{"-"})
	require.NoError(t, err)
	o.Objects = append(bad, changed...)
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
