package virtkit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const cloneManifest = `
apiVersion: clone.kubevirt.io/v1beta1
kind: VirtualMachineClone
metadata:
  name: clone-db
  namespace: default
spec:
  source:
    apiGroup: kubevirt.io
    kind: VirtualMachine
    name: db
  target:
    apiGroup: kubevirt.io
    kind: VirtualMachine
    name: db-copy
  labelFilters: ["*", "!app.kubernetes.io/*"]
  annotationFilters: ["keep/*"]
  template:
    labelFilters: ["kubevirt.io/*"]
  newMacAddresses:
    default: "02:00:00:00:00:bb"
  newSMBiosSerial: "serial-2"
`

func TestCloneManifestDecodesAndValidates(t *testing.T) {
	objs, err := DecodeBytes([]byte(cloneManifest))
	require.NoError(t, err)
	require.Len(t, objs, 1)
	c, ok := objs[0].(*VirtualMachineClone)
	require.True(t, ok)
	assert.Equal(t, "db", c.Spec.Source.Name)
	assert.Equal(t, "db-copy", c.Spec.Target.Name)
	assert.Equal(t, []string{"kubevirt.io/*"}, c.Spec.Template.LabelFilters)
	assert.Equal(t, "02:00:00:00:00:bb", c.Spec.NewMacAddresses["default"])
	assert.Equal(t, "serial-2", *c.Spec.NewSMBiosSerial)
	assert.Empty(t, Validate(c))
	gvk, ok := GVKOf(c)
	require.True(t, ok)
	assert.Equal(t, "clone.kubevirt.io/v1beta1, Kind=VirtualMachineClone", gvk.String())
}

func TestValidateClone(t *testing.T) {
	base := func() *VirtualMachineClone {
		g := GroupName
		return &VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"},
			Spec: VirtualMachineCloneSpec{
				Source: &TypedLocalObjectReference{APIGroup: &g, Kind: KindVirtualMachine, Name: "vm"},
				Target: &TypedLocalObjectReference{APIGroup: &g, Kind: KindVirtualMachine, Name: "vm2"},
			}}
	}
	snapGroup, apps := SnapshotGroupName, "apps"
	tests := []struct {
		name   string
		mutate func(*VirtualMachineClone)
		want   []wantFieldError
	}{
		{"valid", func(*VirtualMachineClone) {}, nil},
		{"no target: a name is generated", func(c *VirtualMachineClone) { c.Spec.Target = nil }, nil},
		{"target without a name: one is generated", func(c *VirtualMachineClone) { c.Spec.Target.Name = "" }, nil},
		{"snapshot source", func(c *VirtualMachineClone) {
			c.Spec.Source = &TypedLocalObjectReference{APIGroup: &snapGroup, Kind: KindVirtualMachineSnapshot, Name: "s"}
		}, nil},
		{"snapshot source in the VM group", func(c *VirtualMachineClone) { c.Spec.Source.Kind = KindVirtualMachineSnapshot },
			[]wantFieldError{{"spec.source.apiGroup", field.ErrorTypeNotSupported}}},
		{"no source", func(c *VirtualMachineClone) { c.Spec.Source = nil },
			[]wantFieldError{{"spec.source", field.ErrorTypeRequired}}},
		{"source of another kind", func(c *VirtualMachineClone) { c.Spec.Source.Kind = "VirtualMachineInstance" },
			[]wantFieldError{{"spec.source.kind", field.ErrorTypeNotSupported}}},
		{"source without apiGroup", func(c *VirtualMachineClone) { c.Spec.Source.APIGroup = nil },
			[]wantFieldError{{"spec.source.apiGroup", field.ErrorTypeRequired}}},
		{"source without name", func(c *VirtualMachineClone) { c.Spec.Source.Name = "" },
			[]wantFieldError{{"spec.source.name", field.ErrorTypeRequired}}},
		{"target of another kind", func(c *VirtualMachineClone) { c.Spec.Target.Kind = KindVirtualMachineSnapshot },
			[]wantFieldError{{"spec.target.kind", field.ErrorTypeNotSupported}}},
		{"target in another group", func(c *VirtualMachineClone) { c.Spec.Target.APIGroup = &apps },
			[]wantFieldError{{"spec.target.apiGroup", field.ErrorTypeNotSupported}}},
		{"target is the source", func(c *VirtualMachineClone) { c.Spec.Target.Name = "vm" },
			[]wantFieldError{{"spec.target.name", field.ErrorTypeInvalid}}},
		{"glob and negated filters", func(c *VirtualMachineClone) {
			c.Spec.LabelFilters = []string{"*", "!a/*", "bc*", "!x"}
			c.Spec.AnnotationFilters = []string{"!*"}
			c.Spec.Template.LabelFilters = []string{"x"}
			c.Spec.Template.AnnotationFilters = []string{"*"}
		}, nil},
		{"empty and bare negation filters", func(c *VirtualMachineClone) {
			c.Spec.LabelFilters = []string{"ok", ""}
			c.Spec.AnnotationFilters = []string{"!"}
			c.Spec.Template.LabelFilters = []string{"a!b"}
			c.Spec.Template.AnnotationFilters = []string{"!!a"}
		}, []wantFieldError{
			{"spec.labelFilters[1]", field.ErrorTypeInvalid},
			{"spec.annotationFilters[0]", field.ErrorTypeInvalid},
			{"spec.template.labelFilters[0]", field.ErrorTypeInvalid},
			{"spec.template.annotationFilters[0]", field.ErrorTypeInvalid},
		}},
		{"wildcard not at the end", func(c *VirtualMachineClone) { c.Spec.LabelFilters = []string{"a*b", "!*x", "**"} },
			[]wantFieldError{{"spec.labelFilters[0]", field.ErrorTypeInvalid}, {"spec.labelFilters[1]", field.ErrorTypeInvalid}, {"spec.labelFilters[2]", field.ErrorTypeInvalid}}},
		{"target without apiGroup, as KubeVirt accepts", func(c *VirtualMachineClone) { c.Spec.Target.APIGroup = nil }, nil},
		{"volumeNamePolicy RandomizeNames", func(c *VirtualMachineClone) {
			p := VolumeRestorePolicyRandomizeNames
			c.Spec.VolumeNamePolicy = &p
		}, nil},
		{"volumeNamePolicy InPlace", func(c *VirtualMachineClone) { p := VolumeRestorePolicyInPlace; c.Spec.VolumeNamePolicy = &p },
			[]wantFieldError{{"spec.volumeNamePolicy", field.ErrorTypeNotSupported}}},
		{"bad MAC", func(c *VirtualMachineClone) {
			c.Spec.NewMacAddresses = map[string]string{"default": "02:00:00:00:00", "b": "02:00:00:00:00:01"}
		},
			[]wantFieldError{{"spec.newMacAddresses[default]", field.ErrorTypeInvalid}}},
		{"EUI-64 is not an interface MAC", func(c *VirtualMachineClone) {
			c.Spec.NewMacAddresses = map[string]string{"n": "02:00:00:00:00:00:00:01"}
		},
			[]wantFieldError{{"spec.newMacAddresses[n]", field.ErrorTypeInvalid}}},
		{"patches", func(c *VirtualMachineClone) {
			c.Spec.Patches = []string{`{"op":"replace","path":"/spec/runStrategy","value":"Always"}`}
		}, nil},
		{"patch outside spec, labels and annotations", func(c *VirtualMachineClone) {
			c.Spec.Patches = []string{`{"op":"replace","path":"/metadata/namespace","value":"x"}`}
		}, []wantFieldError{{"spec.patches[0].path", field.ErrorTypeInvalid}}},
		{"patch not one operation", func(c *VirtualMachineClone) { c.Spec.Patches = []string{`[{"op":"remove","path":"/spec/x"}]`} },
			[]wantFieldError{{"spec.patches[0]", field.ErrorTypeInvalid}}},
		{"bad name", func(c *VirtualMachineClone) { c.Name = "Bad_Name" },
			[]wantFieldError{{"metadata.name", field.ErrorTypeInvalid}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.mutate(c)
			assertFieldErrors(t, Validate(c), tt.want)
		})
	}
}

