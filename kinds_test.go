package virtkit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func TestKinds(t *testing.T) {
	require.Len(t, KnownKinds(), 25)
	for _, gvk := range KnownKinds() {
		obj, err := NewObject(gvk)
		require.NoError(t, err)
		assert.Equal(t, gvk, obj.GetObjectKind().GroupVersionKind())
		got, ok := GVKOf(obj)
		assert.True(t, ok)
		assert.Equal(t, gvk, got)
		list, err := NewObjectList(gvk)
		require.NoError(t, err)
		assert.Equal(t, gvk.Kind+"List", list.GetObjectKind().GroupVersionKind().Kind)
		// DeepCopyObject returns the same kind.
		assert.IsType(t, obj, obj.DeepCopyObject())
	}
	assert.False(t, IsNamespaced(MigrationsSchemeGroupVersion.WithKind(KindMigrationPolicy)))
	assert.False(t, IsNamespaced(VirtkitSchemeGroupVersion.WithKind(KindNode)))
	assert.True(t, IsNamespaced(SchemeGroupVersion.WithKind(KindVirtualMachineInstance)))
	assert.True(t, IsNamespaced(CDISchemeGroupVersion.WithKind(KindDataVolume)))
	assert.True(t, IsNamespaced(EventsSchemeGroupVersion.WithKind(KindEvent)))
	assert.True(t, IsNamespaced(CNISchemeGroupVersion.WithKind(KindNetworkAttachmentDefinition)))
	assert.False(t, IsNamespaced(VirtkitSchemeGroupVersion.WithKind(KindIPLease)))
	assert.True(t, IsNamespaced(SchemeGroupVersion.WithKind(KindKubeVirt)), "KubeVirt's installation object lives in a namespace")
	assert.False(t, IsNamespaced(InstancetypeSchemeGroupVersion.WithKind(KindVirtualMachineClusterInstancetype)))
	assert.False(t, IsNamespaced(InstancetypeSchemeGroupVersion.WithKind(KindVirtualMachineClusterPreference)))
	assert.True(t, IsNamespaced(InstancetypeSchemeGroupVersion.WithKind(KindVirtualMachineInstancetype)))
	assert.True(t, IsNamespaced(AppsSchemeGroupVersion.WithKind(KindControllerRevision)))
	assert.True(t, IsNamespaced(CloneSchemeGroupVersion.WithKind(KindVirtualMachineClone)))
	assert.True(t, IsNamespaced(CoreSchemeGroupVersion.WithKind(KindConfigMap)))
	assert.True(t, IsNamespaced(CoreSchemeGroupVersion.WithKind(KindSecret)))
	assert.True(t, IsNamespaced(CoreSchemeGroupVersion.WithKind(KindServiceAccount)))

	_, err := NewObject(schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachinePool"})
	assert.ErrorIs(t, err, ErrUnknownKind)
	_, err = NewObjectList(schema.GroupVersionKind{Kind: "Pod", Version: "v1"})
	assert.ErrorIs(t, err, ErrUnknownKind)
}

func TestReservedLabels(t *testing.T) {
	l := ReservedLabels()
	assert.Contains(t, l, NodeNameLabel)
	l[0] = "changed"
	assert.NotEqual(t, "changed", ReservedLabels()[0], "callers get a copy")
}

func TestDeepCopyIsDeep(t *testing.T) {
	vmi := decodeOne[*VirtualMachineInstance](t, validVMIManifest)
	vmi.Status.ActivePods = map[types.UID]string{"a": "n1"}
	vmi.Status.MigrationState = &VirtualMachineInstanceMigrationState{Engine: &MigrationEngineStatus{
		PredictedTotalSeconds: ptrTo(1.5),
		Decisions:             []MigrationEngineDecision{{Action: "PreCopy", Numbers: map[string]string{"r": "0.5"}}},
	}}
	cp := vmi.DeepCopy()
	cp.Spec.Domain.Devices.Disks[0].Name = "changed"
	cp.Status.ActivePods["a"] = "n2"
	*cp.Status.MigrationState.Engine.PredictedTotalSeconds = 9
	cp.Status.MigrationState.Engine.Decisions[0].Numbers["r"] = "2"
	assert.Equal(t, "root", vmi.Spec.Domain.Devices.Disks[0].Name)
	assert.Equal(t, "n1", vmi.Status.ActivePods["a"])
	assert.Equal(t, 1.5, *vmi.Status.MigrationState.Engine.PredictedTotalSeconds)
	assert.Equal(t, "0.5", vmi.Status.MigrationState.Engine.Decisions[0].Numbers["r"])
}
