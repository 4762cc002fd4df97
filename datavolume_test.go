package virtkit

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const cdiManifest = `
apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: fedora
  namespace: default
spec:
  source:
    http:
      url: https://example.com/fedora.qcow2
      extraHeaders: ["X-Token: abc"]
  storage:
    resources:
      requests:
        storage: 5Gi
`

func TestDataVolumeDecodeDefaultValidate(t *testing.T) {
	objs, err := DecodeBytes([]byte(cdiManifest))
	require.NoError(t, err)
	require.Len(t, objs, 1)
	dv, ok := objs[0].(*DataVolume)
	require.True(t, ok, "%T", objs[0])
	SetDefaults(dv)
	assert.Empty(t, Validate(dv))
	assert.Equal(t, DataVolumeKubeVirt, dv.Spec.ContentType)
	assert.Equal(t, []PersistentVolumeAccessMode{ReadWriteOnce}, dv.Spec.Storage.AccessModes)
	assert.Equal(t, PersistentVolumeFilesystem, *dv.Spec.Storage.VolumeMode)
	size, ok := DataVolumeSize(&dv.Spec)
	assert.True(t, ok)
	assert.Equal(t, int64(5<<30), size)

	// Strict decoding names an unknown field's path.
	_, err = DecodeBytes([]byte(cdiManifest + "  bogus: 1\n"))
	var de *DecodeError
	require.True(t, errors.As(err, &de), "%v", err)
	assert.Equal(t, "spec.bogus", de.Path)
}