func TestCloneFilterKeep(t *testing.T) {
	tests := []struct {
		name    string
		filters []string
		key     string
		want    bool
	}{
		{"no filters keep everything", nil, "a/b", true},
		{"empty filters keep nothing", []string{}, "a", false},
		{"star matches keys with slashes", []string{"*"}, "app.kubernetes.io/name", true},
		{"exact", []string{"team"}, "team", true},
		{"exact only", []string{"team"}, "teams", false},
		{"prefix glob", []string{"kubevirt.io/*"}, "kubevirt.io/domain", true},
		{"infix glob", []string{"a*c"}, "abbbc", true},
		{"infix glob mismatch", []string{"a*c"}, "abcd", false},
		{"several stars", []string{"*io/*e"}, "kubevirt.io/name", true},
		{"suffix overlaps prefix", []string{"ab*ba"}, "aba", false},
		{"negation wins", []string{"*", "!secret*"}, "secret-key", false},
		{"negation wins whatever the order", []string{"!secret*", "*"}, "secret-key", false},
		{"negation leaves the rest", []string{"*", "!secret*"}, "team", true},
		{"negation alone keeps nothing", []string{"!secret*"}, "team", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, CloneFilterKeep(tt.filters, tt.key))
		})
	}
	assert.Equal(t, map[string]string{"b": "2"}, FilterCloneMap(map[string]string{"a": "1", "b": "2"}, []string{"*", "!a"}))
	assert.Nil(t, FilterCloneMap(map[string]string{"a": "1"}, []string{"!*"}))
}

func TestAdmitCloneUpdateImmutable(t *testing.T) {
	g := GroupName
	old := &VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"},
		Spec:   VirtualMachineCloneSpec{Source: &TypedLocalObjectReference{APIGroup: &g, Kind: KindVirtualMachine, Name: "vm"}},
		Status: VirtualMachineCloneStatus{Phase: CloneSucceeded}}
	upd := old.DeepCopy()
	upd.Status = VirtualMachineCloneStatus{}
	upd.Spec.Source.Name = "other"
	errs := AdmitUpdate(upd, old)
	assertFieldErrors(t, errs, []wantFieldError{{"spec.source.name", field.ErrorTypeForbidden}})
	assert.Equal(t, CloneSucceeded, upd.Status.Phase, "an update keeps the status")

	created := old.DeepCopy()
	assert.Empty(t, AdmitCreate(created))
	assert.Empty(t, created.Status.Phase, "a user does not write status")
}
