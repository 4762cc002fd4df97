package virtkit

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// KubeVirt still serves kubevirt.io/v1alpha3 with v1's schema: such a
// manifest decodes, and is stored and encoded, as v1.
func TestDecodeServedV1alpha3(t *testing.T) {
	in := []byte(`apiVersion: kubevirt.io/v1alpha3
kind: VirtualMachineInstance
metadata: {name: old}
spec:
  domain:
    devices: {}
    resources: {requests: {memory: 64Mi}}
`)
	objs, err := DecodeBytes(in)
	require.NoError(t, err)
	require.Len(t, objs, 1)
	vmi, ok := objs[0].(*VirtualMachineInstance)
	require.True(t, ok)
	assert.Equal(t, "kubevirt.io/v1", vmi.APIVersion)
	var out bytes.Buffer
	require.NoError(t, Encode(&out, vmi))
	assert.Contains(t, out.String(), "apiVersion: kubevirt.io/v1\n")

	_, err = DecodeBytes(bytes.Replace(in, []byte("v1alpha3"), []byte("v1alpha2"), 1))
	assert.ErrorIs(t, err, ErrUnknownKind, "only the versions KubeVirt serves are accepted")
}

// KubeVirt's CRD schema requires spec.domain and spec.domain.devices; a
// typed object cannot tell a missing devices from an empty one, so Decode
// reports it.
func TestDecodeRequiredByKubeVirtSchema(t *testing.T) {
	for _, tc := range []struct{ name, in, path string }{
		{"vmi without devices", "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata: {name: a}\nspec: {domain: {}}\n", "spec.domain.devices"},
		{"vmi without domain", "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata: {name: a}\nspec: {}\n", "spec.domain"},
		{"vm template without devices", "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: a}\nspec: {runStrategy: Always, template: {spec: {domain: {}}}}\n", "spec.template.spec.domain.devices"},
		{"replica set template without devices", "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstanceReplicaSet\nmetadata: {name: a}\nspec: {template: {spec: {domain: {}}}}\n", "spec.template.spec.domain.devices"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeBytes([]byte(tc.in))
			require.Error(t, err)
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			assert.Equal(t, tc.path, de.Path)
			assert.ErrorIs(t, err, ErrInvalidManifest)
		})
	}
}
