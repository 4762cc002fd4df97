package virtkit

import (
	"fmt"

	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// admitDoc runs one manifest through decoding, defaulting, validation,
// creation admission and the feature gates, as the API server does.
func admitDoc(t *testing.T, doc string, gates FeatureGates) field.ErrorList {
	t.Helper()
	objs, err := DecodeBytes([]byte(doc))
	require.NoError(t, err, doc)
	require.Len(t, objs, 1)
	SetDefaults(objs[0])
	errs := Validate(objs[0])
	errs = append(errs, AdmitCreate(objs[0])...)
	return append(errs, AdmitFeatureGates(objs[0], gates)...)
}

const compatVMI = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: v, namespace: default}
spec:
  domain:
    resources: {requests: {memory: 128Mi}}
    devices:
      disks: [{name: root, disk: {bus: virtio}}]
      interfaces: [{name: default, %s}]
      filesystems: [%s]
  networks: [{name: default, %s}]
  volumes:
  - {name: root, containerDisk: {image: quay.io/containerdisks/fedora:41}}
  %s
`

func compatDoc(binding, filesystems, network, volume string) string {
	if network == "" {
		network = "pod: {}"
	}
	return fmt.Sprintf(compatVMI, binding, filesystems, network, volume)
}

func TestAdmitBindingsAndContainerPath(t *testing.T) {
	type want struct {
		path, typ, msg string
	}
	const cpVolume = "- {name: token, containerPath: {path: /var/run/secrets/eks.amazonaws.com/serviceaccount}}"
	const cpFS = "{name: token, virtiofs: {}}"
	for _, tc := range []struct {
		name  string
		doc   string
		gates FeatureGates
		want  []want
	}{
		{name: "passtBinding on the pod network", doc: compatDoc("passtBinding: {}", "", "", "")},
		{name: "passtBinding with its gate off", doc: compatDoc("passtBinding: {}", "", "", ""),
			gates: FeatureGates{Disabled: []string{FeatureGatePasstBinding}},
			want:  []want{{"spec.domain.devices.interfaces[0].name", "FieldValueInvalid", "PasstBinding feature gate is not enabled"}}},
		{name: "passtBinding on a secondary network", doc: compatDoc("passtBinding: {}", "", "multus: {networkName: net1}", ""),
			want: []want{{"spec.domain.devices.interfaces[0].name", "FieldValueInvalid", "PasstBinding interface only implemented with pod network"}}},
		{name: "the discontinued passt binding", doc: compatDoc("passt: {}", "", "", ""),
			want: []want{{"spec.domain.devices.interfaces[0]", "FieldValueForbidden", "passt binding is discontinued"}}},
		{name: "a binding plugin", doc: compatDoc("binding: {name: managedtap}", "", "", "")},
		{name: "a binding plugin without a name", doc: compatDoc("binding: {name: ''}", "", "", ""),
			want: []want{{"spec.domain.devices.interfaces[0].binding.name", "FieldValueRequired", ""}}},
		{name: "a binding plugin and a binding method", doc: compatDoc("masquerade: {}, binding: {name: passt}", "", "", ""),
			want: []want{{"spec.domain.devices.interfaces[0]", "FieldValueInvalid", "logical default interface must have exactly one binding method or binding plugin"}}},
		{name: "a containerPath filesystem", doc: compatDoc("masquerade: {}", cpFS, "", cpVolume)},
		{name: "a containerPath disk", doc: compatDoc("masquerade: {}", "", "", cpVolume),
			want: []want{
				{"spec.domain.volumes[1]", "FieldValueInvalid", "ContainerPath volume 'token' must be mapped to a filesystem, not a disk"},
				{"spec.domain.volumes[1]", "FieldValueInvalid", "ContainerPath volume 'token' must have a matching filesystem defined in spec.domain.devices.filesystems"},
			}},
		{name: "a reserved containerPath", doc: compatDoc("masquerade: {}", cpFS, "", "- {name: token, containerPath: {path: /var/run/kubevirt/private}}"),
			want: []want{{"spec.domain.volumes[1].containerPath.path", "FieldValueInvalid", "ContainerPath volume 'token' uses reserved path prefix '/var/run/kubevirt'"}}},
		{name: "a relative containerPath", doc: compatDoc("masquerade: {}", cpFS, "", "- {name: token, containerPath: {path: run/token}}"),
			want: []want{{"spec.volumes[1].containerPath.path", "FieldValueInvalid", "path must be absolute (start with '/')"}}},
		{name: "a containerPath with ..", doc: compatDoc("masquerade: {}", cpFS, "", "- {name: token, containerPath: {path: /run/../etc}}"),
			want: []want{{"spec.volumes[1].containerPath.path", "FieldValueInvalid", "path must not contain '..'"}}},
		{name: "a writable containerPath", doc: compatDoc("masquerade: {}", cpFS, "", "- {name: token, containerPath: {path: /run/token, readOnly: false}}"),
			want: []want{{"spec.volumes[1].containerPath.readOnly", "FieldValueInvalid", "readOnly must be true, write access is not supported"}}},
		{name: "a containerPath and another source", doc: compatDoc("masquerade: {}", cpFS, "", "- {name: token, containerPath: {path: /run/token}, emptyDisk: {capacity: 1Gi}}"),
			want: []want{{"spec.volumes[1]", "FieldValueInvalid", "must have exactly one source type set"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := admitDoc(t, tc.doc, tc.gates)
			var got []want
			for _, e := range errs {
				got = append(got, want{e.Field, string(e.Type), ""})
			}
			var paths []want
			for _, w := range tc.want {
				paths = append(paths, want{w.path, w.typ, ""})
			}
			require.ElementsMatch(t, paths, got, "%v", errs)
			for i, w := range tc.want {
				assert.Contains(t, errs[i].Detail, w.msg)
			}
		})
	}
}

func TestAdmitUpdateVolumesStrategyAndMigrationPolicy(t *testing.T) {
	vm := `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: vm, namespace: default}
