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
