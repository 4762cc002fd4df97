package cluster_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/admission"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// parityCase is a manifest of admission/testdata/parity and the field
// errors the admission chain gives it against st.
func parityCase(t *testing.T, st store.Store, file string) (virtkit.Object, field.ErrorList) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "admission", "testdata", "parity", file))
	require.NoError(t, err)
	decode := func() virtkit.Object {
		objs, err := virtkit.Decode(strings.NewReader(string(b)))
		require.NoError(t, err)
		require.Len(t, objs, 1)
		return objs[0]
	}
	err = admission.New(admission.Options{Lookup: st}).Admit(context.Background(), admission.AttributesFor(admission.Create, decode(), nil))
	require.ErrorIs(t, err, admission.ErrInvalid)
	return decode(), admission.FieldErrors(err)
}

// Apply refuses what the admission chain refuses, with the same field
// errors in the same order (the API server and virtkit validate run the
// same chain): validation's and create admission's errors together, the
// instance type checks once the object is valid.
func TestApplyRunsTheAdmissionChain(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	catalogue, err := virtkit.CommonInstancetypes()
	require.NoError(t, err)
	require.NoError(t, cluster.Apply(ctx, st, catalogue...))
	files, err := filepath.Glob(filepath.Join("..", "admission", "testdata", "parity", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			obj, want := parityCase(t, st, filepath.Base(f))
			require.NotEmpty(t, want)
			err := cluster.Apply(ctx, st, obj)
			require.ErrorIs(t, err, cluster.ErrInvalidObject)
			assert.Equal(t, want, cluster.FieldErrors(err))
		})
	}
}

// An update is refused with the chain's field errors for an update: those
// of validation and of update admission together.
func TestApplyUpdateRunsTheAdmissionChain(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	manifest := func(hostname, disk string) virtkit.Object {
		objs, err := virtkit.Decode(strings.NewReader(`apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: web, namespace: default}
spec:
  hostname: ` + hostname + `
  domain:
    devices: {disks: [{name: ` + disk + `}]}
    memory: {guest: 128Mi}
  volumes:
  - name: root
    containerDisk: {image: quay.io/containerdisks/fedora:41}
`))
		require.NoError(t, err)
		return objs[0]
	}
	require.NoError(t, cluster.Apply(ctx, st, manifest("web", "root")))
	stored := &virtkit.VirtualMachineInstance{}
	require.NoError(t, st.Get(ctx, store.Key{Namespace: "default", Name: "web"}, stored))

	aerr := admission.New(admission.Options{Lookup: st}).Admit(ctx, admission.AttributesFor(admission.Update, manifest("other", "missing"), stored))
	want := admission.FieldErrors(aerr)
	var types []field.ErrorType
	for _, e := range want {
		types = append(types, e.Type)
	}
	require.Contains(t, types, field.ErrorTypeNotFound, "validation's error")
	require.Contains(t, types, field.ErrorTypeForbidden, "update admission's error")

	err := cluster.Apply(ctx, st, manifest("other", "missing"))
	require.ErrorIs(t, err, cluster.ErrInvalidObject)
	assert.Equal(t, want, cluster.FieldErrors(err))
}
