package virtkit

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Names a VMI volume refers to must be names such objects can have, and
// the sizes it asks for whole numbers of bytes the node can hold: admission
// refuses the others with the field path, before a node looks them up or
// builds file names from them.
func TestValidateVolumeReferences(t *testing.T) {
	const bad = "../etc/passwd"
	p := func(rest string) string { return "spec.volumes[2]." + rest }
	tests := []struct {
		name string
		src  VolumeSource
		want []wantFieldError
	}{
		{"claim", VolumeSource{PersistentVolumeClaim: &PersistentVolumeClaimVolumeSource{ClaimName: bad}},
			[]wantFieldError{{p("persistentVolumeClaim.claimName"), field.ErrorTypeInvalid}}},
		{"claim upper case", VolumeSource{PersistentVolumeClaim: &PersistentVolumeClaimVolumeSource{ClaimName: "Data"}},
			[]wantFieldError{{p("persistentVolumeClaim.claimName"), field.ErrorTypeInvalid}}},
		{"ephemeral claim", VolumeSource{Ephemeral: &EphemeralVolumeSource{PersistentVolumeClaim: &PersistentVolumeClaimVolumeSource{ClaimName: bad}}},
			[]wantFieldError{{p("ephemeral.persistentVolumeClaim.claimName"), field.ErrorTypeInvalid}}},
		{"dataVolume", VolumeSource{DataVolume: &DataVolumeSource{Name: "a/b"}},
			[]wantFieldError{{p("dataVolume.name"), field.ErrorTypeInvalid}}},
		{"configMap", VolumeSource{ConfigMap: &ConfigMapVolumeSource{LocalObjectReference: LocalObjectReference{Name: bad}}},
			[]wantFieldError{{p("configMap.name"), field.ErrorTypeInvalid}}},
		{"secret", VolumeSource{Secret: &SecretVolumeSource{SecretName: "s p"}},
			[]wantFieldError{{p("secret.secretName"), field.ErrorTypeInvalid}}},
		{"serviceAccount", VolumeSource{ServiceAccount: &ServiceAccountVolumeSource{ServiceAccountName: bad}},
			[]wantFieldError{{p("serviceAccount.serviceAccountName"), field.ErrorTypeInvalid}}},
		{"containerDisk pull secret", VolumeSource{ContainerDisk: &ContainerDiskSource{Image: "r/i:v1", ImagePullSecret: bad}},
			[]wantFieldError{{p("containerDisk.imagePullSecret"), field.ErrorTypeInvalid}}},
		{"cloud-init secretRef", VolumeSource{CloudInitNoCloud: &CloudInitNoCloudSource{UserDataSecretRef: &LocalObjectReference{Name: bad}}},
			[]wantFieldError{{p("cloudInitNoCloud.secretRef.name"), field.ErrorTypeInvalid}}},
		{"config drive network secretRef", VolumeSource{CloudInitConfigDrive: &CloudInitConfigDriveSource{UserData: "x", NetworkDataSecretRef: &LocalObjectReference{Name: bad}}},
			[]wantFieldError{{p("cloudInitConfigDrive.networkDataSecretRef.name"), field.ErrorTypeInvalid}}},
		{"emptyDisk fraction of a byte", VolumeSource{EmptyDisk: &EmptyDiskSource{Capacity: resource.MustParse("1.5")}},
			[]wantFieldError{{p("emptyDisk.capacity"), field.ErrorTypeInvalid}}},
		{"emptyDisk beyond int64", VolumeSource{EmptyDisk: &EmptyDiskSource{Capacity: resource.MustParse("100Ei")}},
			[]wantFieldError{{p("emptyDisk.capacity"), field.ErrorTypeInvalid}}},
		{"valid names and sizes", VolumeSource{PersistentVolumeClaim: &PersistentVolumeClaimVolumeSource{ClaimName: "data.v1-a"}}, nil},
		{"valid emptyDisk", VolumeSource{EmptyDisk: &EmptyDiskSource{Capacity: resource.MustParse("10Gi")}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vmi := validVMI(t)
			i := slices.IndexFunc(vmi.Spec.Volumes, func(v Volume) bool { return v.Name == "data" })
			require.Equal(t, 2, i, "the base VMI's third volume is data")
			vmi.Spec.Volumes[i].VolumeSource = tt.src
			d := slices.IndexFunc(vmi.Spec.Domain.Devices.Disks, func(d Disk) bool { return d.Name == "data" })
			vmi.Spec.Domain.Devices.Disks[d].DiskDevice = DiskDevice{Disk: &DiskTarget{Bus: DiskBusVirtio}} // not a LUN
			assertFieldErrors(t, Validate(vmi), tt.want)
		})
	}
}

