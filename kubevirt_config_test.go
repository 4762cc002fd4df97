package virtkit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestKubeVirtDecodeAndValidate(t *testing.T) {
	objs, err := DecodeBytes([]byte(`apiVersion: kubevirt.io/v1
kind: KubeVirt
metadata: {name: kubevirt, namespace: kubevirt}
spec:
  configuration:
    developerConfiguration:
      featureGates: [HostDisk, DownwardMetrics]
      disabledFeatureGates: [Snapshot]
    evictionStrategy: LiveMigrate
    vmRolloutStrategy: LiveUpdate
    migrations: {parallelMigrationsPerCluster: 5, bandwidthPerMigration: 64Mi, virtkitMaxCompletionTimeoutPerGiB: 800}
`))
	require.NoError(t, err)
	kv := objs[0].(*KubeVirt)
	assert.Empty(t, Validate(kv))
	require.NotNil(t, kv.Spec.Configuration.MigrationConfiguration.VirtkitMaxCompletionTimeoutPerGiB)
	assert.Equal(t, int64(800), *kv.Spec.Configuration.MigrationConfiguration.VirtkitMaxCompletionTimeoutPerGiB)
	g := kv.Spec.Configuration.FeatureGates()
	assert.True(t, g.IsEnabled(FeatureGateHostDisk))
	assert.False(t, g.IsEnabled("Snapshot"))
	assert.Contains(t, g.EnabledGates(), FeatureGateDownwardMetrics)

	// Deprecated and discontinued gates are accepted, as KubeVirt accepts
	// them with a warning; a discontinued one stays off.
	old := DefaultKubeVirt()
	old.Spec.Configuration.DeveloperConfiguration = &DeveloperConfiguration{FeatureGates: []string{"Macvtap", "HotplugVolumes"}}
	assert.Empty(t, Validate(old))
	assert.False(t, old.Spec.Configuration.FeatureGates().IsEnabled("Macvtap"))
	assert.True(t, old.Spec.Configuration.FeatureGates().IsEnabled("HotplugVolumes"))

	_, err = DecodeBytes([]byte("apiVersion: kubevirt.io/v1\nkind: KubeVirt\nmetadata: {name: kubevirt, namespace: kubevirt}\nspec:\n  imageTag: v1.9.0\n"))
	require.Error(t, err, "the operator's own settings are refused, not dropped")

	for _, tc := range []struct {
		name string
		edit func(*KubeVirtConfiguration)
		path string
		typ  field.ErrorType
	}{
		{"memory overcommit", func(c *KubeVirtConfiguration) {
			c.DeveloperConfiguration = &DeveloperConfiguration{MemoryOvercommit: -1}
		}, "spec.configuration.developerConfiguration.memoryOvercommit", field.ErrorTypeInvalid},
		{"pci vendor selector", func(c *KubeVirtConfiguration) {
			c.PermittedHostDevices = &PermittedHostDevices{PciHostDevices: []PciHostDevice{{PCIVendorSelector: "10de", ResourceName: "nvidia.com/T4"}}}
		}, "spec.configuration.permittedHostDevices.pciHostDevices[0].pciVendorSelector", field.ErrorTypeInvalid},
		{"pci resource name", func(c *KubeVirtConfiguration) {
			c.PermittedHostDevices = &PermittedHostDevices{PciHostDevices: []PciHostDevice{{PCIVendorSelector: "10de:1eb8"}}}
		}, "spec.configuration.permittedHostDevices.pciHostDevices[0].resourceName", field.ErrorTypeRequired},
		{"usb selector", func(c *KubeVirtConfiguration) {
			c.PermittedHostDevices = &PermittedHostDevices{USB: []USBHostDevice{{ResourceName: "kubevirt.io/storage", Selectors: []USBSelector{{Vendor: "46f4", Product: "1"}}}}}
		}, "spec.configuration.permittedHostDevices.usb[0].selectors[0].product", field.ErrorTypeInvalid},
		{"mdev name selector", func(c *KubeVirtConfiguration) {
			c.PermittedHostDevices = &PermittedHostDevices{MediatedDevices: []MediatedHostDevice{{ResourceName: "nvidia.com/GRID_T4-1Q"}}}
		}, "spec.configuration.permittedHostDevices.mediatedDevices[0].mdevNameSelector", field.ErrorTypeRequired},
		{"node selector label", func(c *KubeVirtConfiguration) {
			c.DeveloperConfiguration = &DeveloperConfiguration{NodeSelectors: map[string]string{"a": "b c"}}
		}, "spec.configuration.developerConfiguration.nodeSelectors[a]", field.ErrorTypeInvalid},
		{"eviction strategy", func(c *KubeVirtConfiguration) {
			es := EvictionStrategy("Sometimes")
			c.EvictionStrategy = &es
		}, "spec.configuration.evictionStrategy", field.ErrorTypeNotSupported},
		{"completion extension", func(c *KubeVirtConfiguration) {
			c.MigrationConfiguration = &MigrationConfiguration{VirtkitMaxCompletionTimeoutPerGiB: ptrOf[int64](-1)}
		}, "spec.configuration.migrations.virtkitMaxCompletionTimeoutPerGiB", field.ErrorTypeInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kv := DefaultKubeVirt()
			tc.edit(&kv.Spec.Configuration)
			errs := Validate(kv)
			require.Len(t, errs, 1)
			assert.Equal(t, tc.path, errs[0].Field)
			assert.Equal(t, tc.typ, errs[0].Type)
		})
	}
}

func TestMatcherKinds(t *testing.T) {
	for _, tc := range []struct {
		in, it, pref string
	}{
		{"", KindVirtualMachineClusterInstancetype, KindVirtualMachineClusterPreference},
		{"virtualmachineclusterinstancetype", KindVirtualMachineClusterInstancetype, ""},
		{"VirtualMachineInstancetypes", KindVirtualMachineInstancetype, ""},
		{"virtualmachinepreference", "", KindVirtualMachinePreference},
		{"virtualmachineclusterpreferences", "", KindVirtualMachineClusterPreference},
		{"Pod", "", ""},
	} {
		it, ok := InstancetypeMatcherKind(tc.in)
		assert.Equal(t, tc.it, it, tc.in)
		assert.Equal(t, tc.it != "", ok, tc.in)
		pref, ok := PreferenceMatcherKind(tc.in)
		assert.Equal(t, tc.pref, pref, tc.in)
		assert.Equal(t, tc.pref != "", ok, tc.in)
	}
}
