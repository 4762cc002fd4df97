package virtkit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func itSpec(guest uint32, mem string) *VirtualMachineInstancetypeSpec {
	return &VirtualMachineInstancetypeSpec{CPU: CPUInstancetype{Guest: guest}, Memory: MemoryInstancetype{Guest: resource.MustParse(mem)}}
}

func topo(t PreferredCPUTopology) *VirtualMachinePreferenceSpec {
	return &VirtualMachinePreferenceSpec{CPU: &CPUPreferences{PreferredCPUTopology: &t}}
}

func errPaths(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}

func TestApplyInstancetypeCPUTopology(t *testing.T) {
	four := uint32(4)
	tests := []struct {
		name                    string
		pref                    *VirtualMachinePreferenceSpec
		guest                   uint32
		sockets, cores, threads uint32
		wantErr                 string
	}{
		{"default is sockets", nil, 4, 4, 1, 1, ""},
		{"sockets", topo(PreferSockets), 4, 4, 1, 1, ""},
		{"cores", topo(PreferCores), 4, 1, 4, 1, ""},
		{"deprecated cores", topo(DeprecatedPreferCores), 4, 1, 4, 1, ""},
		{"threads", topo(PreferThreads), 4, 1, 1, 4, ""},
		{"any", topo(PreferAny), 4, 4, 1, 1, ""},
		{"spread default ratio", topo(PreferSpread), 4, 2, 2, 1, ""},
		{"spread ratio 4 across cores and threads", &VirtualMachinePreferenceSpec{CPU: &CPUPreferences{
			PreferredCPUTopology: ptrTo(PreferSpread), SpreadOptions: &SpreadOptions{Ratio: &four, Across: ptrTo(SpreadAcrossCoresThreads)}}}, 8, 1, 2, 4, ""},
		{"spread not divisible", topo(PreferSpread), 3, 0, 0, 0, "spec.preference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &VirtualMachineInstanceSpec{}
			errs := applySpec(spec, itSpec(tt.guest, "1Gi"), tt.pref, field.NewPath("spec", "template", "spec"))
			if tt.wantErr != "" {
				require.Len(t, errs, 1)
				assert.Equal(t, tt.wantErr, errs[0].Field)
				assert.Nil(t, spec.Domain.CPU, "spec untouched on error")
				return
			}
			require.Empty(t, errs)
			assert.Equal(t, [3]uint32{tt.sockets, tt.cores, tt.threads},
				[3]uint32{spec.Domain.CPU.Sockets, spec.Domain.CPU.Cores, spec.Domain.CPU.Threads})
			assert.Equal(t, "1Gi", spec.Domain.Memory.Guest.String())
		})
	}
}

