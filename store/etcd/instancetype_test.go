package etcd_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
)

// Instancetypes, preferences and revisions round-trip through etcd with
// their scope: the cluster kinds without a namespace, the others in one.
func TestEtcdInstancetypeKinds(t *testing.T) {
	ctx := context.Background()
	s := newStoreFactory(t, etcd.Options{})(t)
	spec := virtkit.VirtualMachineInstancetypeSpec{
		CPU:    virtkit.CPUInstancetype{Guest: 2},
		Memory: virtkit.MemoryInstancetype{Guest: resource.MustParse("4Gi")},
	}
	tests := []struct {
		name  string
		obj   virtkit.Object
		empty virtkit.Object
	}{
		{"cluster instancetype", &virtkit.VirtualMachineClusterInstancetype{ObjectMeta: metav1.ObjectMeta{Name: "u1.medium"}, Spec: spec},
			&virtkit.VirtualMachineClusterInstancetype{}},
		{"instancetype", &virtkit.VirtualMachineInstancetype{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "small"}, Spec: spec},
			&virtkit.VirtualMachineInstancetype{}},
		{"cluster preference", &virtkit.VirtualMachineClusterPreference{ObjectMeta: metav1.ObjectMeta{Name: "fedora"},
			Spec: virtkit.VirtualMachinePreferenceSpec{Devices: &virtkit.DevicePreferences{PreferredDiskBus: virtkit.DiskBusVirtio}}},
			&virtkit.VirtualMachineClusterPreference{}},
		{"revision", &virtkit.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm-u1"},
			Data: runtime.RawExtension{Raw: []byte(`{"kind":"VirtualMachineClusterInstancetype"}`)}, Revision: 1},
			&virtkit.ControllerRevision{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, s.Create(ctx, tt.obj))
			require.NoError(t, s.Get(ctx, store.KeyOf(tt.obj), tt.empty))
			assert.Equal(t, tt.obj.GetUID(), tt.empty.GetUID())
			switch got := tt.empty.(type) {
			case *virtkit.VirtualMachineClusterInstancetype:
				assert.Equal(t, "4Gi", got.Spec.Memory.Guest.String())
			case *virtkit.VirtualMachineClusterPreference:
				assert.Equal(t, virtkit.DiskBusVirtio, got.Spec.Devices.PreferredDiskBus)
			case *virtkit.ControllerRevision:
				assert.JSONEq(t, `{"kind":"VirtualMachineClusterInstancetype"}`, string(got.Data.Raw))
			}
		})
	}
}