func TestValidateDataVolume(t *testing.T) {
	size := VolumeResourceRequirements{Requests: ResourceList{ResourceStorage: resource.MustParse("1Gi")}}
	base := func() *DataVolume {
		return &DataVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "dv", Namespace: "ns"},
			Spec: DataVolumeSpec{
				Source:  &DataVolumeImportSource{HTTP: &DataVolumeSourceHTTP{URL: "http://127.0.0.1/disk.img"}},
				Storage: &PersistentVolumeClaimSpec{Resources: size},
			},
		}
	}
	str := func(s string) *string { return &s }
	tests := []struct {
		name   string
		mutate func(*DataVolume)
		want   []wantFieldError
	}{
		{"valid http", func(*DataVolume) {}, nil},
		{"http checksum", func(dv *DataVolume) { dv.Spec.Source.HTTP.Checksum = "sha256:00ff" }, nil},
		{"http checksum without algorithm", func(dv *DataVolume) { dv.Spec.Source.HTTP.Checksum = "00ff" },
			[]wantFieldError{{"spec.source.http.checksum", field.ErrorTypeInvalid}}},
		{"http checksum unknown algorithm", func(dv *DataVolume) { dv.Spec.Source.HTTP.Checksum = "crc32:00ff" },
			[]wantFieldError{{"spec.source.http.checksum", field.ErrorTypeInvalid}}},
		{"http checksum not hex", func(dv *DataVolume) { dv.Spec.Source.HTTP.Checksum = "md5:xyz" },
			[]wantFieldError{{"spec.source.http.checksum", field.ErrorTypeInvalid}}},
		{"no source", func(dv *DataVolume) { dv.Spec.Source = nil },
			[]wantFieldError{{"spec.source", field.ErrorTypeRequired}}},
		{"two sources", func(dv *DataVolume) { dv.Spec.Source.Blank = &DataVolumeBlankImage{} },
			[]wantFieldError{{"spec.source", field.ErrorTypeInvalid}}},
		{"empty source", func(dv *DataVolume) { dv.Spec.Source = &DataVolumeImportSource{} },
			[]wantFieldError{{"spec.source", field.ErrorTypeRequired}}},
		{"sourceRef not supported", func(dv *DataVolume) {
			dv.Spec.Source = nil
			dv.Spec.SourceRef = &DataVolumeSourceRef{Kind: "DataSource", Name: "x"}
		}, []wantFieldError{{"spec.sourceRef", field.ErrorTypeNotSupported}}},
		{"bad http url", func(dv *DataVolume) { dv.Spec.Source.HTTP.URL = "ftp://x/y" },
			[]wantFieldError{{"spec.source.http.url", field.ErrorTypeInvalid}}},
		{"empty http url", func(dv *DataVolume) { dv.Spec.Source.HTTP.URL = "" },
			[]wantFieldError{{"spec.source.http.url", field.ErrorTypeRequired}}},
		{"bad header", func(dv *DataVolume) { dv.Spec.Source.HTTP.ExtraHeaders = []string{"no colon"} },
			[]wantFieldError{{"spec.source.http.extraHeaders[0]", field.ErrorTypeInvalid}}},
		{"http secretRef not supported", func(dv *DataVolume) { dv.Spec.Source.HTTP.SecretRef = "s" },
			[]wantFieldError{{"spec.source.http.secretRef", field.ErrorTypeNotSupported}}},
		{"s3", func(dv *DataVolume) {
			dv.Spec.Source = &DataVolumeImportSource{S3: &DataVolumeSourceS3{URL: "https://x/b/k.qcow2", SecretRef: "s", CertConfigMap: "ca"}}
		}, nil},
		{"s3 url without key", func(dv *DataVolume) {
			dv.Spec.Source = &DataVolumeImportSource{S3: &DataVolumeSourceS3{URL: "http://x/bucket"}}
		}, []wantFieldError{{"spec.source.s3.url", field.ErrorTypeInvalid}}},
		{"s3 url scheme", func(dv *DataVolume) {
			dv.Spec.Source = &DataVolumeImportSource{S3: &DataVolumeSourceS3{URL: "s3://b/k"}}
		}, []wantFieldError{{"spec.source.s3.url", field.ErrorTypeInvalid}}},
		{"upload", func(dv *DataVolume) {
			dv.Spec.Source = &DataVolumeImportSource{Upload: &DataVolumeSourceUpload{}}
		}, nil},
		{"gcs not supported", func(dv *DataVolume) {
			dv.Spec.Source = &DataVolumeImportSource{GCS: &DataVolumeSourceGCS{URL: "gs://b/k"}}
		}, []wantFieldError{{"spec.source.gcs", field.ErrorTypeNotSupported}}},
		{"imageio not supported", func(dv *DataVolume) {
			dv.Spec.Source = &DataVolumeImportSource{ImageIO: &DataVolumeSourceImageIO{}}
		}, []wantFieldError{{"spec.source.imageio", field.ErrorTypeNotSupported}}},
		{"vddk not supported", func(dv *DataVolume) {
			dv.Spec.Source = &DataVolumeImportSource{VDDK: &DataVolumeSourceVDDK{}}
		}, []wantFieldError{{"spec.source.vddk", field.ErrorTypeNotSupported}}},
		{"registry ok", func(dv *DataVolume) {
			dv.Spec.Source = &DataVolumeImportSource{Registry: &DataVolumeSourceRegistry{URL: str("docker://127.0.0.1:5000/disk:v1")}}
		}, nil},
		{"registry scheme", func(dv *DataVolume) {
			dv.Spec.Source = &DataVolumeImportSource{Registry: &DataVolumeSourceRegistry{URL: str("https://quay.io/x")}}
		}, []wantFieldError{{"spec.source.registry.url", field.ErrorTypeInvalid}}},
		{"registry pullMethod", func(dv *DataVolume) {
			m := RegistryPullMethod("magic")
			dv.Spec.Source = &DataVolumeImportSource{Registry: &DataVolumeSourceRegistry{URL: str("docker://r/x"), PullMethod: &m}}
		}, []wantFieldError{{"spec.source.registry.pullMethod", field.ErrorTypeNotSupported}}},
		{"registry imageStream", func(dv *DataVolume) {
			dv.Spec.Source = &DataVolumeImportSource{Registry: &DataVolumeSourceRegistry{ImageStream: str("is")}}
		}, []wantFieldError{{"spec.source.registry.imageStream", field.ErrorTypeNotSupported}}},
		{"clone without size", func(dv *DataVolume) {
			dv.Spec.Source = &DataVolumeImportSource{PVC: &DataVolumeSourcePVC{Namespace: "ns", Name: "src"}}
			dv.Spec.Storage.Resources = VolumeResourceRequirements{}
		}, nil},
		{"clone needs a name", func(dv *DataVolume) {
			dv.Spec.Source = &DataVolumeImportSource{PVC: &DataVolumeSourcePVC{}}
		}, []wantFieldError{{"spec.source.pvc.name", field.ErrorTypeRequired}}},
		{"size missing", func(dv *DataVolume) { dv.Spec.Storage.Resources = VolumeResourceRequirements{} },
			[]wantFieldError{{"spec.storage.resources.requests.storage", field.ErrorTypeRequired}}},
		{"size zero", func(dv *DataVolume) {
			dv.Spec.Storage.Resources.Requests = ResourceList{ResourceStorage: resource.MustParse("0")}
		}, []wantFieldError{{"spec.storage.resources.requests.storage", field.ErrorTypeInvalid}}},
		{"pvc needs access modes", func(dv *DataVolume) {
			dv.Spec.PVC, dv.Spec.Storage = dv.Spec.Storage, nil
		}, []wantFieldError{{"spec.pvc.accessModes", field.ErrorTypeRequired}}},
		{"pvc and storage", func(dv *DataVolume) { dv.Spec.PVC = dv.Spec.Storage.DeepCopy() },
			[]wantFieldError{{"spec.storage", field.ErrorTypeForbidden}}},
		{"two access modes", func(dv *DataVolume) {
			dv.Spec.Storage.AccessModes = []PersistentVolumeAccessMode{ReadWriteOnce, ReadWriteMany}
		}, []wantFieldError{{"spec.storage.accessModes", field.ErrorTypeInvalid}}},
		{"block not supported", func(dv *DataVolume) {
			m := PersistentVolumeBlock
			dv.Spec.Storage.VolumeMode = &m
		}, []wantFieldError{{"spec.storage.volumeMode", field.ErrorTypeNotSupported}}},
		{"archive not supported", func(dv *DataVolume) { dv.Spec.ContentType = DataVolumeArchive },
			[]wantFieldError{{"spec.contentType", field.ErrorTypeNotSupported}}},
		{"bad name", func(dv *DataVolume) { dv.Name = "Bad_Name" },
			[]wantFieldError{{"metadata.name", field.ErrorTypeInvalid}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dv := base()
			tt.mutate(dv)
			assertFieldErrors(t, Validate(dv), tt.want)
		})
	}
}

