package virtkit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// catalogue returns the embedded catalogue's instance types and
// preferences by name.
func catalogue(t *testing.T) (map[string]*VirtualMachineInstancetypeSpec, map[string]*VirtualMachinePreferenceSpec) {
	t.Helper()
	objs, err := CommonInstancetypes()
	require.NoError(t, err)
	its := map[string]*VirtualMachineInstancetypeSpec{}
	prefs := map[string]*VirtualMachinePreferenceSpec{}
	for _, o := range objs {
		switch o := o.(type) {
		case *VirtualMachineClusterInstancetype:
			its[o.Name] = &o.Spec
		case *VirtualMachineClusterPreference:
			prefs[o.Name] = &o.Spec
		default:
			t.Fatalf("unexpected %T in the catalogue", o)
		}
	}
	return its, prefs
}

func TestCommonInstancetypesLoad(t *testing.T) {
	objs, err := CommonInstancetypes()
	require.NoError(t, err)
	series := map[string]int{}
	var prefs int
	for _, o := range objs {
		SetDefaults(o)
		assert.Empty(t, Validate(o), o.GetName())
		assert.Equal(t, "kubevirt.io", o.GetLabels()[InstancetypeVendorLabel], o.GetName())
		assert.Equal(t, CommonInstancetypesVersion, o.GetLabels()[CommonInstancetypesVersionLabel], o.GetName())
		assert.Empty(t, o.GetNamespace(), o.GetName())
		switch o.(type) {
		case *VirtualMachineClusterInstancetype:
			series[strings.SplitN(o.GetName(), ".", 2)[0]]++
		case *VirtualMachineClusterPreference:
			prefs++
		}
	}
	assert.Equal(t, map[string]int{"cx1": 12, "d1": 10, "m1": 10, "n1": 6, "o1": 9, "rt1": 8, "u1": 10}, series)
	assert.Equal(t, 57, prefs)

	its, ps := catalogue(t)
	assert.Equal(t, uint32(1), its["u1.small"].CPU.Guest)
	assert.Equal(t, "2Gi", its["u1.small"].Memory.Guest.String())
	require.NotNil(t, its["cx1.large"].CPU.NUMA, "cx1 keeps its NUMA request")
	require.NotNil(t, ps["fedora"].Requirements)
	assert.Equal(t, "linux", ps["fedora"].Annotations["vm.kubevirt.io/os"])
}

// Every catalogue preference expands into an empty template with a
// general-purpose instance type big enough for its requirements, or
// names the field virtkit cannot honour.
func TestCommonPreferencesExpand(t *testing.T) {
	its, prefs := catalogue(t)
	for name, pref := range prefs {
		tmpl := &VirtualMachineInstanceTemplateSpec{Spec: VirtualMachineInstanceSpec{
			Domain: DomainSpec{Devices: Devices{Disks: []Disk{{Name: "root"}}, Interfaces: []Interface{{Name: "default"}}}},
		}}
		errs := ApplyInstancetype(tmpl, its["u1.2xlarge"], pref, field.NewPath("spec", "template", "spec"))
		for _, e := range errs {
			assert.Equal(t, field.ErrorTypeNotSupported, e.Type, "%s: %v", name, e)
		}
	}
}

// Expanding catalogue instance types and preferences gives what
// KubeVirt's expansion gives (golden file; -update rewrites it).
func TestExpandCommonInstancetypesGolden(t *testing.T) {
	its, prefs := catalogue(t)
	cases := []struct{ it, pref string }{
		{"u1.small", "fedora"}, {"u1.medium", "ubuntu"}, {"u1.large", "centos.stream9"},
		{"o1.medium", "rhel.9"}, {"n1.large", "alpine"}, {"m1.large", "windows.2k22"},
		{"u1.xlarge", "windows.11"}, {"u1.small", "cirros"},
	}
	var buf bytes.Buffer
	for _, c := range cases {
		vm := &VirtualMachine{}
		vm.APIVersion, vm.Kind = SchemeGroupVersion.String(), "VirtualMachine"
		vm.Name = c.it + "-" + c.pref
		vm.Spec.Instancetype = &InstancetypeMatcher{Name: c.it}
		vm.Spec.Preference = &PreferenceMatcher{Name: c.pref}
		vm.Spec.Template = &VirtualMachineInstanceTemplateSpec{Spec: VirtualMachineInstanceSpec{
			Domain: DomainSpec{Devices: Devices{
				Disks:      []Disk{{Name: "root"}, {Name: "cloudinit"}},
				Interfaces: []Interface{{Name: "default"}},
				Inputs:     []Input{{Name: "tablet", Type: "tablet"}},
			}},
			Networks: []Network{{Name: "default", NetworkSource: NetworkSource{Pod: &PodNetwork{}}}},
		}}
		require.NotNil(t, its[c.it], c.it)
		require.NotNil(t, prefs[c.pref], c.pref)
		errs := ApplyInstancetype(vm.Spec.Template, its[c.it], prefs[c.pref], field.NewPath("spec", "template", "spec"))
		require.Empty(t, errs, vm.Name)
		require.NoError(t, Encode(&buf, vm))
		buf.WriteString("---\n")
	}
	golden := filepath.Join("testdata", "instancetypes", "expand_common.golden.yaml")
	if *update {
		require.NoError(t, os.WriteFile(golden, buf.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), buf.String())
}
