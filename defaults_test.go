package virtkit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

func fixedUUID() types.UID { return "11111111-2222-4333-8444-555555555555" }

func decodeOne[T Object](t *testing.T, manifest string) T {
	t.Helper()
	objs, err := DecodeBytes([]byte(manifest))
	require.NoError(t, err)
	require.Len(t, objs, 1)
	obj, ok := objs[0].(T)
	require.True(t, ok, "got %T", objs[0])
	return obj
}

func TestSetDefaultsVMI(t *testing.T) {
	vmi := decodeOne[*VirtualMachineInstance](t, `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: a, namespace: ns}
spec:
  domain:
    devices:
      disks:
      - name: cd
        cdrom: {}
      inputs:
      - {name: tablet, type: tablet}
    memory: {guest: 128Mi}
    features:
      acpi: {}
      smm: {}
      hyperv:
        spinlocks: {}
        synictimer: {}
        evmcs: {}
    clock:
      utc: {}
      timer:
        hpet: {present: false}
        rtc: {}
    firmware:
      bootloader:
        efi: {}
  readinessProbe:
    guestAgentPing: {}
  volumes:
  - name: cd
    containerDisk: {image: "quay.io/x/cd:v1"}
  - name: root
    containerDisk: {image: "quay.io/x/root"}
`)
	DefaultOptions{NewUUID: fixedUUID}.SetDefaults(vmi)
	s := vmi.Spec
	assert.Equal(t, "amd64", s.Architecture)
	assert.Equal(t, "q35", s.Domain.Machine.Type)
	_, hasMemRequest := s.Domain.Resources.Requests[ResourceMemory]
	assert.False(t, hasMemRequest, "KubeVirt derives no memory request from memory.guest")
	assert.Equal(t, CPUTopology{Cores: 1, Sockets: 1, Threads: 1}, CPUTopology{Cores: s.Domain.CPU.Cores, Sockets: s.Domain.CPU.Sockets, Threads: s.Domain.CPU.Threads})
	assert.Equal(t, uint32(4), s.Domain.CPU.MaxSockets, "LiveUpdate: room for 4x the sockets")
	assert.Nil(t, s.Domain.Memory.MaxGuest, "no memory hotplug below 1Gi")
	assert.Equal(t, CPUModeHostModel, s.Domain.CPU.Model)
	assert.Equal(t, PullIfNotPresent, s.Volumes[0].ContainerDisk.ImagePullPolicy)
	assert.Equal(t, PullAlways, s.Volumes[1].ContainerDisk.ImagePullPolicy)
	assert.Equal(t, EvictionStrategyNone, *s.EvictionStrategy)
	require.Len(t, s.Networks, 1)
	assert.Equal(t, DefaultNetworkName, s.Networks[0].Name)
	assert.NotNil(t, s.Networks[0].Pod)
	require.Len(t, s.Domain.Devices.Interfaces, 1)
	assert.NotNil(t, s.Domain.Devices.Interfaces[0].Bridge, "KubeVirt's cluster default binding is bridge")
	assert.Empty(t, s.Domain.Devices.Interfaces[0].Model, "the model is the converter's choice (virtio)")
	require.Len(t, s.Domain.Devices.Disks, 2, "a disk is added for the root volume")
	assert.Equal(t, "root", s.Domain.Devices.Disks[1].Name)
	assert.Equal(t, DiskBusSATA, s.Domain.Devices.Disks[1].Disk.Bus)
	cd := s.Domain.Devices.Disks[0].CDRom
	require.NotNil(t, cd)
	assert.True(t, *cd.ReadOnly)
	assert.Equal(t, TrayStateClosed, cd.Tray)
	assert.Equal(t, DiskBusSATA, cd.Bus)
	assert.Equal(t, InputBusUSB, s.Domain.Devices.Inputs[0].Bus)
	p := s.ReadinessProbe
	assert.Equal(t, []int32{1, 10, 1, 3}, []int32{p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold})
	assert.Nil(t, s.TerminationGracePeriodSeconds, "KubeVirt leaves the grace period to its default of 30s")
	assert.Equal(t, fixedUUID(), s.Domain.Firmware.UUID)
	assert.Nil(t, s.Domain.Firmware.Bootloader.EFI.SecureBoot, "unset means on, for EFI on amd64")
	f := s.Domain.Features
	assert.True(t, *f.ACPI.Enabled)
	assert.True(t, *f.SMM.Enabled)
	assert.Equal(t, uint32(4096), *f.Hyperv.Spinlocks.Retries)
	assert.True(t, featureOn(f.Hyperv.SyNIC), "synictimer needs synic")
	assert.True(t, featureOn(f.Hyperv.VPIndex), "synic needs vpindex")
	assert.True(t, featureOn(f.Hyperv.Frequencies), "synictimer needs frequencies")
	assert.True(t, featureOn(f.Hyperv.VAPIC), "evmcs needs vapic")
	assert.False(t, *s.Domain.Clock.Timer.HPET.Enabled, "explicit present: false is kept")
	assert.True(t, *s.Domain.Clock.Timer.RTC.Enabled)

	// Idempotent: a second pass changes nothing (and asks for no new UUID).
	again := vmi.DeepCopy()
	DefaultOptions{NewUUID: func() types.UID { t.Fatal("UUID requested twice"); return "" }}.SetDefaults(again)
	assert.True(t, equality.Semantic.DeepEqual(vmi, again))
}