func TestDataVolumeForTemplate(t *testing.T) {
	vm := &VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns", UID: "u1"}}
	tmpl := &DataVolumeTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Name: "root", Labels: map[string]string{"a": "b"}},
		Spec:       DataVolumeSpec{Source: &DataVolumeImportSource{Blank: &DataVolumeBlankImage{}}},
	}
	dv := DataVolumeForTemplate(vm, tmpl)
	assert.Equal(t, "ns", dv.Namespace)
	assert.Equal(t, "root", dv.Name)
	assert.Equal(t, "b", dv.Labels["a"])
	require.Len(t, dv.OwnerReferences, 1)
	ref := dv.OwnerReferences[0]
	assert.Equal(t, "VirtualMachine", ref.Kind)
	assert.Equal(t, "u1", string(ref.UID))
	assert.True(t, *ref.Controller)
	// The template is not aliased.
	dv.Labels["a"] = "c"
	assert.Equal(t, "b", tmpl.ObjectMeta.Labels["a"])
}

func TestDataVolumeSetCondition(t *testing.T) {
	var st DataVolumeStatus
	t0 := metav1.Unix(100, 0)
	t1 := metav1.Unix(200, 0)
	assert.True(t, st.SetCondition(DataVolumeCondition{Type: DataVolumeBound, Status: ConditionFalse, Reason: DataVolumeReasonPending}, t0))
	assert.False(t, st.SetCondition(DataVolumeCondition{Type: DataVolumeBound, Status: ConditionFalse, Reason: DataVolumeReasonPending}, t1))
	assert.True(t, st.SetCondition(DataVolumeCondition{Type: DataVolumeBound, Status: ConditionTrue, Reason: DataVolumeReasonBound}, t1))
	c := st.Condition(DataVolumeBound)
	require.NotNil(t, c)
	assert.Equal(t, t1, c.LastTransitionTime)
	assert.Nil(t, st.Condition(DataVolumeReady))
	assert.True(t, DataVolumeSucceeded.IsFinal())
	assert.False(t, DataVolumeImportInProgress.IsFinal())
}

func TestFormatDataVolumeProgress(t *testing.T) {
	for in, want := range map[float64]DataVolumeProgress{0: "0.00%", 45.2: "45.20%", 99.999: "100.00%", 100: "100.00%", 120: "100.00%", -1: "0.00%"} {
		assert.Equal(t, want, FormatDataVolumeProgress(in), "%v", in)
	}
}

func TestAdmitUpdateDataVolume(t *testing.T) {
	objs, err := DecodeBytes([]byte(cdiManifest))
	require.NoError(t, err)
	old := objs[0].(*DataVolume)
	SetDefaults(old)
	old.Annotations = map[string]string{DataVolumeImportNodeAnnotation: "n1", DataVolumeStorageClassAnnotation: "local", "user": "x"}
	old.Status.Phase = DataVolumeSucceeded

	again := old.DeepCopy()
	again.Annotations = nil
	again.Status = DataVolumeStatus{}
	assert.Empty(t, AdmitUpdate(again, old))
	assert.Equal(t, "n1", again.Annotations[DataVolumeImportNodeAnnotation], "import state survives a re-apply")
	assert.Equal(t, "local", again.Annotations[DataVolumeStorageClassAnnotation])
	assert.NotContains(t, again.Annotations, "user")
	assert.Equal(t, DataVolumeSucceeded, again.Status.Phase)

	changed := old.DeepCopy()
	changed.Spec.ContentType = DataVolumeArchive
	errs := AdmitUpdate(changed, old)
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.contentType", errs[0].Field)
	assert.Equal(t, field.ErrorTypeForbidden, errs[0].Type)
}
