package virtkit

import (
	"cmp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// catalogueTemplate is a VM template as `virtctl create vm` and the
// catalogue's users write one: a root disk, cloud-init and the pod
// network, with CPU and memory left to the instance type.
func catalogueTemplate() *VirtualMachineInstanceTemplateSpec {
	return &VirtualMachineInstanceTemplateSpec{Spec: VirtualMachineInstanceSpec{
		Domain: DomainSpec{Devices: Devices{
			Disks:      []Disk{{Name: "root"}, {Name: "cloudinit"}},
			Interfaces: []Interface{{Name: "default", InterfaceBindingMethod: InterfaceBindingMethod{Masquerade: &InterfaceMasquerade{}}}},
		}},
		Networks: []Network{{Name: "default", NetworkSource: NetworkSource{Pod: &PodNetwork{}}}},
		Volumes: []Volume{
			{Name: "root", VolumeSource: VolumeSource{ContainerDisk: &ContainerDiskSource{Image: "quay.io/containerdisks/fedora:41"}}},
			{Name: "cloudinit", VolumeSource: VolumeSource{CloudInitNoCloud: &CloudInitNoCloudSource{UserData: "#cloud-config\n"}}},
		},
	}}
}

// meets says whether the instance type gives what the preference requires.
func meets(it *VirtualMachineInstancetypeSpec, pref *VirtualMachinePreferenceSpec) bool {
	r := pref.Requirements
	if r == nil {
		return true
	}
	if r.CPU != nil && it.CPU.Guest < r.CPU.Guest {
		return false
	}
	return r.Memory == nil || it.Memory.Guest.Cmp(r.Memory.Guest) >= 0
}

// expandToVMI expands the instance type and preference into the
// template, makes the VMI KubeVirt's VM controller would create from it
// and returns the expansion's or the VMI's validation errors.
func expandToVMI(it *VirtualMachineInstancetypeSpec, pref *VirtualMachinePreferenceSpec) field.ErrorList {
	tmpl := catalogueTemplate()
	if errs := ApplyInstancetype(tmpl, it, pref, field.NewPath("spec", "template", "spec")); len(errs) > 0 {
		return errs
	}
	vmi := &VirtualMachineInstance{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	vmi.APIVersion, vmi.Kind = SchemeGroupVersion.String(), "VirtualMachineInstance"
	vmi.Name, vmi.Namespace = "catalogue", "default"
	SetDefaults(vmi)
	return Validate(vmi)
}

// Every instance type of the catalogue expands, with a representative
// preference (the first of fedora, centos.stream9, alpine, cirros whose
// requirements it meets), into a VMI that passes validation; and every
// preference does with the smallest u1 instance type that meets its
// requirements.
func TestCatalogueExpandsToValidVMIs(t *testing.T) {
	its, prefs := catalogue(t)
	var itNames, prefNames []string
	for n := range its {
		itNames = append(itNames, n)
	}
	for n := range prefs {
		prefNames = append(prefNames, n)
	}
	slices.Sort(itNames)
	slices.Sort(prefNames)
	require.Len(t, itNames, 65)
	require.Len(t, prefNames, 57)

	var itOK, prefOK int
	for _, name := range itNames {
		it := its[name]
		var prefName string
		for _, p := range []string{"fedora", "centos.stream9", "alpine", "cirros"} {
			if meets(it, prefs[p]) {
				prefName = p
				break
			}
		}
		require.NotEmpty(t, prefName, "no representative preference fits %s", name)
		t.Run("instancetype/"+name+"+"+prefName, func(t *testing.T) {
			if assert.Empty(t, expandToVMI(it, prefs[prefName])) {
				itOK++
			}
		})
	}
	// The u1 series from the smallest up.
	var u1 []string
	for _, n := range itNames {
		if its[n].CPU.Guest > 0 && len(n) > 3 && n[:3] == "u1." {
			u1 = append(u1, n)
		}
	}
	slices.SortFunc(u1, func(a, b string) int {
		if c := its[a].Memory.Guest.Cmp(its[b].Memory.Guest); c != 0 {
			return c
		}
		return cmp.Compare(its[a].CPU.Guest, its[b].CPU.Guest)
	})
	for _, name := range prefNames {
		pref := prefs[name]
		var itName string
		for _, n := range u1 {
			if meets(its[n], pref) {
				itName = n
				break
			}
		}
		require.NotEmpty(t, itName, "no u1 instance type meets %s's requirements", name)
		t.Run("preference/"+name+"+"+itName, func(t *testing.T) {
			if assert.Empty(t, expandToVMI(its[itName], pref)) {
				prefOK++
			}
		})
	}
	t.Logf("catalogue: %d/%d instance types and %d/%d preferences expand into valid VMIs",
		itOK, len(itNames), prefOK, len(prefNames))
}