func TestApplyInstancetypeConflicts(t *testing.T) {
	mem := resource.MustParse("1Gi")
	tests := []struct {
		name  string
		tmpl  VirtualMachineInstanceSpec
		it    *VirtualMachineInstancetypeSpec
		paths []string
	}{
		{"sockets", VirtualMachineInstanceSpec{Domain: DomainSpec{CPU: &CPU{Sockets: 2}}}, itSpec(1, "1Gi"),
			[]string{"spec.template.spec.domain.cpu.sockets"}},
		{"cores and threads", VirtualMachineInstanceSpec{Domain: DomainSpec{CPU: &CPU{Cores: 2, Threads: 2}}}, itSpec(1, "1Gi"),
			[]string{"spec.template.spec.domain.cpu.cores", "spec.template.spec.domain.cpu.threads"}},
		{"cpu request and memory guest", VirtualMachineInstanceSpec{Domain: DomainSpec{
			Resources: ResourceRequirements{Requests: ResourceList{ResourceCPU: resource.MustParse("1")}},
			Memory:    &Memory{Guest: &mem}}}, itSpec(1, "1Gi"),
			[]string{"spec.template.spec.domain.resources.requests.cpu", "spec.template.spec.domain.memory.guest"}},
		{"dedicated CPUs", VirtualMachineInstanceSpec{Domain: DomainSpec{CPU: &CPU{DedicatedCPUPlacement: true}}},
			&VirtualMachineInstancetypeSpec{CPU: CPUInstancetype{Guest: 1, DedicatedCPUPlacement: ptrTo(true)}, Memory: MemoryInstancetype{Guest: mem}},
			[]string{"spec.template.spec.domain.cpu.dedicatedCPUPlacement"}},
		{"only the first memory conflict", VirtualMachineInstanceSpec{Domain: DomainSpec{Memory: &Memory{Guest: &mem},
			Resources: ResourceRequirements{Requests: ResourceList{ResourceMemory: mem}, Limits: ResourceList{ResourceMemory: mem}}}}, itSpec(1, "1Gi"),
			[]string{"spec.template.spec.domain.memory.guest"}},
		{"memory limit", VirtualMachineInstanceSpec{Domain: DomainSpec{
			Resources: ResourceRequirements{Limits: ResourceList{ResourceMemory: mem}}}}, itSpec(1, "1Gi"),
			[]string{"spec.template.spec.domain.resources.limits.memory"}},
		{"model only when the instancetype sets one", VirtualMachineInstanceSpec{Domain: DomainSpec{CPU: &CPU{Model: "host-model"}}},
			&VirtualMachineInstancetypeSpec{CPU: CPUInstancetype{Guest: 1, Model: ptrTo("Haswell")}, Memory: MemoryInstancetype{Guest: mem}},
			[]string{"spec.template.spec.domain.cpu.model"}},
		{"node selector", VirtualMachineInstanceSpec{NodeSelector: map[string]string{"a": "b"}},
			&VirtualMachineInstancetypeSpec{CPU: CPUInstancetype{Guest: 1}, Memory: MemoryInstancetype{Guest: mem}, NodeSelector: map[string]string{"c": "d"}},
			[]string{"spec.template.spec.nodeSelector"}},
		{"a template model without an instancetype model is kept", VirtualMachineInstanceSpec{Domain: DomainSpec{CPU: &CPU{Model: "host-model"}}},
			itSpec(1, "1Gi"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.tmpl.DeepCopy()
			errs := applySpec(spec, tt.it, nil, field.NewPath("spec", "template", "spec"))
			assert.Equal(t, tt.paths, errPaths(errs))
			if len(tt.paths) > 0 {
				assert.Equal(t, &tt.tmpl, spec, "a conflicting template is left as it was")
			}
		})
	}
}

func TestApplyPreferenceOnlyWhereUnset(t *testing.T) {
	grace := int64(5)
	spec := &VirtualMachineInstanceSpec{
		TerminationGracePeriodSeconds: &grace,
		Domain: DomainSpec{Devices: Devices{
			Disks: []Disk{
				{Name: "a"},
				{Name: "b", DiskDevice: DiskDevice{Disk: &DiskTarget{Bus: DiskBusSCSI}}},
				{Name: "c", DiskDevice: DiskDevice{CDRom: &CDRomTarget{}}},
			},
			Interfaces: []Interface{{Name: "default"}, {Name: "x", Model: "e1000"}},
		}},
	}
	pref := &VirtualMachinePreferenceSpec{
		Devices:                                &DevicePreferences{PreferredDiskBus: DiskBusSATA, PreferredCdromBus: DiskBusSATA, PreferredInterfaceModel: "virtio"},
		Firmware:                               &FirmwarePreferences{PreferredUseEfi: ptrTo(true), PreferredUseSecureBoot: ptrTo(false)},
		Machine:                                &MachinePreferences{PreferredMachineType: "q35"},
		PreferredTerminationGracePeriodSeconds: ptrTo(int64(60)),
	}
	require.Empty(t, applySpec(spec, nil, pref, field.NewPath("spec", "template", "spec")))
	d := spec.Domain.Devices
	assert.Equal(t, DiskBusSATA, d.Disks[0].Disk.Bus)
	assert.Equal(t, DiskBusSCSI, d.Disks[1].Disk.Bus, "the template's bus wins")
	assert.Equal(t, DiskBusSATA, d.Disks[2].CDRom.Bus)
	assert.Equal(t, "virtio", d.Interfaces[0].Model)
	assert.Equal(t, "e1000", d.Interfaces[1].Model)
	assert.Equal(t, &EFI{SecureBoot: ptrTo(false)}, spec.Domain.Firmware.Bootloader.EFI)
	assert.Equal(t, "q35", spec.Domain.Machine.Type)
	assert.Equal(t, int64(5), *spec.TerminationGracePeriodSeconds)
	assert.Nil(t, spec.Domain.CPU, "a preference alone sets no CPU")
}

