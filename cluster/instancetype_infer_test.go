package cluster_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

const inferDVs = `apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: fedora-dv
  labels:
    instancetype.kubevirt.io/default-instancetype: u1.medium
    instancetype.kubevirt.io/default-preference: fedora
spec:
  source: {blank: {}}
  storage: {resources: {requests: {storage: 64Mi}}}
---
apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: plain-dv
spec:
  source: {blank: {}}
  storage: {resources: {requests: {storage: 64Mi}}}
`

const inferVM = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: inferred
spec:
  runStrategy: Halted
  instancetype:
    inferFromVolume: root
  preference:
    inferFromVolume: root
  template:
    spec:
      domain:
        devices:
          disks:
          - name: root
      volumes:
      - name: root
        dataVolume:
          name: fedora-dv
`

// inferFromVolume takes the instancetype and preference from the labels of
// the volume's DataVolume (a template of the VM, or one in the store; a
// persistentVolumeClaim is the claim of the DataVolume of its name); a
// volume that names none is refused at inferFromVolume, or the matcher
// dropped under the Ignore policy.
func TestInferInstancetypeFromVolume(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := store.NewMemory()
	common, err := os.ReadFile(filepath.Join("..", "testdata", "instancetypes", "common.yaml"))
	require.NoError(t, err)
	require.NoError(t, cluster.Apply(ctx, st, decodeAll(t, common)...))
	require.NoError(t, cluster.Apply(ctx, st, decodeAll(t, []byte(inferDVs))...))
	ignore := virtkit.IgnoreInferFromVolumeFailure

	tests := []struct {
		name     string
		edit     func(vm *virtkit.VirtualMachine)
		it, pref *string // the names inferred; nil: the matcher is dropped
		paths    []string
	}{
		{name: "dataVolume in the store", edit: func(*virtkit.VirtualMachine) {},
			it: ptr("u1.medium"), pref: ptr("fedora")},
		{name: "persistentVolumeClaim of a DataVolume", edit: func(vm *virtkit.VirtualMachine) {
			vm.Spec.Template.Spec.Volumes[0].VolumeSource = virtkit.VolumeSource{
				PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{ClaimName: "fedora-dv"}}
		}, it: ptr("u1.medium"), pref: ptr("fedora")},
		{name: "dataVolumeTemplate", edit: func(vm *virtkit.VirtualMachine) {
			dvt := decodeAll(t, []byte(inferDVs))[1].(*virtkit.DataVolume)
			vm.Spec.DataVolumeTemplates = []virtkit.DataVolumeTemplateSpec{{Spec: dvt.Spec}}
			vm.Spec.DataVolumeTemplates[0].ObjectMeta.Name = "tmpl-dv"
			vm.Spec.DataVolumeTemplates[0].ObjectMeta.Labels = map[string]string{
				virtkit.DefaultInstancetypeLabel: "u1.small", virtkit.DefaultPreferenceLabel: "fedora"}
			vm.Spec.Template.Spec.Volumes[0].DataVolume.Name = "tmpl-dv"
		}, it: ptr("u1.small"), pref: ptr("fedora")},
		{name: "unlabelled", edit: func(vm *virtkit.VirtualMachine) {
			vm.Spec.Template.Spec.Volumes[0].DataVolume.Name = "plain-dv"
		}, paths: []string{"spec.instancetype.inferFromVolume", "spec.preference.inferFromVolume"}},
		{name: "unlabelled, ignored", edit: func(vm *virtkit.VirtualMachine) {
			vm.Spec.Template.Spec.Volumes[0].DataVolume.Name = "plain-dv"
			vm.Spec.Instancetype.InferFromVolumeFailurePolicy = &ignore
			vm.Spec.Preference.InferFromVolumeFailurePolicy = &ignore
		}},
		{name: "missing DataVolume", edit: func(vm *virtkit.VirtualMachine) {
			vm.Spec.Template.Spec.Volumes[0].DataVolume.Name = "nowhere"
			vm.Spec.Preference = nil
		}, paths: []string{"spec.instancetype.inferFromVolume"}},
		{name: "not a volume with labels", edit: func(vm *virtkit.VirtualMachine) {
			vm.Spec.Template.Spec.Volumes[0].VolumeSource = virtkit.VolumeSource{
				ContainerDisk: &virtkit.ContainerDiskSource{Image: "quay.io/containerdisks/fedora:41"}}
			vm.Spec.Preference = nil
		}, paths: []string{"spec.instancetype.inferFromVolume"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := decodeAll(t, []byte(inferVM))[0].(*virtkit.VirtualMachine)
			vm.Name = "inferred-" + string(rune('a'+i))
			tt.edit(vm)
			err := cluster.Apply(ctx, st, vm)
			if tt.paths != nil {
				require.ErrorIs(t, err, cluster.ErrInvalidObject)
				var got []string
				for _, e := range cluster.FieldErrors(err) {
					got = append(got, e.Field)
				}
				assert.Equal(t, tt.paths, got)
				return
			}
			require.NoError(t, err)
			stored := &virtkit.VirtualMachine{}
			require.NoError(t, st.Get(ctx, store.Key{Namespace: "default", Name: vm.Name}, stored))
			if tt.it == nil {
				assert.Nil(t, stored.Spec.Instancetype)
			} else {
				assert.Equal(t, &virtkit.InstancetypeMatcher{Name: *tt.it, Kind: virtkit.KindVirtualMachineClusterInstancetype}, stored.Spec.Instancetype)
			}
			if tt.pref == nil {
				assert.Nil(t, stored.Spec.Preference)
			} else {
				assert.Equal(t, &virtkit.PreferenceMatcher{Name: *tt.pref, Kind: virtkit.KindVirtualMachineClusterPreference}, stored.Spec.Preference)
			}
		})
	}
}
