package admission_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/admission"
	"github.com/virtkit/virtkit/store"
)

const hostDeviceVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: usb, namespace: default}
spec:
  domain:
    devices:
      hostDevices: [{name: usb, deviceName: kubevirt.io/storage}]
    memory: {guest: 128Mi}
`

const hostDiskVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: hd, namespace: default}
spec:
  domain:
    devices:
      disks: [{name: data}]
    memory: {guest: 128Mi}
  volumes:
  - {name: data, hostDisk: {path: /var/data/disk.img, type: Disk}}
`

func kubevirtWithGates(gates ...string) *virtkit.KubeVirt {
	kv := virtkit.DefaultKubeVirt()
	kv.Spec.Configuration.DeveloperConfiguration = &virtkit.DeveloperConfiguration{FeatureGates: gates}
	return kv
}

// A field whose feature gate is off is refused at its path with KubeVirt's
// message naming the gate; the KubeVirt object in the store turns it on,
// and a change of it applies to the next request.
func TestFeatureGatesFromStore(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, doc, gate, path, message string
	}{
		{"hostDevices", hostDeviceVMI, virtkit.FeatureGateHostDevices, "spec.domain.devices.hostDevices",
			"Host Devices feature gate is not enabled in kubevirt-config"},
		{"hostDisk", hostDiskVMI, virtkit.FeatureGateHostDisk, "spec.volumes[0]", "HostDisk feature gate is not enabled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := store.NewMemory()
			chain := admission.New(admission.Options{Lookup: st})

			err := chain.Admit(ctx, admission.AttributesFor(admission.Create, decodeOne(tt.doc), nil))
			require.ErrorIs(t, err, admission.ErrInvalid, "no KubeVirt object: KubeVirt's defaults")
			errs := admission.FieldErrors(err)
			require.Len(t, errs, 1)
			assert.Equal(t, field.ErrorTypeInvalid, errs[0].Type)
			assert.Equal(t, tt.path, errs[0].Field)
			assert.Contains(t, errs[0].Detail, tt.message)

			kv := kubevirtWithGates(tt.gate)
			require.NoError(t, st.Create(ctx, kv))
			require.NoError(t, chain.Admit(ctx, admission.AttributesFor(admission.Create, decodeOne(tt.doc), nil)))

			kv.Spec.Configuration.DeveloperConfiguration.FeatureGates = nil
			require.NoError(t, st.Update(ctx, kv))
			assert.ErrorIs(t, chain.Admit(ctx, admission.AttributesFor(admission.Create, decodeOne(tt.doc), nil)), admission.ErrInvalid)
		})
	}
}

// A gate's state follows KubeVirt's rules: generally available gates
// cannot be turned off, beta gates are on until disabled.
func TestFeatureGatesStates(t *testing.T) {
	ctx := context.Background()
	sev := decodeOne(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: sev, namespace: default}
spec:
  domain:
    launchSecurity: {sev: {}}
    firmware: {bootloader: {efi: {secureBoot: false}}}
    features: {smm: {enabled: false}}
    devices: {}
    memory: {guest: 128Mi}
`)
	for _, tt := range []struct {
		name    string
		dev     *virtkit.DeveloperConfiguration
		refused bool
	}{
		{"beta gate on by default", nil, false},
		{"beta gate disabled", &virtkit.DeveloperConfiguration{DisabledFeatureGates: []string{virtkit.FeatureGateWorkloadEncryptionSEV}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := staticConfig{DeveloperConfiguration: tt.dev}
			err := admission.New(admission.Options{Config: cfg}).Admit(ctx, admission.AttributesFor(admission.Create, sev.DeepCopyObject().(virtkit.Object), nil))
			if !tt.refused {
				require.NoError(t, err)
				return
			}
			errs := admission.FieldErrors(err)
			require.Len(t, errs, 1, "%v", err)
			assert.Equal(t, "spec.domain.launchSecurity", errs[0].Field)
			assert.Equal(t, "WorkloadEncryptionSEV feature gate is not enabled in kubevirt-config", errs[0].Detail)
		})
	}
	gates := virtkit.FeatureGates{Disabled: []string{virtkit.FeatureGateNUMA}}
	assert.True(t, gates.IsEnabled(virtkit.FeatureGateNUMA), "a generally available gate stays on")
	assert.False(t, gates.IsEnabled("NoSuchGate"))
	assert.False(t, virtkit.FeatureGates{}.IsEnabled(virtkit.FeatureGateHostDisk), "alpha gates are off by default")
}

// A VM's template is checked as its instance type expands it: an instance
// type's host devices need the gate as the VM's own would.
func TestFeatureGatesExpandedTemplate(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	it := decodeOne(`
apiVersion: instancetype.kubevirt.io/v1beta1
kind: VirtualMachineClusterInstancetype
metadata: {name: passthrough}
spec:
  cpu: {guest: 1}
  memory: {guest: 1Gi}
  hostDevices: [{name: usb, deviceName: kubevirt.io/storage}]
`)
	require.NoError(t, st.Create(ctx, it))
	vm := decodeOne(`
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: vm, namespace: default}
spec:
  runStrategy: Halted
  instancetype: {name: passthrough}
  template:
    spec:
      domain: {devices: {}}
