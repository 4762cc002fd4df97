package controller_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

func TestCloneTargetName(t *testing.T) {
	a := controller.CloneTargetName("db", "uid-1")
	assert.True(t, strings.HasPrefix(a, "db-clone-"), a)
	assert.Len(t, a, len("db-clone-")+5)
	assert.Equal(t, a, controller.CloneTargetName("db", "uid-1"), "the same clone always gets the same name")
	assert.NotEqual(t, a, controller.CloneTargetName("db", "uid-2"))
	long := controller.CloneTargetName(strings.Repeat("a", 250), "uid-1")
	assert.True(t, strings.HasPrefix(long, "clone-object-"), long)
}

func TestCloneTargetVM(t *testing.T) {
	src := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "src",
		Labels:      map[string]string{"app": "a", "secret": "s"},
		Annotations: map[string]string{"note": "n", virtkit.LastRestoreUIDAnnotation: "old"}},
		Spec: virtkit.VirtualMachineSpec{Template: &virtkit.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"t": "1"}, Annotations: map[string]string{"ta": "2"}},
			Spec: virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{
				Firmware: &virtkit.Firmware{UUID: "u", Serial: "s1"},
				Devices: virtkit.Devices{Interfaces: []virtkit.Interface{
					{Name: "a", MacAddress: "02:00:00:00:00:01"}, {Name: "b", MacAddress: "02:00:00:00:00:02"}}},
			}}}}}
	serial := "s2"
	tests := []struct {
		name     string
		spec     virtkit.VirtualMachineCloneSpec
		labels   map[string]string
		annots   map[string]string
		tmplLbls map[string]string
		macs     []string
		serial   string
	}{
		{"no filters copy everything; MACs and serial are not copied",
			virtkit.VirtualMachineCloneSpec{},
			map[string]string{"app": "a", "secret": "s"}, map[string]string{"note": "n", virtkit.LastRestoreUIDAnnotation: "mark"},
			map[string]string{"t": "1"}, []string{"", ""}, "clone-uid"},
		{"filters, a new MAC for one interface and a serial",
			virtkit.VirtualMachineCloneSpec{LabelFilters: []string{"*", "!secret"}, AnnotationFilters: []string{"!*"},
				Template:        virtkit.VirtualMachineCloneTemplateFilters{LabelFilters: []string{"x"}},
				NewMacAddresses: map[string]string{"b": "02:00:00:00:00:0b"}, NewSMBiosSerial: &serial},
			map[string]string{"app": "a"}, map[string]string{virtkit.LastRestoreUIDAnnotation: "mark"},
			nil, []string{"", "02:00:00:00:00:0b"}, "s2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := src.DeepCopy()
			target.Name = "dst"
			target.Annotations = map[string]string{virtkit.LastRestoreUIDAnnotation: "mark"}
			cl := &virtkit.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{UID: "clone-uid"}, Spec: tt.spec}
			controller.CloneTargetVM(cl, src, target)
			assert.Equal(t, tt.labels, target.Labels)
			assert.Equal(t, tt.annots, target.Annotations)
			assert.Equal(t, tt.tmplLbls, target.Spec.Template.ObjectMeta.Labels)
			d := target.Spec.Template.Spec.Domain
			assert.Equal(t, tt.macs, []string{d.Devices.Interfaces[0].MacAddress, d.Devices.Interfaces[1].MacAddress})
			assert.Equal(t, tt.serial, d.Firmware.Serial)
			assert.Equal(t, virtkit.FirmwareUUIDForVM("dst"), d.Firmware.UUID)
		})
	}
}

// A clone deleted before it finished leaves no snapshot or restore behind;
// those of other clones and the user's own stay.
func TestCloneGoneCollectsItsObjects(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	yes := true
	owned := func(clone string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: virtkit.CloneSchemeGroupVersion.String(), Kind: virtkit.KindVirtualMachineClone,
			Name: clone, UID: "u-" + types.UID(clone), Controller: &yes}}
	}
	g := virtkit.GroupName
	vm := virtkit.TypedLocalObjectReference{APIGroup: &g, Kind: virtkit.KindVirtualMachine, Name: "vm"}
	for _, s := range []*virtkit.VirtualMachineSnapshot{
		{ObjectMeta: metav1.ObjectMeta{Name: "tmp-snapshot-1", Namespace: "default", OwnerReferences: owned("gone")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "tmp-snapshot-2", Namespace: "default", OwnerReferences: owned("other")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "default"}},
	} {
		s.Spec.Source = vm
		require.NoError(t, st.Create(ctx, s))
	}
	require.NoError(t, st.Create(ctx, &virtkit.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Name: "tmp-restore-1", Namespace: "default", OwnerReferences: owned("gone")},
		Spec: virtkit.VirtualMachineRestoreSpec{Target: vm, VirtualMachineSnapshotName: "tmp-snapshot-1"}}))
	r, err := controller.NewCloneReconciler(controller.ReconcilerOptions{Store: st})
	require.NoError(t, err)
	_, err = r.Reconcile(ctx, reconcile.Request{Namespace: "default", Name: "gone"})
	require.NoError(t, err)
	exists := func(obj virtkit.Object, name string) bool {
		return st.Get(ctx, store.Key{Namespace: "default", Name: name}, obj) == nil
	}
	assert.False(t, exists(&virtkit.VirtualMachineSnapshot{}, "tmp-snapshot-1"))
	assert.False(t, exists(&virtkit.VirtualMachineRestore{}, "tmp-restore-1"))
	assert.True(t, exists(&virtkit.VirtualMachineSnapshot{}, "tmp-snapshot-2"), "another clone's")
	assert.True(t, exists(&virtkit.VirtualMachineSnapshot{}, "mine"), "the user's")
}