func TestApplyInstancetypeMemoryAndRequirements(t *testing.T) {
	it := itSpec(1, "4Gi")
	it.Memory.OvercommitPercent = 50
	it.Memory.Hugepages = nil
	spec := &VirtualMachineInstanceSpec{}
	require.Empty(t, applySpec(spec, it, nil, field.NewPath("spec", "template", "spec")))
	req := spec.Domain.Resources.Requests[ResourceMemory]
	assert.Equal(t, int64(2<<30), req.Value())

	pref := &VirtualMachinePreferenceSpec{Requirements: &PreferenceRequirements{
		CPU: &CPUPreferenceRequirement{Guest: 2}, Memory: &MemoryPreferenceRequirement{Guest: resource.MustParse("8Gi")}}}
	errs := applySpec(&VirtualMachineInstanceSpec{}, itSpec(1, "4Gi"), pref, field.NewPath("spec", "template", "spec"))
	// KubeVirt reports the first unmet requirement only.
	assert.Equal(t, []string{"spec.instancetype"}, errPaths(errs))
	assert.Contains(t, errs[0].Detail, "CPU")
}

func TestDecodeCommonInstancetypes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "instancetypes", "common.yaml"))
	require.NoError(t, err)
	objs, err := DecodeBytes(data)
	require.NoError(t, err)
	require.Len(t, objs, 8)
	for _, o := range objs {
		SetDefaults(o)
		assert.Empty(t, Validate(o), o.GetName())
	}
	u1, ok := objs[1].(*VirtualMachineClusterInstancetype)
	require.True(t, ok)
	assert.Equal(t, "u1.medium", u1.Name)
	assert.Equal(t, uint32(1), u1.Spec.CPU.Guest)
	assert.Equal(t, "4Gi", u1.Spec.Memory.Guest.String())
}

