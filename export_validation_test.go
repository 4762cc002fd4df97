package virtkit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
)

func TestValidateExport(t *testing.T) {
	str := func(s string) *string { return &s }
	base := func() *virtkit.VirtualMachineExport {
		return &virtkit.VirtualMachineExport{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "default"},
			Spec: virtkit.VirtualMachineExportSpec{Source: virtkit.TypedLocalObjectReference{
				APIGroup: str(virtkit.GroupName), Kind: virtkit.KindVirtualMachine, Name: "vm"}}}
	}
	tests := []struct {
		name   string
		mutate func(*virtkit.VirtualMachineExport)
		path   string
		typ    field.ErrorType
	}{
		{"vm", func(*virtkit.VirtualMachineExport) {}, "", ""},
		{"snapshot", func(e *virtkit.VirtualMachineExport) {
			e.Spec.Source = virtkit.TypedLocalObjectReference{APIGroup: str(virtkit.SnapshotGroupName), Kind: virtkit.KindVirtualMachineSnapshot, Name: "s"}
		}, "", ""},
		{"pvc without group", func(e *virtkit.VirtualMachineExport) {
			e.Spec.Source = virtkit.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "p"}
		}, "", ""},
		{"pvc with empty group", func(e *virtkit.VirtualMachineExport) {
			e.Spec.Source = virtkit.TypedLocalObjectReference{APIGroup: str(""), Kind: "PersistentVolumeClaim", Name: "p"}
		}, "", ""},
		{"unknown kind", func(e *virtkit.VirtualMachineExport) { e.Spec.Source.Kind = "Pod" }, "spec.source.kind", field.ErrorTypeNotSupported},
		{"vm without group", func(e *virtkit.VirtualMachineExport) { e.Spec.Source.APIGroup = nil }, "spec.source.apiGroup", field.ErrorTypeRequired},
		{"vm in the wrong group", func(e *virtkit.VirtualMachineExport) { e.Spec.Source.APIGroup = str("snapshot.kubevirt.io") },
			"spec.source.apiGroup", field.ErrorTypeNotSupported},
		{"no name", func(e *virtkit.VirtualMachineExport) { e.Spec.Source.Name = "" }, "spec.source.name", field.ErrorTypeRequired},
		{"bad secret name", func(e *virtkit.VirtualMachineExport) { e.Spec.TokenSecretRef = str("Not_A_Name") },
			"spec.tokenSecretRef", field.ErrorTypeInvalid},
		{"negative ttl", func(e *virtkit.VirtualMachineExport) { e.Spec.TTLDuration = &metav1.Duration{Duration: -time.Second} },
			"spec.ttlDuration", field.ErrorTypeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := base()
			tt.mutate(e)
			errs := virtkit.Validate(e)
			if tt.path == "" {
				assert.Empty(t, errs)
				return
			}
			require.NotEmpty(t, errs)
			assert.Equal(t, tt.path, errs[0].Field)
			assert.Equal(t, tt.typ, errs[0].Type)
		})
	}
}

func TestDecodeExportManifest(t *testing.T) {
	objs, err := virtkit.DecodeBytes([]byte(`apiVersion: export.kubevirt.io/v1
kind: VirtualMachineExport
metadata:
  name: example-export
  namespace: example
spec:
  source:
    apiGroup: ""
    kind: PersistentVolumeClaim
    name: example-pvc
  tokenSecretRef: example-token
  ttlDuration: 1h
`))
	require.NoError(t, err)
	require.Len(t, objs, 1)
	e, ok := objs[0].(*virtkit.VirtualMachineExport)
	require.True(t, ok)
	assert.Equal(t, time.Hour, e.Spec.TTLDuration.Duration)
	assert.Empty(t, virtkit.Validate(e))
	assert.Equal(t, []string{"vmexport", "vmexports"}, virtkit.ShortNames(virtkit.KindVirtualMachineExport))

	// The deprecated export.kubevirt.io/v1beta1 has v1's schema and
	// decodes as v1.
	old, err := virtkit.DecodeBytes([]byte("apiVersion: export.kubevirt.io/v1beta1\nkind: VirtualMachineExport\n" +
		"metadata: {name: old, namespace: example}\nspec: {source: {kind: VirtualMachine, name: vm1}}\n"))
	require.NoError(t, err)
	require.Len(t, old, 1)
	assert.Equal(t, "export.kubevirt.io/v1", old[0].GetObjectKind().GroupVersionKind().GroupVersion().String())

	// The spec is immutable after creation.
	changed := e.DeepCopy()
	changed.Spec.TTLDuration = &metav1.Duration{Duration: 2 * time.Hour}
	errs := virtkit.AdmitUpdate(changed, e)
	require.NotEmpty(t, errs)
	assert.Equal(t, field.ErrorTypeForbidden, errs[0].Type)
}