spec:
  runStrategy: Always
  updateVolumesStrategy: Migration
  template:
    spec:
      domain:
        resources: {requests: {memory: 128Mi}}
        devices: {disks: [{name: data, disk: {}}]}
      volumes: [{name: data, dataVolume: {name: dv-new}}]
`
	assert.Empty(t, admitDoc(t, vm, FeatureGates{}))

	policy := "apiVersion: migrations.kubevirt.io/v1alpha1\nkind: MigrationPolicy\nmetadata: {name: p}\n"
	assert.Empty(t, admitDoc(t, policy+"spec: {selectors: {}}\n", FeatureGates{}), "empty selectors match every VMI")
	assert.Empty(t, admitDoc(t, policy+"spec: {selectors: {namespaceSelector: {}, virtualMachineInstanceSelector: {}}}\n", FeatureGates{}))
	// KubeVirt's CRD schema requires spec.selectors.
	assertFieldErrors(t, admitDoc(t, policy+"spec: {}\n", FeatureGates{}), []wantFieldError{{"spec.selectors", field.ErrorTypeRequired}})
}

func TestKubeVirtNetworkBindingConfiguration(t *testing.T) {
	head := "apiVersion: kubevirt.io/v1\nkind: KubeVirt\nmetadata: {name: kubevirt, namespace: kubevirt}\nspec:\n  configuration:\n    "
	objs, err := DecodeBytes([]byte(head + `network:
      binding:
        passt:
          sidecarImage: quay.io/kubevirt/network-passt-binding:v1.9.0
          networkAttachmentDefinition: default/netbindingpasst
          migration: {method: link-refresh}
          computeResourceOverhead: {requests: {memory: 500Mi}}
        managedtap: {domainAttachmentType: managedTap, downwardAPI: device-info}
`))
	require.NoError(t, err)
	kv := objs[0].(*KubeVirt)
	assert.Empty(t, Validate(kv))
	b := kv.Spec.Configuration.NetworkConfiguration.Binding
	require.Len(t, b, 2)
	assert.Equal(t, DomainAttachmentManagedTap, b["managedtap"].DomainAttachmentType)
	assert.Equal(t, DeviceInfoDownwardAPI, b["managedtap"].DownwardAPI)
	assert.Equal(t, "link-refresh", b["passt"].Migration.Method)
	mem := b["passt"].ComputeResourceOverhead.Requests[ResourceMemory]
	assert.Equal(t, "500Mi", mem.String())

	// Settings virtkit does not apply are refused, not dropped.
	_, err = DecodeBytes([]byte(head + "network: {permitBridgeInterfaceOnPodNetwork: false}\n"))
	require.ErrorIs(t, err, ErrNotSupported)
	assert.Contains(t, err.Error(), "spec.configuration.network.permitBridgeInterfaceOnPodNetwork")
}
