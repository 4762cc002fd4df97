package virtkit

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestApplyVMPatches(t *testing.T) {
	halted := RunStrategyHalted
	vm := &VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns", Labels: map[string]string{"app": "a"},
		Annotations: map[string]string{"a": "b"}},
		Spec: VirtualMachineSpec{RunStrategy: &halted, Template: &VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}}}}}
	tests := []struct {
		name    string
		patches []string
		check   func(t *testing.T, out *VirtualMachine)
		wantErr bool
	}{
		{name: "no patches is a copy", check: func(t *testing.T, out *VirtualMachine) { assert.Equal(t, vm, out) }},
		{name: "labels and spec", patches: []string{
			`{"op": "replace", "path": "/metadata/labels/app", "value": "b"}`,
			`{"op": "add", "path": "/metadata/annotations/note", "value": "restored"}`,
			`{"op": "replace", "path": "/spec/template/metadata/labels/app", "value": "b"}`,
			`{"op": "replace", "path": "/spec/runStrategy", "value": "Always"}`,
		}, check: func(t *testing.T, out *VirtualMachine) {
			assert.Equal(t, "b", out.Labels["app"])
			assert.Equal(t, "restored", out.Annotations["note"])
			assert.Equal(t, "b", out.Spec.Template.ObjectMeta.Labels["app"])
			assert.Equal(t, RunStrategyAlways, *out.Spec.RunStrategy)
			assert.Equal(t, "vm", out.Name)
		}},
		{name: "a failed test", patches: []string{`{"op": "test", "path": "/spec/runStrategy", "value": "Always"}`}, wantErr: true},
		{name: "a missing path", patches: []string{`{"op": "remove", "path": "/spec/template/spec/domain/cpu"}`}, wantErr: true},
		{name: "an unknown field", patches: []string{`{"op": "add", "path": "/spec/noSuchField", "value": 1}`}, wantErr: true},
		{name: "outside spec", patches: []string{`{"op": "replace", "path": "/metadata/name", "value": "x"}`}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := vm.DeepCopy()
			out, err := ApplyVMPatches(vm, tt.patches)
			assert.Equal(t, before, vm, "the input is not changed")
			if tt.wantErr {
				require.Error(t, err)
				assert.True(t, errors.Is(err, ErrVMPatch), "%v", err)
				return
			}
			require.NoError(t, err)
			tt.check(t, out)
		})
	}
}

func TestAdmitRestoreInPlace(t *testing.T) {
	yes := true
	uid := "uid-vm"
	snap := &VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Spec:   VirtualMachineSnapshotSpec{Source: TypedLocalObjectReference{Kind: KindVirtualMachine, Name: "vm"}},
		Status: &VirtualMachineSnapshotStatus{ReadyToUse: &yes, SourceUID: &uid}}
	halted := RunStrategyHalted
	vm := func(name, uid string) *VirtualMachine {
		return &VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)}, Spec: VirtualMachineSpec{RunStrategy: &halted}}
	}
	restore := func(target string) *VirtualMachineRestore {
		p := VolumeRestorePolicyInPlace
		return &VirtualMachineRestore{Spec: VirtualMachineRestoreSpec{VirtualMachineSnapshotName: "s", VolumeRestorePolicy: &p,
			Target: TypedLocalObjectReference{Kind: KindVirtualMachine, Name: target}}}
	}
	tests := []struct {
		name   string
		target string
		vm     *VirtualMachine
		want   []wantFieldError
	}{
		{"the source VM, stopped", "vm", vm("vm", uid), nil},
		{"the source VM, deleted", "vm", nil, nil},
		{"another VM of the source's name", "vm", vm("vm", "other"), []wantFieldError{{"spec.volumeRestorePolicy", field.ErrorTypeForbidden}}},
		{"a new VM", "new", nil, []wantFieldError{{"spec.volumeRestorePolicy", field.ErrorTypeForbidden}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFieldErrors(t, AdmitRestore(restore(tt.target), snap, tt.vm), tt.want)
		})
	}
}