// The instance type's host-dependent fields (IO threads, NUMA, realtime,
// launch security, passthrough devices) are applied to the template, and
// a template that sets one too conflicts at its path, as in KubeVirt.
func TestExpandInstancetypeHostFields(t *testing.T) {
	auto := IOThreadsPolicyAuto
	pool := uint32(4)
	it := itSpec(2, "2Gi")
	it.IOThreadsPolicy = &auto
	it.IOThreads = &DiskIOThreads{SupplementalPoolThreadCount: &pool}
	it.CPU.NUMA = &NUMA{GuestMappingPassthrough: &NUMAGuestMappingPassthrough{}}
	it.CPU.Realtime = &Realtime{Mask: "0"}
	it.LaunchSecurity = &LaunchSecurity{SEV: &SEV{}}
	it.GPUs = []GPU{{Name: "g", DeviceName: "nvidia.com/GA102"}}
	it.HostDevices = []HostDevice{{Name: "h", DeviceName: "intel.com/qat"}}

	spec := &VirtualMachineInstanceSpec{}
	require.Empty(t, applySpec(spec, it, nil, field.NewPath("spec", "template", "spec")))
	assert.Equal(t, IOThreadsPolicyAuto, *spec.Domain.IOThreadsPolicy)
	assert.Equal(t, uint32(4), *spec.Domain.IOThreads.SupplementalPoolThreadCount)
	assert.NotNil(t, spec.Domain.CPU.NUMA.GuestMappingPassthrough)
	assert.Equal(t, "0", spec.Domain.CPU.Realtime.Mask)
	assert.NotNil(t, spec.Domain.LaunchSecurity.SEV)
	assert.Equal(t, it.GPUs, spec.Domain.Devices.GPUs)
	assert.Equal(t, it.HostDevices, spec.Domain.Devices.HostDevices)
	spec.Domain.Devices.GPUs[0].Name = "changed"
	assert.Equal(t, "g", it.GPUs[0].Name, "the instance type is not shared with the VMI")

	shared := IOThreadsPolicyShared
	conflicting := &VirtualMachineInstanceSpec{Domain: DomainSpec{
		CPU:             &CPU{NUMA: &NUMA{}, Realtime: &Realtime{}},
		IOThreadsPolicy: &shared,
		IOThreads:       &DiskIOThreads{SupplementalPoolThreadCount: &pool},
		LaunchSecurity:  &LaunchSecurity{},
		Devices:         Devices{GPUs: []GPU{{Name: "x"}}, HostDevices: []HostDevice{{Name: "y"}}},
	}}
	errs := applySpec(conflicting, it, nil, field.NewPath("spec", "template", "spec"))
	var paths []string
	for _, e := range errs {
		assert.Equal(t, field.ErrorTypeInvalid, e.Type)
		paths = append(paths, e.Field)
	}
	assert.ElementsMatch(t, []string{
		"spec.template.spec.domain.cpu.numa", "spec.template.spec.domain.cpu.realtime",
		"spec.template.spec.domain.ioThreadsPolicy", "spec.template.spec.domain.ioThreads.supplementalPoolThreadCount",
		"spec.template.spec.domain.launchSecurity", "spec.template.spec.domain.devices.gpus",
		"spec.template.spec.domain.devices.hostDevices",
	}, paths)
}

func TestValidateInstancetypesAndPreferences(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "x"}
	tests := []struct {
		name  string
		obj   Object
		paths []string
	}{
		{"valid", &VirtualMachineClusterInstancetype{ObjectMeta: meta, Spec: *itSpec(1, "1Gi")}, nil},
		{"unknown ioThreadsPolicy", &VirtualMachineClusterInstancetype{ObjectMeta: meta, Spec: func() VirtualMachineInstancetypeSpec {
			s := *itSpec(1, "1Gi")
			p := IOThreadsPolicy("dedicated")
			s.IOThreadsPolicy = &p
			return s
		}()}, []string{"spec.ioThreadsPolicy"}},
		{"no cpu, no memory", &VirtualMachineClusterInstancetype{ObjectMeta: meta},
			[]string{"spec.cpu.guest", "spec.memory.guest"}},
		{"overcommit with hugepages", &VirtualMachineInstancetype{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"},
			Spec: VirtualMachineInstancetypeSpec{CPU: CPUInstancetype{Guest: 1}, Memory: MemoryInstancetype{
				Guest: resource.MustParse("1Gi"), OvercommitPercent: 10, Hugepages: &Hugepages{PageSize: "2Mi"}}}},
			[]string{"spec.memory.overcommitPercent"}},
		{"namespace on a cluster kind", &VirtualMachineClusterPreference{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"}},
			[]string{"metadata.namespace"}},
		{"bad topology and bus", &VirtualMachinePreference{ObjectMeta: meta, Spec: VirtualMachinePreferenceSpec{
			CPU: &CPUPreferences{PreferredCPUTopology: ptrTo(PreferredCPUTopology("diagonal"))}, Devices: &DevicePreferences{PreferredDiskBus: "ide"}}},
			[]string{"spec.cpu.preferredCPUTopology", "spec.devices.preferredDiskBus"}},
		{"VM matcher kind", &VirtualMachine{ObjectMeta: meta, Spec: VirtualMachineSpec{RunStrategy: ptrTo(RunStrategyHalted),
			Template:     &VirtualMachineInstanceTemplateSpec{},
			Instancetype: &InstancetypeMatcher{Name: "u1.small", Kind: "VirtualMachinePreference"}}},
			[]string{"spec.instancetype.kind"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.paths, errPaths(Validate(tt.obj)))
		})
	}
}