// A DataVolume (or a VM's DataVolume template) naming a clone source no
// claim can be, or asking for a size the node cannot hold, is refused with
// the field path.
func TestValidateDataVolumeReferences(t *testing.T) {
	size := func(s string) VolumeResourceRequirements {
		return VolumeResourceRequirements{Requests: ResourceList{ResourceStorage: resource.MustParse(s)}}
	}
	base := func() *DataVolume {
		return &DataVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "dv", Namespace: "ns"},
			Spec: DataVolumeSpec{
				Source:  &DataVolumeImportSource{PVC: &DataVolumeSourcePVC{Namespace: "other", Name: "golden"}},
				Storage: &PersistentVolumeClaimSpec{Resources: size("1Gi")},
			},
		}
	}
	tests := []struct {
		name   string
		mutate func(*DataVolume)
		want   []wantFieldError
	}{
		{"valid clone", func(*DataVolume) {}, nil},
		{"clone name", func(dv *DataVolume) { dv.Spec.Source.PVC.Name = "../golden" },
			[]wantFieldError{{"spec.source.pvc.name", field.ErrorTypeInvalid}}},
		{"clone namespace", func(dv *DataVolume) { dv.Spec.Source.PVC.Namespace = "a.b" },
			[]wantFieldError{{"spec.source.pvc.namespace", field.ErrorTypeInvalid}}},
		{"storage fraction of a byte", func(dv *DataVolume) { dv.Spec.Storage.Resources = size("1500m") },
			[]wantFieldError{{"spec.storage.resources.requests.storage", field.ErrorTypeInvalid}}},
		{"pvc beyond int64", func(dv *DataVolume) {
			dv.Spec.Storage = nil
			dv.Spec.PVC = &PersistentVolumeClaimSpec{AccessModes: []PersistentVolumeAccessMode{ReadWriteOnce}, Resources: size("9Ei")}
		}, []wantFieldError{{"spec.pvc.resources.requests.storage", field.ErrorTypeInvalid}}},
		{"largest size", func(dv *DataVolume) { dv.Spec.Storage.Resources = size("7Ei") }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dv := base()
			tt.mutate(dv)
			assertFieldErrors(t, Validate(dv), tt.want)
		})
	}
	t.Run("VM template", func(t *testing.T) {
		vm := &VirtualMachine{Spec: VirtualMachineSpec{RunStrategy: ptrTo(RunStrategyAlways), Template: &VirtualMachineInstanceTemplateSpec{}}}
		vm.Name = "vm"
		vm.Spec.Template.Spec.Domain.Memory = &Memory{Guest: ptrTo(resource.MustParse("64Mi"))}
		dv := base()
		dv.Spec.Source.PVC.Name = "Golden"
		vm.Spec.DataVolumeTemplates = []DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: "dv"}, Spec: dv.Spec}}
		SetDefaults(vm)
		assertFieldErrors(t, Validate(vm), []wantFieldError{{"spec.dataVolumeTemplates[0].spec.source.pvc.name", field.ErrorTypeInvalid}})
	})
}