func TestSetDefaultsKeepsExplicitValues(t *testing.T) {
	vmi := decodeOne[*VirtualMachineInstance](t, `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: a}
spec:
  architecture: arm64
  evictionStrategy: LiveMigrate
  terminationGracePeriodSeconds: 0
  domain:
    machine: {type: pc-q35-9.0}
    cpu: {cores: 2, model: host-passthrough}
    resources:
      limits: {cpu: "4", memory: 1Gi}
    firmware: {uuid: 5d307ca9-b3ef-428c-8861-06e72d69f223}
    devices:
      disks:
      - name: root
      interfaces:
      - name: default
        masquerade: {}
        model: e1000
  networks:
  - name: default
    pod: {}
  volumes:
  - name: root
    containerDisk: {image: img@sha256:abc}
`)
	SetDefaults(vmi)
	s := vmi.Spec
	assert.Equal(t, "pc-q35-9.0", s.Domain.Machine.Type)
	assert.Equal(t, EvictionStrategyLiveMigrate, *s.EvictionStrategy)
	assert.Equal(t, int64(0), *s.TerminationGracePeriodSeconds)
	assert.Equal(t, uint32(2), s.Domain.CPU.Cores)
	assert.Equal(t, uint32(0), s.Domain.CPU.Sockets, "a partial topology is left as given (sockets come from the cpu limit only when no topology is given)")
	assert.Zero(t, s.Domain.CPU.MaxSockets, "no CPU hotplug on arm64")
	assert.False(t, *s.Domain.Firmware.Bootloader.EFI.SecureBoot, "arm64 boots EFI without secure boot")
	assert.Equal(t, "host-passthrough", s.Domain.CPU.Model)
	assert.Equal(t, types.UID("5d307ca9-b3ef-428c-8861-06e72d69f223"), s.Domain.Firmware.UUID)
	assert.Equal(t, "e1000", s.Domain.Devices.Interfaces[0].Model)
	assert.Equal(t, DiskBusVirtio, s.Domain.Devices.Disks[0].Disk.Bus, "arm64 defaults disks to virtio")
	assert.Equal(t, PullIfNotPresent, s.Volumes[0].ContainerDisk.ImagePullPolicy)
	assert.Equal(t, "4", ptrTo(s.Domain.Resources.Requests[ResourceCPU]).String(), "cpu request follows the limit")
	assert.Equal(t, "1Gi", s.Domain.Memory.Guest.String(), "memory.guest from limits when no request")
	_, hasMemRequest := s.Domain.Resources.Requests[ResourceMemory]
	assert.False(t, hasMemRequest)
}

