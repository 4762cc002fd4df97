package virtkit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A preference-only VM meets a CPU requirement only in the preferred
// topology's field (KubeVirt's rule): sockets given to a preference that
// prefers cores count for nothing.
func TestPreferenceOnlyRequirements(t *testing.T) {
	spread := func(across string) *VirtualMachinePreferenceSpec {
		p := topo(PreferSpread)
		p.CPU.SpreadOptions = &SpreadOptions{Across: &across}
		return p
	}
	tests := []struct {
		name string
		pref *VirtualMachinePreferenceSpec
		cpu  *CPU
		path string // "" when met
	}{
		{"sockets by default, met", &VirtualMachinePreferenceSpec{}, &CPU{Sockets: 2}, ""},
		{"sockets by default, cores given", &VirtualMachinePreferenceSpec{}, &CPU{Cores: 2}, "spec.template.spec.domain.cpu.sockets"},
		{"cores preferred, sockets given", topo(PreferCores), &CPU{Sockets: 4}, "spec.template.spec.domain.cpu.cores"},
		{"deprecated preferCores, cores given", topo(DeprecatedPreferCores), &CPU{Cores: 2}, ""},
		{"threads preferred, cores given", topo(PreferThreads), &CPU{Cores: 2}, "spec.template.spec.domain.cpu.threads"},
		{"spread sockets x cores", spread(SpreadAcrossSocketsCores), &CPU{Sockets: 1, Cores: 2}, ""},
		{"spread cores x threads, sockets given", spread(SpreadAcrossCoresThreads), &CPU{Sockets: 2, Cores: 1, Threads: 1}, "spec.template.spec.domain.cpu.cores"},
		{"any counts all", topo(PreferAny), &CPU{Sockets: 1, Cores: 1, Threads: 2}, ""},
		{"no CPU at all", topo(PreferCores), nil, "spec.template.spec.domain.cpu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pref := tt.pref.DeepCopy()
			pref.Requirements = &PreferenceRequirements{CPU: &CPUPreferenceRequirement{Guest: 2}}
			spec := &VirtualMachineInstanceSpec{Domain: DomainSpec{CPU: tt.cpu}}
			errs := applySpec(spec, nil, pref, field.NewPath("spec", "template", "spec"))
			if tt.path == "" {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1)
			assert.Equal(t, tt.path, errs[0].Field)
		})
	}

	// Memory: the template's guest memory.
	pref := &VirtualMachinePreferenceSpec{Requirements: &PreferenceRequirements{Memory: &MemoryPreferenceRequirement{Guest: resource.MustParse("2Gi")}}}
	small := resource.MustParse("1Gi")
	errs := applySpec(&VirtualMachineInstanceSpec{Domain: DomainSpec{Memory: &Memory{Guest: &small}}}, nil, pref, field.NewPath("spec", "template", "spec"))
	assert.Equal(t, []string{"spec.template.spec.domain.memory"}, errPaths(errs))
}