// applySpec applies to a template with spec and no metadata.
func applySpec(spec *VirtualMachineInstanceSpec, it *VirtualMachineInstancetypeSpec, pref *VirtualMachinePreferenceSpec, base *field.Path) field.ErrorList {
	tmpl := &VirtualMachineInstanceTemplateSpec{Spec: *spec}
	errs := ApplyInstancetype(tmpl, it, pref, base)
	*spec = tmpl.Spec
	return errs
}

func TestApplyInstancetypeAnnotations(t *testing.T) {
	it := itSpec(1, "1Gi")
	it.Annotations = map[string]string{"a": "1", "b": "2"}
	tests := []struct {
		name  string
		have  map[string]string
		want  map[string]string
		paths []string
	}{
		{"added", nil, map[string]string{"a": "1", "b": "2"}, nil},
		{"same value", map[string]string{"a": "1"}, map[string]string{"a": "1", "b": "2"}, nil},
		{"other value conflicts", map[string]string{"a": "x"}, map[string]string{"a": "x"}, []string{"annotations.a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := &VirtualMachineInstanceTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: tt.have}}
			errs := ApplyInstancetype(tmpl, it, nil, field.NewPath("spec", "template", "spec"))
			assert.Equal(t, tt.paths, errPaths(errs))
			assert.Equal(t, tt.want, tmpl.ObjectMeta.Annotations)
		})
	}
}

func TestApplyDiskAndFirmwarePreferences(t *testing.T) {
	tests := []struct {
		name string
		tmpl VirtualMachineInstanceSpec
		pref VirtualMachinePreferenceSpec
		want func(t *testing.T, s *VirtualMachineInstanceSpec)
	}{
		{"cache, io and dedicated thread on a virtio disk",
			VirtualMachineInstanceSpec{Domain: DomainSpec{Devices: Devices{Disks: []Disk{{Name: "a"}, {Name: "b", Cache: CacheNone}}}}},
			VirtualMachinePreferenceSpec{Devices: &DevicePreferences{PreferredDiskBus: DiskBusVirtio, PreferredDiskCache: CacheWriteThrough,
				PreferredDiskIO: IONative, PreferredDiskDedicatedIoThread: ptrTo(true)}},
			func(t *testing.T, s *VirtualMachineInstanceSpec) {
				a, b := s.Domain.Devices.Disks[0], s.Domain.Devices.Disks[1]
				assert.Equal(t, CacheWriteThrough, a.Cache)
				assert.Equal(t, CacheNone, b.Cache, "the template's cache wins")
				assert.Equal(t, IONative, a.IO)
				assert.Equal(t, ptrTo(true), a.DedicatedIOThread)
			}},
		{"preferredEfi over preferredUseEfi", VirtualMachineInstanceSpec{},
			VirtualMachinePreferenceSpec{Firmware: &FirmwarePreferences{PreferredEfi: &EFI{Persistent: ptrTo(true)}, PreferredUseSecureBoot: ptrTo(true)}},
			func(t *testing.T, s *VirtualMachineInstanceSpec) {
				assert.Equal(t, &EFI{Persistent: ptrTo(true)}, s.Domain.Firmware.Bootloader.EFI)
			}},
		{"secure boot on the template's EFI", VirtualMachineInstanceSpec{Domain: DomainSpec{Firmware: &Firmware{Bootloader: &Bootloader{EFI: &EFI{}}}}},
			VirtualMachinePreferenceSpec{Firmware: &FirmwarePreferences{PreferredUseBios: ptrTo(true), PreferredUseSecureBoot: ptrTo(false)}},
			func(t *testing.T, s *VirtualMachineInstanceSpec) {
				assert.Nil(t, s.Domain.Firmware.Bootloader.BIOS, "the template's EFI wins")
				assert.Equal(t, ptrTo(false), s.Domain.Firmware.Bootloader.EFI.SecureBoot)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.tmpl.DeepCopy()
			require.Empty(t, applySpec(spec, nil, &tt.pref, field.NewPath("spec", "template", "spec")))
			tt.want(t, spec)
		})
	}
}