func TestSetDefaultsTopologyFromCPU(t *testing.T) {
	vmi := &VirtualMachineInstance{}
	vmi.Spec.Domain.Resources.Requests = ResourceList{ResourceCPU: resource.MustParse("3")}
	SetDefaults(vmi)
	assert.Equal(t, uint32(3), vmi.Spec.Domain.CPU.Sockets)
	assert.NotEmpty(t, vmi.Spec.Domain.Firmware.UUID)
	assert.True(t, IsValidUUID(string(vmi.Spec.Domain.Firmware.UUID)))
}

func TestSetDefaultsNetworkOptions(t *testing.T) {
	vmi := &VirtualMachineInstance{}
	DefaultOptions{PodNetworkBinding: NetworkBindingMasquerade, EvictionStrategy: EvictionStrategyLiveMigrate}.SetDefaults(vmi)
	require.Len(t, vmi.Spec.Domain.Devices.Interfaces, 1)
	assert.NotNil(t, vmi.Spec.Domain.Devices.Interfaces[0].Masquerade)
	assert.Equal(t, EvictionStrategyLiveMigrate, *vmi.Spec.EvictionStrategy)

	off := &VirtualMachineInstance{}
	off.Spec.Domain.Devices.AutoattachPodInterface = ptrTo(false)
	SetDefaults(off)
	assert.Empty(t, off.Spec.Networks)
	assert.Empty(t, off.Spec.Domain.Devices.Interfaces)
}

func TestSetDefaultsVMAndReplicaSet(t *testing.T) {
	vm := &VirtualMachine{Spec: VirtualMachineSpec{Template: &VirtualMachineInstanceTemplateSpec{}}}
	vm.Name = "vm-cirros"
	SetDefaults(vm)
	// UUIDv5(SHA-1, 6a1a24a1-..., "vm-cirros"), cross-checked with Python's uuid.uuid5.
	assert.Equal(t, types.UID("0d2a2043-41c0-59c3-9b17-025022203668"), vm.Spec.Template.Spec.Domain.Firmware.UUID)
	assert.Nil(t, vm.Spec.RunStrategy, "run strategy is not defaulted: validation requires one")

	assert.True(t, IsValidUUID(vm.Spec.Template.Spec.Domain.Firmware.Serial), "a random serial, as KubeVirt's VM mutator sets")
	assert.Equal(t, "q35", vm.Spec.Template.Spec.Domain.Machine.Type)
	assert.Equal(t, "amd64", vm.Spec.Template.Spec.Architecture)
	// The rest of the template is defaulted on each VMI made from it, as
	// in KubeVirt.
	assert.Nil(t, vm.Spec.Template.Spec.Domain.CPU)
	assert.Empty(t, vm.Spec.Template.Spec.Networks)

	unnamed := &VirtualMachine{Spec: VirtualMachineSpec{Template: &VirtualMachineInstanceTemplateSpec{}}}
	SetDefaults(unnamed)
	assert.Empty(t, unnamed.Spec.Template.Spec.Domain.Firmware.UUID, "generateName: the name, and so the UUID, is not known yet")

	rs := &VirtualMachineInstanceReplicaSet{Spec: VirtualMachineInstanceReplicaSetSpec{Template: &VirtualMachineInstanceTemplateSpec{}}}
	SetDefaults(rs)
	assert.Equal(t, int32(1), *rs.Spec.Replicas)
	assert.Equal(t, VirtualMachineInstanceSpec{}, rs.Spec.Template.Spec, "KubeVirt does not default a replica set's template")
}

