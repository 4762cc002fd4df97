package virtkit

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

const configObjectsManifest = `apiVersion: v1
kind: ConfigMap
metadata: {name: app-config, namespace: web}
data: {DATABASE: staging}
binaryData: {blob: AAEC}
---
apiVersion: v1
kind: Secret
metadata: {name: app-secret, namespace: web}
type: Opaque
data: {PASSWORD: c2VjcmV0}
stringData: {USER: admin}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: builder, namespace: web}
secrets:
- name: builder-token
`

func TestConfigObjectsDecode(t *testing.T) {
	objs, err := DecodeBytes([]byte(configObjectsManifest))
	require.NoError(t, err)
	require.Len(t, objs, 3)
	cm := objs[0].(*corev1.ConfigMap)
	assert.Equal(t, "staging", cm.Data["DATABASE"])
	assert.Equal(t, []byte{0, 1, 2}, cm.BinaryData["blob"])
	sec := objs[1].(*corev1.Secret)
	assert.Equal(t, map[string][]byte{"PASSWORD": []byte("secret"), "USER": []byte("admin")}, SecretData(sec))
	sa := objs[2].(*corev1.ServiceAccount)
	assert.Equal(t, "builder-token", sa.Secrets[0].Name)
	for _, o := range objs {
		assert.Empty(t, Validate(o))
	}

	// Strict: an unknown field is refused with its path.
	_, err = DecodeBytes([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndatas: {k: v}\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "datas")
	_, err = DecodeBytes([]byte("apiVersion: v1\nkind: Secret\nmetadata: {name: a}\ndata: {k: not-base64-SECRET!}\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "data[k]: invalid manifest: not base64 data")
	assert.NotContains(t, err.Error(), "SECRET")
}

func TestConfigObjectsValidate(t *testing.T) {
	meta := func(name string) string { return "metadata: {name: " + name + ", namespace: ns}\n" }
	tests := []struct {
		name, manifest, path string
	}{
		{"bad key", "apiVersion: v1\nkind: ConfigMap\n" + meta("a") + "data: {'a/b': v}\n", "data[a/b]"},
		{"duplicate key", "apiVersion: v1\nkind: ConfigMap\n" + meta("a") + "data: {k: v}\nbinaryData: {k: AA==}\n", "binaryData[k]"},
		{"too big", "apiVersion: v1\nkind: ConfigMap\n" + meta("a") + "data: {k: " + strings.Repeat("x", MaxConfigDataBytes) + "}\n", "data"},
		{"secret bad key", "apiVersion: v1\nkind: Secret\n" + meta("a") + "stringData: {'..': v}\n", "stringData[..]"},
		{"bad name", "apiVersion: v1\nkind: Secret\n" + meta("A_B"), "metadata.name"},
		{"sa secret without name", "apiVersion: v1\nkind: ServiceAccount\n" + meta("a") + "secrets: [{namespace: x}]\n", "secrets[0].name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := DecodeBytes([]byte(tc.manifest))
			require.NoError(t, err)
			errs := Validate(objs[0])
			require.NotEmpty(t, errs)
			assert.Equal(t, tc.path, errs[0].Field)
			assert.NotContains(t, errs.ToAggregate().Error(), strings.Repeat("x", 64), "values are not echoed")
		})
	}
}

const configVolumesVMI = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: v, namespace: ns}
spec:
  domain:
    resources: {requests: {memory: 64Mi}}
    devices:
      disks:
      - {name: cm, disk: {}}
      - {name: sec, disk: {}}
      - {name: sa, disk: {}}
      - {name: dapi, disk: {}}
  volumes:
  - name: cm
    configMap: {name: app-config, optional: true, volumeLabel: cfg}
  - name: sec
    secret: {secretName: app-secret}
  - name: sa
    serviceAccount: {serviceAccountName: default}
  - name: dapi
    downwardAPI:
      fields:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
`

func TestConfigVolumesValidate(t *testing.T) {
	vmi := decodeOne[*VirtualMachineInstance](t, configVolumesVMI)
	assert.Empty(t, Validate(vmi))
	assert.Equal(t, "app-config", vmi.Spec.Volumes[0].ConfigMap.Name)
	assert.Equal(t, "cfg", vmi.Spec.Volumes[0].ConfigMap.VolumeLabel)
	cp := vmi.DeepCopy()
	*cp.Spec.Volumes[0].ConfigMap.Optional = false
	assert.True(t, *vmi.Spec.Volumes[0].ConfigMap.Optional, "deep copy")

	tests := []struct {
		name string
		edit func(v *VirtualMachineInstance)
		path string
	}{
		{"configMap name", func(v *VirtualMachineInstance) { v.Spec.Volumes[0].ConfigMap.Name = "" }, "spec.volumes[0].configMap.name"},
		{"secretName", func(v *VirtualMachineInstance) { v.Spec.Volumes[1].Secret.SecretName = "" }, "spec.volumes[1].secret.secretName"},
		{"serviceAccountName", func(v *VirtualMachineInstance) { v.Spec.Volumes[2].ServiceAccount.ServiceAccountName = "" },
			"spec.volumes[2].serviceAccount.serviceAccountName"},
		{"two sources", func(v *VirtualMachineInstance) { v.Spec.Volumes[1].ConfigMap = &ConfigMapVolumeSource{} }, "spec.volumes[1]"},
		{"two serviceAccounts", func(v *VirtualMachineInstance) {
			v.Spec.Volumes[3].DownwardAPI = nil
			v.Spec.Volumes[3].ServiceAccount = &ServiceAccountVolumeSource{ServiceAccountName: "x"}
		}, "spec.volumes"},
	}
	// As KubeVirt's, admission leaves downwardAPI volumes to the builder.
	v := vmi.DeepCopy()
	v.Spec.Volumes[3].DownwardAPI.Fields[0].FieldRef.FieldPath = "spec.nodeName"
	assert.Empty(t, Validate(v))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := vmi.DeepCopy()
			tc.edit(v)
			errs := Validate(v)
			require.NotEmpty(t, errs)
			assert.Equal(t, tc.path, errs[0].Field)
		})
	}
}

// sysprep volumes decode.
func TestConfigVolumesNotModelled(t *testing.T) {
	vmi := decodeOne[*VirtualMachineInstance](t, strings.Replace(configVolumesVMI, "serviceAccount: {serviceAccountName: default}", "sysprep: {secret: {name: answers}}", 1))
	assert.Equal(t, "answers", vmi.Spec.Volumes[2].Sysprep.Secret.Name)
	assert.Empty(t, Validate(vmi))
}

func TestParseDownwardAPIField(t *testing.T) {
	for _, tc := range []struct{ in, what, key string }{
		{"metadata.name", "name", ""},
		{"metadata.labels", "labels", ""},
		{"metadata.annotations['kubevirt.io/x']", "annotations", "kubevirt.io/x"},
		{"metadata.labels['app']", "labels", "app"},
	} {
		w, k, err := ParseDownwardAPIField(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, [2]string{tc.what, tc.key}, [2]string{w, k})
	}
	for _, bad := range []string{"spec.nodeName", "metadata.labels[app]", "metadata.labels['']", "metadata.labels['a b']"} {
		_, _, err := ParseDownwardAPIField(bad)
		assert.ErrorIs(t, err, ErrNotSupported, bad)
	}
}