// Preference fields that KubeVirt applies to parts of the VMI that
// virtkit models are applied where the template leaves them unset; those
// it cannot honour are NotSupported naming the field.
func TestApplyPreferenceFields(t *testing.T) {
	on, off := true, false
	video := "virtio"
	sub := "sub"
	pref := &VirtualMachinePreferenceSpec{
		Clock: &ClockPreferences{PreferredTimer: &Timer{HPET: &HPETTimer{Enabled: &off}}},
		CPU:   &CPUPreferences{PreferredCPUFeatures: []CPUFeature{{Name: "vmx", Policy: "require"}, {Name: "pdpe1gb"}}},
		Devices: &DevicePreferences{
			PreferredAutoattachGraphicsDevice: &off, PreferredAutoattachSerialConsole: &on,
			PreferredInputBus: InputBusVirtio, PreferredVideoType: &video, PreferredTPM: &TPMDevice{Persistent: &on},
			PreferredInterfaceMasquerade: &InterfaceMasquerade{},
		},
		Features:           &FeaturePreferences{PreferredSmm: &FeatureState{}, PreferredHyperv: &FeatureHyperv{Relaxed: &FeatureState{}, VAPIC: &FeatureState{Enabled: &off}}},
		Firmware:           &FirmwarePreferences{PreferredUseBios: &on, PreferredUseBiosSerial: &on},
		PreferredSubdomain: &sub,
		Annotations:        map[string]string{"a": "pref", "b": "pref"},
	}
	tmpl := &VirtualMachineInstanceTemplateSpec{Spec: VirtualMachineInstanceSpec{
		Domain: DomainSpec{
			CPU:      &CPU{Features: []CPUFeature{{Name: "pdpe1gb", Policy: "disable"}}},
			Features: &Features{Hyperv: &FeatureHyperv{VAPIC: &FeatureState{Enabled: &on}}},
			Devices: Devices{
				AutoattachGraphicsDevice: &on,
				Inputs:                   []Input{{Name: "t", Type: InputTypeTablet}},
				Interfaces:               []Interface{{Name: "default"}, {Name: "other"}},
			},
		},
		Networks: []Network{{Name: "default", NetworkSource: NetworkSource{Pod: &PodNetwork{}}}, {Name: "other"}},
	}}
	tmpl.ObjectMeta.Annotations = map[string]string{"a": "vm"}
	require.Empty(t, ApplyInstancetype(tmpl, nil, pref, field.NewPath("spec", "template", "spec")))
	s := tmpl.Spec
	assert.Equal(t, []CPUFeature{{Name: "pdpe1gb", Policy: "disable"}, {Name: "vmx", Policy: "require"}}, s.Domain.CPU.Features)
	assert.False(t, *s.Domain.Clock.Timer.HPET.Enabled)
	assert.True(t, *s.Domain.Devices.AutoattachGraphicsDevice, "the template's value stays")
	assert.True(t, *s.Domain.Devices.AutoattachSerialConsole)
	assert.Equal(t, InputBusVirtio, s.Domain.Devices.Inputs[0].Bus)
	assert.Equal(t, "virtio", s.Domain.Devices.Video.Type)
	assert.True(t, *s.Domain.Devices.TPM.Persistent)
	assert.NotNil(t, s.Domain.Devices.Interfaces[0].Masquerade, "on the pod network")
	assert.Nil(t, s.Domain.Devices.Interfaces[1].Masquerade, "not on the pod network")
	assert.NotNil(t, s.Domain.Features.SMM)
	assert.NotNil(t, s.Domain.Features.Hyperv.Relaxed)
	assert.True(t, *s.Domain.Features.Hyperv.VAPIC.Enabled, "the template's value stays")
	assert.True(t, *s.Domain.Firmware.Bootloader.BIOS.UseSerial)
	assert.Equal(t, "sub", s.Subdomain)
	assert.Equal(t, map[string]string{"a": "vm", "b": "pref"}, tmpl.ObjectMeta.Annotations)

	// Preferences for parts a node may be unable to run are applied all
	// the same: the node says so.
	panicModel := PanicDevicePvpanic
	for _, tt := range []struct {
		name  string
		pref  *VirtualMachinePreferenceSpec
		check func(t *testing.T, s *VirtualMachineInstanceSpec)
	}{
		{"panic device", &VirtualMachinePreferenceSpec{Devices: &DevicePreferences{PreferredPanicDeviceModel: &panicModel}},
			func(t *testing.T, s *VirtualMachineInstanceSpec) {
				require.Len(t, s.Domain.Devices.PanicDevices, 1)
				assert.Equal(t, PanicDevicePvpanic, *s.Domain.Devices.PanicDevices[0].Model)
			}},
		{"disable hotplug", &VirtualMachinePreferenceSpec{Devices: &DevicePreferences{PreferredDisableHotplug: &on}},
			func(t *testing.T, s *VirtualMachineInstanceSpec) { assert.True(t, s.Domain.Devices.DisableHotplug) }},
		{"launch security", &VirtualMachinePreferenceSpec{PreferredLaunchSecurity: &LaunchSecurity{SEV: &SEV{}}},
			func(t *testing.T, s *VirtualMachineInstanceSpec) { assert.NotNil(t, s.Domain.LaunchSecurity.SEV) }},
		{"disk block size", &VirtualMachinePreferenceSpec{Devices: &DevicePreferences{PreferredDiskBlockSize: &BlockSize{Custom: &CustomBlockSize{Logical: 512, Physical: 4096}}}},
			func(t *testing.T, s *VirtualMachineInstanceSpec) {
				assert.Equal(t, uint(4096), s.Domain.Devices.Disks[0].BlockSize.Custom.Physical)
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := &VirtualMachineInstanceTemplateSpec{Spec: VirtualMachineInstanceSpec{Domain: DomainSpec{Devices: Devices{Disks: []Disk{{Name: "root"}}}}}}
			require.Empty(t, ApplyInstancetype(tmpl, nil, tt.pref, field.NewPath("spec", "template", "spec")))
			tt.check(t, &tmpl.Spec)
		})
	}
}