func TestSetDefaultsHotplug(t *testing.T) {
	gi := func(s string) *resource.Quantity { q := resource.MustParse(s); return &q }
	for _, tc := range []struct {
		name       string
		opts       DefaultOptions
		spec       func(*VirtualMachineInstanceSpec)
		maxSockets uint32
		maxGuest   string
	}{
		{"1Gi guest gets 4x", DefaultOptions{}, func(s *VirtualMachineInstanceSpec) { s.Domain.Memory = &Memory{Guest: gi("1Gi")} }, 4, "4Gi"},
		{"below 1Gi no maxGuest", DefaultOptions{}, func(s *VirtualMachineInstanceSpec) { s.Domain.Memory = &Memory{Guest: gi("1000Mi")} }, 4, ""},
		{"unaligned guest", DefaultOptions{}, func(s *VirtualMachineInstanceSpec) { s.Domain.Memory = &Memory{Guest: gi("1025Mi")} }, 4, ""},
		{"1Gi hugepages need 1Gi alignment", DefaultOptions{}, func(s *VirtualMachineInstanceSpec) {
			s.Domain.Memory = &Memory{Guest: gi("1536Mi"), Hugepages: &Hugepages{PageSize: "1Gi"}}
		}, 4, ""},
		{"sockets from the cpu limit", DefaultOptions{}, func(s *VirtualMachineInstanceSpec) {
			s.Domain.Memory = &Memory{Guest: gi("2Gi")}
			s.Domain.Resources.Limits = ResourceList{ResourceCPU: resource.MustParse("3")}
		}, 12, "8Gi"},
		{"512 vCPUs at most", DefaultOptions{}, func(s *VirtualMachineInstanceSpec) {
			s.Domain.Memory = &Memory{Guest: gi("2Gi")}
			s.Domain.CPU = &CPU{Sockets: 20, Cores: 8, Threads: 2}
		}, 32, "8Gi"},
		{"cores only: sockets 0, no CPU hotplug", DefaultOptions{}, func(s *VirtualMachineInstanceSpec) {
			s.Domain.Memory = &Memory{Guest: gi("2Gi")}
			s.Domain.CPU = &CPU{Cores: 2}
		}, 0, "8Gi"},
		{"explicit maxima kept", DefaultOptions{}, func(s *VirtualMachineInstanceSpec) {
			s.Domain.Memory = &Memory{Guest: gi("2Gi"), MaxGuest: gi("3Gi")}
			s.Domain.CPU = &CPU{Sockets: 1, MaxSockets: 2}
		}, 2, "3Gi"},
		{"NoHotplug", DefaultOptions{NoHotplug: true}, func(s *VirtualMachineInstanceSpec) { s.Domain.Memory = &Memory{Guest: gi("2Gi")} }, 0, ""},
		{"not on arm64", DefaultOptions{}, func(s *VirtualMachineInstanceSpec) {
			s.Architecture = "arm64"
			s.Domain.Memory = &Memory{Guest: gi("2Gi")}
		}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := &VirtualMachineInstance{}
			tc.spec(&vmi.Spec)
			tc.opts.SetDefaults(vmi)
			assert.Equal(t, tc.maxSockets, vmi.Spec.Domain.CPU.MaxSockets)
			if tc.maxGuest == "" {
				assert.Nil(t, vmi.Spec.Domain.Memory.MaxGuest)
			} else {
				require.NotNil(t, vmi.Spec.Domain.Memory.MaxGuest)
				assert.Equal(t, tc.maxGuest, vmi.Spec.Domain.Memory.MaxGuest.String())
			}
		})
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	for image, want := range map[string]PullPolicy{
		"registry:5000/kubevirt/cirros:devel": PullIfNotPresent,
		"registry:5000/kubevirt/cirros":       PullAlways,
		"cirros:latest":                       PullAlways,
		"cirros":                              PullAlways,
		"cirros@sha256:0123":                  PullIfNotPresent,
	} {
		assert.Equal(t, want, defaultPullPolicy(image), image)
	}
}

func TestUUIDHelpers(t *testing.T) {
	ns, err := parseUUID(FirmwareUUIDNamespace)
	require.NoError(t, err)
	assert.Equal(t, ns, firmwareUUIDNamespaceBytes())
	assert.Equal(t, FirmwareUUIDNamespace, formatUUID(ns))
	assert.Equal(t, types.UID("5a9fc181-957e-5c32-9e5a-2de5e9673531"), FirmwareUUIDForVM("testvm"))
	a, b := RandomUUID(), RandomUUID()
	assert.NotEqual(t, a, b)
	assert.Equal(t, byte('4'), a[14], "version 4")
	assert.False(t, IsValidUUID("not-a-uuid"))
	assert.False(t, IsValidUUID("zzzzzzzz-2222-4333-8444-555555555555"))
}