`)
	err := admission.New(admission.Options{Lookup: st}).Admit(ctx, admission.AttributesFor(admission.Create, vm, nil))
	errs := admission.FieldErrors(err)
	require.Len(t, errs, 1, "%v", err)
	assert.Equal(t, "spec.template.spec.domain.devices.hostDevices", errs[0].Field)
}

// The configuration's eviction and rollout strategies are object defaults.
func TestConfigDefaults(t *testing.T) {
	ctx := context.Background()
	es := virtkit.EvictionStrategyLiveMigrate
	stage := virtkit.VMRolloutStrategyStage
	cfg := staticConfig{EvictionStrategy: &es, VMRolloutStrategy: &stage}
	obj := vmi("a")
	obj.Spec.Domain.Memory.Guest = nil
	obj.Spec.Domain.Memory = nil
	obj.Spec.Domain.Resources.Requests = virtkit.ResourceList{virtkit.ResourceMemory: mustQuantity("2Gi")}
	require.NoError(t, admission.New(admission.Options{Config: cfg}).Admit(ctx, admission.AttributesFor(admission.Create, obj, nil)))
	require.NotNil(t, obj.Spec.EvictionStrategy)
	assert.Equal(t, virtkit.EvictionStrategyLiveMigrate, *obj.Spec.EvictionStrategy)
	assert.Zero(t, obj.Spec.Domain.CPU.MaxSockets, "Stage sets no hot-plug maxima")
}

type staticConfig virtkit.KubeVirtConfiguration

func (c staticConfig) KubeVirtConfiguration(context.Context) (*virtkit.KubeVirtConfiguration, error) {
	out := virtkit.KubeVirtConfiguration(c)
	return &out, nil
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

// A VM's dataVolumeTemplates that name no storage class get its
// preference's preferredStorageClassName, as KubeVirt's VM mutation gives
// it; one that names a class keeps it.
func TestPreferredStorageClass(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	require.NoError(t, st.Create(ctx, decodeOne(`
apiVersion: instancetype.kubevirt.io/v1beta1
kind: VirtualMachineClusterPreference
metadata: {name: fast}
spec:
  volumes: {preferredStorageClassName: ssd}
`)))
	vm := decodeOne(`
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: vm, namespace: default}
spec:
  runStrategy: Halted
  preference: {name: fast}
  dataVolumeTemplates:
  - metadata: {name: root}
    spec:
      source: {blank: {}}
      storage: {resources: {requests: {storage: 1Gi}}}
  - metadata: {name: data}
    spec:
      source: {blank: {}}
      pvc: {storageClassName: hdd, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
  template:
    spec:
      domain:
        devices:
          disks: [{name: root}, {name: data}]
        memory: {guest: 1Gi}
      volumes:
      - {name: root, dataVolume: {name: root}}
      - {name: data, dataVolume: {name: data}}
`).(*virtkit.VirtualMachine)
	require.NoError(t, admission.New(admission.Options{Lookup: st}).Admit(ctx, admission.AttributesFor(admission.Create, vm, nil)))
	require.NotNil(t, vm.Spec.DataVolumeTemplates[0].Spec.Storage.StorageClassName)
	assert.Equal(t, "ssd", *vm.Spec.DataVolumeTemplates[0].Spec.Storage.StorageClassName)
	assert.Equal(t, "hdd", *vm.Spec.DataVolumeTemplates[1].Spec.PVC.StorageClassName)
}
