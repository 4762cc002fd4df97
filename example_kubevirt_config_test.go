package virtkit_test

import (
	"fmt"

	"github.com/virtkit/virtkit"
)

// A cluster's feature gates decide which gated fields it admits: alpha
// gates are off until listed, beta gates on until disabled, generally
// available gates always on.
func ExampleAdmitFeatureGates() {
	objs, err := virtkit.DecodeBytes([]byte(`apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: usb, namespace: default}
spec:
  domain:
    devices:
      hostDevices: [{name: usb, deviceName: kubevirt.io/storage}]
    memory: {guest: 1Gi}
`))
	if err != nil {
		panic(err)
	}
	kv := virtkit.DefaultKubeVirt()
	for _, e := range virtkit.AdmitFeatureGates(objs[0], kv.Spec.Configuration.FeatureGates()) {
		fmt.Println(e.Field+":", e.Detail)
	}
	kv.Spec.Configuration.DeveloperConfiguration = &virtkit.DeveloperConfiguration{FeatureGates: []string{virtkit.FeatureGateHostDevices}}
	fmt.Println(len(virtkit.AdmitFeatureGates(objs[0], kv.Spec.Configuration.FeatureGates())), "errors with the gate on")
	// Output:
	// spec.domain.devices.hostDevices: Host Devices feature gate is not enabled in kubevirt-config
	// 0 errors with the gate on
}

func ExampleFeatureGates_IsEnabled() {
	gates := virtkit.FeatureGates{Disabled: []string{virtkit.FeatureGateWorkloadEncryptionSEV, virtkit.FeatureGateNUMA}}
	for _, g := range []string{virtkit.FeatureGateHostDisk, virtkit.FeatureGateWorkloadEncryptionSEV, virtkit.FeatureGateNUMA} {
		fmt.Println(g, gates.IsEnabled(g))
	}
	// Output:
	// HostDisk false
	// WorkloadEncryptionSEV false
	// NUMA true
}

// virtctl writes a prefixed kind as the resource name it was given;
// KubeVirt, and virtkit, read it case-insensitively.
func ExampleInstancetypeMatcherKind() {
	for _, k := range []string{"", "virtualmachineinstancetype", "virtualmachineclusterinstancetypes", "Pod"} {
		kind, ok := virtkit.InstancetypeMatcherKind(k)
		fmt.Printf("%q -> %q %v\n", k, kind, ok)
	}
	// Output:
	// "" -> "VirtualMachineClusterInstancetype" true
	// "virtualmachineinstancetype" -> "VirtualMachineInstancetype" true
	// "virtualmachineclusterinstancetypes" -> "VirtualMachineClusterInstancetype" true
	// "Pod" -> "" false
}

// A preference's preferredStorageClassName fills the dataVolumeTemplates
// that name no storage class.
func ExampleApplyPreferredStorageClass() {
	objs, err := virtkit.DecodeBytes([]byte(`apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: vm, namespace: default}
spec:
  preference: {name: fast}
  dataVolumeTemplates:
  - metadata: {name: root}
    spec:
      source: {blank: {}}
      storage: {resources: {requests: {storage: 1Gi}}}
  template:
    spec:
      domain: {devices: {}}
`))
	if err != nil {
		panic(err)
	}
	vm := objs[0].(*virtkit.VirtualMachine)
	pref := &virtkit.VirtualMachinePreferenceSpec{Volumes: &virtkit.VolumePreferences{PreferredStorageClassName: "ssd"}}
	fmt.Println(virtkit.ApplyPreferredStorageClass(vm, pref), *vm.Spec.DataVolumeTemplates[0].Spec.Storage.StorageClassName)
	// Output:
	// true ssd
}
