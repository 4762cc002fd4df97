package virtkit

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const validVMIManifest = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: v
  namespace: ns
  labels: {app: web}
spec:
  domain:
    resources:
      requests: {memory: 128Mi, cpu: 500m}
      limits: {memory: 256Mi, cpu: "1"}
    devices:
      disks:
      - name: root
        disk: {bus: virtio}
        bootOrder: 1
      - name: cd
        cdrom: {bus: sata}
      - name: data
        lun: {bus: scsi}
      - name: cloudinit
        disk: {bus: virtio}
      interfaces:
      - name: default
        masquerade: {}
        ports: [{name: http, port: 80, protocol: TCP}]
      - name: second
        bridge: {}
        macAddress: "de:ad:00:00:be:af"
      inputs:
      - {name: tablet, type: tablet, bus: virtio}
  networks:
  - name: default
    pod: {}
  - name: second
    multus: {networkName: br}
  volumes:
  - name: root
    containerDisk: {image: img:v1}
  - name: cd
    containerDisk: {image: iso:v1}
  - name: data
    persistentVolumeClaim: {claimName: data}
  - name: cloudinit
    cloudInitNoCloud: {userData: "#cloud-config\n"}
  readinessProbe:
    tcpSocket: {port: 22}
`

func validVMI(t *testing.T) *VirtualMachineInstance {
	t.Helper()
	vmi := decodeOne[*VirtualMachineInstance](t, validVMIManifest)
	DefaultOptions{NewUUID: fixedUUID}.SetDefaults(vmi)
	require.Empty(t, Validate(vmi), "the base VMI must be valid")
	return vmi
}

type wantFieldError struct {
	path string
	typ  field.ErrorType
}

func assertFieldErrors(t *testing.T, errs field.ErrorList, want []wantFieldError) {
	t.Helper()
	var got []wantFieldError
	for _, e := range errs {
		got = append(got, wantFieldError{e.Field, e.Type})
	}
	sortErrs := func(l []wantFieldError) {
		slices.SortFunc(l, func(a, b wantFieldError) int { return strings.Compare(a.path+string(a.typ), b.path+string(b.typ)) })
	}
	sortErrs(got)
	want = slices.Clone(want)
	sortErrs(want)
	assert.Equal(t, want, got, "errors: %v", errs)
}

func TestValidateVMI(t *testing.T) {
	disks := "spec.domain.devices.disks"
	ifaces := "spec.domain.devices.interfaces"
	tests := []struct {
		name   string
		mutate func(*VirtualMachineInstance)
		want   []wantFieldError
	}{
		{"1 volume without disk", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks = slices.Delete(v.Spec.Domain.Devices.Disks, 3, 4)
		}, []wantFieldError{{"spec.volumes[3].name", field.ErrorTypeNotFound}}},
		{"2 disk without volume", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, Disk{Name: "ghost", DiskDevice: DiskDevice{Disk: &DiskTarget{Bus: DiskBusVirtio}}})
		}, []wantFieldError{{disks + "[4].name", field.ErrorTypeNotFound}}},
		{"3 duplicate and invalid disk names", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[1].Name = "root"
			v.Spec.Domain.Devices.Disks[2].Name = "Bad_Name"
		}, []wantFieldError{
			{disks + "[1].name", field.ErrorTypeDuplicate},
			{disks + "[2].name", field.ErrorTypeInvalid},
			{disks + "[2].name", field.ErrorTypeNotFound},
			{"spec.volumes[1].name", field.ErrorTypeNotFound},
			{"spec.volumes[2].name", field.ErrorTypeNotFound},
		}},
		{"4 duplicate volume names", func(v *VirtualMachineInstance) {
			v.Spec.Volumes[1].Name = "root"
		}, []wantFieldError{{"spec.volumes[1].name", field.ErrorTypeDuplicate}}}, // disks[1] is a CD-ROM: an empty drive may have no volume
		{"5 no volume source", func(v *VirtualMachineInstance) {
			v.Spec.Volumes[0].ContainerDisk = nil
		}, []wantFieldError{{"spec.volumes[0]", field.ErrorTypeInvalid}}},
		{"5 two volume sources", func(v *VirtualMachineInstance) {
			v.Spec.Volumes[0].EmptyDisk = &EmptyDiskSource{Capacity: resource.MustParse("1Gi")}
		}, []wantFieldError{{"spec.volumes[0]", field.ErrorTypeInvalid}}},
		{"6 two target types", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[0].CDRom = &CDRomTarget{}
		}, []wantFieldError{{disks + "[0]", field.ErrorTypeInvalid}}},
		{"7 unknown bus and ide", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[0].Disk.Bus = "floppy"
			v.Spec.Domain.Devices.Disks[3].Disk.Bus = DiskBusIDE
		}, []wantFieldError{{disks + "[0].disk.bus", field.ErrorTypeNotSupported}, {disks + "[3].disk.bus", field.ErrorTypeNotSupported}}},
		{"8 virtio cdrom", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[1].CDRom.Bus = DiskBusVirtio
		}, []wantFieldError{{disks + "[1].cdrom.bus", field.ErrorTypeInvalid}}},
		{"9 readonly sata disk", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[0].Disk.Bus = DiskBusSATA
			v.Spec.Domain.Devices.Disks[0].Disk.ReadOnly = true
		}, []wantFieldError{{disks + "[0].disk.bus", field.ErrorTypeInvalid}}},
		{"10 pci address on sata and malformed", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[0].Disk.PciAddress = "0000:01:00"
			v.Spec.Domain.Devices.Disks[3].Disk.Bus = DiskBusSATA
			v.Spec.Domain.Devices.Disks[3].Disk.PciAddress = "0000:01:00.0"
		}, []wantFieldError{{disks + "[0].disk.pciAddress", field.ErrorTypeInvalid}, {disks + "[3].disk.pciAddress", field.ErrorTypeInvalid}}},
		{"11 io thread on scsi", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[2].DedicatedIOThread = ptrTo(true)
		}, []wantFieldError{{disks + "[2]", field.ErrorTypeInvalid}}},
		{"12 cache, io, errorPolicy", func(v *VirtualMachineInstance) {
			d := &v.Spec.Domain.Devices.Disks[0]
			d.Cache, d.IO, d.ErrorPolicy = "unsafe", "io_uring", ptrTo(DiskErrorPolicy("retry"))
		}, []wantFieldError{{disks + "[0].cache", field.ErrorTypeNotSupported}, {disks + "[0].io", field.ErrorTypeNotSupported}, {disks + "[0].errorPolicy", field.ErrorTypeNotSupported}}},
		{"13 serial", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[0].Serial = "bad serial!"
			v.Spec.Domain.Devices.Disks[3].Serial = strings.Repeat("a", 257)
		}, []wantFieldError{{disks + "[0].serial", field.ErrorTypeInvalid}, {disks + "[3].serial", field.ErrorTypeTooLong}}},
		{"14 boot order zero and duplicate across disks and interfaces", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[1].BootOrder = ptrTo(uint(0))
			v.Spec.Domain.Devices.Interfaces[0].BootOrder = ptrTo(uint(1))
		}, []wantFieldError{{disks + "[1].bootOrder", field.ErrorTypeInvalid}, {ifaces + "[0].bootOrder", field.ErrorTypeDuplicate}}},
		{"15 lun on a container disk", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[0].Disk = nil
			v.Spec.Domain.Devices.Disks[0].LUN = &LunTarget{Bus: DiskBusSCSI}
		}, []wantFieldError{{disks + "[0].lun", field.ErrorTypeInvalid}}},
		{"16 no memory", func(v *VirtualMachineInstance) {
			delete(v.Spec.Domain.Resources.Requests, ResourceMemory)
			v.Spec.Domain.Memory = nil
		}, []wantFieldError{{"spec.domain.resources.requests.memory", field.ErrorTypeRequired}}},
		{"17 memory below 1M, negative limit", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Resources.Requests[ResourceMemory] = resource.MustParse("1k")
			v.Spec.Domain.Resources.Limits[ResourceMemory] = resource.MustParse("-1")
			v.Spec.Domain.Memory.Guest = nil
		}, []wantFieldError{
			{"spec.domain.resources.requests.memory", field.ErrorTypeInvalid},
			{"spec.domain.resources.limits.memory", field.ErrorTypeInvalid}, // a limit that is not > 0 bounds nothing
		}},
		{"17 request above limit", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Resources.Requests[ResourceMemory] = resource.MustParse("512Mi")
		}, []wantFieldError{{"spec.domain.resources.requests.memory", field.ErrorTypeInvalid}}},
		{"18 guest above limit is allowed (LiveUpdate rollout)", func(v *VirtualMachineInstance) {
			g := resource.MustParse("1Gi")
			v.Spec.Domain.Memory.Guest = &g
		}, nil},
		{"19 hugepages bigger than memory", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Memory.Hugepages = &Hugepages{PageSize: "1Gi"}
		}, []wantFieldError{{"spec.domain.resources.requests.memory", field.ErrorTypeInvalid}}},
		{"19 memory not a multiple of the page size", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Resources.Requests[ResourceMemory] = resource.MustParse("129Mi")
			v.Spec.Domain.Memory.Hugepages = &Hugepages{PageSize: "2Mi"}
		}, []wantFieldError{{"spec.domain.resources.requests.memory", field.ErrorTypeInvalid}}},
		{"19 unparseable page size", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Memory.Hugepages = &Hugepages{PageSize: "huge"}
		}, []wantFieldError{{"spec.domain.memory.hugepages.pageSize", field.ErrorTypeInvalid}}},
		{"20 cpu request above limit, unknown resource", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Resources.Requests[ResourceCPU] = resource.MustParse("2")
			v.Spec.Domain.Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
		}, []wantFieldError{{"spec.domain.resources.requests.cpu", field.ErrorTypeInvalid}, {"spec.domain.resources.requests.nvidia.com/gpu", field.ErrorTypeNotSupported}}},
		{"21 isolate emulator thread without dedicated cpus", func(v *VirtualMachineInstance) {
			v.Spec.Domain.CPU.IsolateEmulatorThread = true
		}, []wantFieldError{{"spec.domain.cpu.isolateEmulatorThread", field.ErrorTypeInvalid}}},
		{"21 dedicated cpus need whole equal cpus", func(v *VirtualMachineInstance) {
			v.Spec.Domain.CPU.DedicatedCPUPlacement = true
		}, []wantFieldError{{"spec.domain.resources.requests.cpu", field.ErrorTypeInvalid}, {"spec.domain.resources.requests.memory", field.ErrorTypeInvalid}}},
		{"22 sockets above maxSockets", func(v *VirtualMachineInstance) {
			v.Spec.Domain.CPU.Sockets, v.Spec.Domain.CPU.MaxSockets = 4, 2
		}, []wantFieldError{{"spec.domain.cpu.sockets", field.ErrorTypeInvalid}}},
		{"23 cpu feature policy", func(v *VirtualMachineInstance) {
			v.Spec.Domain.CPU.Features = []CPUFeature{{Name: "pcid", Policy: "maybe"}}
		}, []wantFieldError{{"spec.domain.cpu.features[0].policy", field.ErrorTypeNotSupported}}},
		{"25 secure boot without smm", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Firmware.Bootloader = &Bootloader{EFI: &EFI{}}
		}, []wantFieldError{{"spec.domain", field.ErrorTypeInvalid}}},
		{"25 secure boot with smm is fine, bios and efi are exclusive", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Firmware.Bootloader = &Bootloader{EFI: &EFI{SecureBoot: ptrTo(true)}, BIOS: &BIOS{}}
			v.Spec.Domain.Features = &Features{SMM: &FeatureState{}}
		}, []wantFieldError{{"spec.domain.firmware.bootloader", field.ErrorTypeInvalid}}},
		{"26 interface without network, network without interface", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Interfaces[1].Name = "third"
		}, []wantFieldError{{ifaces + "[1].name", field.ErrorTypeNotFound}, {"spec.networks[1].name", field.ErrorTypeNotFound}}},
		{"26 two interfaces on one network, duplicate network", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Interfaces[1].Name = "default"
			v.Spec.Networks = append(v.Spec.Networks, Network{Name: "second", NetworkSource: NetworkSource{Multus: &MultusNetwork{NetworkName: "x"}}})
		}, []wantFieldError{{ifaces + "[1].name", field.ErrorTypeDuplicate}, {"spec.networks[1].name", field.ErrorTypeNotFound}, {"spec.networks[2].name", field.ErrorTypeDuplicate}}},
		{"27 no binding, two bindings, discontinued", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Interfaces[0].Masquerade = nil
			v.Spec.Domain.Devices.Interfaces[1].SRIOV = &InterfaceSRIOV{}
			v.Spec.Networks = append(v.Spec.Networks, Network{Name: "third", NetworkSource: NetworkSource{Multus: &MultusNetwork{NetworkName: "x"}}})
			v.Spec.Domain.Devices.Interfaces = append(v.Spec.Domain.Devices.Interfaces, Interface{Name: "third", InterfaceBindingMethod: InterfaceBindingMethod{Slirp: &DeprecatedBinding{}}})
		}, []wantFieldError{{ifaces + "[0]", field.ErrorTypeRequired}, {ifaces + "[1]", field.ErrorTypeInvalid}, {ifaces + "[2]", field.ErrorTypeForbidden}}},
		{"28 masquerade on multus, sriov on pod", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Interfaces[0].Masquerade, v.Spec.Domain.Devices.Interfaces[0].SRIOV = nil, &InterfaceSRIOV{}
			v.Spec.Domain.Devices.Interfaces[1].Bridge, v.Spec.Domain.Devices.Interfaces[1].Masquerade = nil, &InterfaceMasquerade{}
		}, []wantFieldError{{ifaces + "[0].sriov", field.ErrorTypeInvalid}, {ifaces + "[1].name", field.ErrorTypeInvalid}}},
		{"29 two pod networks, no type, multus without name", func(v *VirtualMachineInstance) {
			v.Spec.Networks[1].Multus = nil
			v.Spec.Networks[1].Pod = &PodNetwork{}
			v.Spec.Networks = append(v.Spec.Networks, Network{Name: "x"}, Network{Name: "y", NetworkSource: NetworkSource{Multus: &MultusNetwork{}}})
			v.Spec.Domain.Devices.Interfaces = append(v.Spec.Domain.Devices.Interfaces,
				Interface{Name: "x", InterfaceBindingMethod: InterfaceBindingMethod{Bridge: &InterfaceBridge{}}},
				Interface{Name: "y", InterfaceBindingMethod: InterfaceBindingMethod{Bridge: &InterfaceBridge{}}})
		}, []wantFieldError{{"spec.networks[1]", field.ErrorTypeInvalid}, {"spec.networks[2]", field.ErrorTypeRequired}, {"spec.networks[3].multus.networkName", field.ErrorTypeRequired}}},
		{"29 pod and multus default", func(v *VirtualMachineInstance) {
			v.Spec.Networks[1].Multus.Default = true
		}, []wantFieldError{{"spec.networks", field.ErrorTypeInvalid}}},
		{"30 model, mac, pci address", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Interfaces[0].Model = "rtl9999"
			v.Spec.Domain.Devices.Interfaces[0].PciAddress = "01:00.0"
			v.Spec.Domain.Devices.Interfaces[1].MacAddress = "zz:00:00:00:00:00"
		}, []wantFieldError{{ifaces + "[0].model", field.ErrorTypeNotSupported}, {ifaces + "[0].pciAddress", field.ErrorTypeInvalid}, {ifaces + "[1].macAddress", field.ErrorTypeInvalid}}},
		{"30 multicast mac", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Interfaces[1].MacAddress = "01:00:5e:00:00:01"
		}, []wantFieldError{{ifaces + "[1].macAddress", field.ErrorTypeInvalid}}},
		{"31 ports", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Interfaces[0].Ports = []Port{{Name: "http", Port: 80}, {Name: "http", Port: 0, Protocol: "SCTP"}}
		}, []wantFieldError{{ifaces + "[0].ports[1].name", field.ErrorTypeDuplicate}, {ifaces + "[0].ports[1].port", field.ErrorTypeInvalid}, {ifaces + "[0].ports[1].protocol", field.ErrorTypeNotSupported}}},
		{"32 cloud-init too long, two sources, bad base64", func(v *VirtualMachineInstance) {
			ci := v.Spec.Volumes[3].CloudInitNoCloud
			ci.UserData = strings.Repeat("x", 2049)
			ci.NetworkDataBase64 = "!!!"
			ci.NetworkData = "version: 2"
		}, []wantFieldError{{"spec.volumes[3].cloudInitNoCloud", field.ErrorTypeTooLong}, {"spec.volumes[3].cloudInitNoCloud", field.ErrorTypeInvalid}, {"spec.volumes[3].cloudInitNoCloud.networkDataBase64", field.ErrorTypeInvalid}}},
		{"32 cloud-init without data", func(v *VirtualMachineInstance) {
			v.Spec.Volumes[3].CloudInitNoCloud = &CloudInitNoCloudSource{}
		}, []wantFieldError{{"spec.volumes[3].cloudInitNoCloud", field.ErrorTypeRequired}}},
		{"33 host disk", func(v *VirtualMachineInstance) {
			v.Spec.Volumes[2].PersistentVolumeClaim = nil
			v.Spec.Volumes[2].HostDisk = &HostDisk{Type: HostDiskExists, Capacity: resource.MustParse("1Gi")}
			v.Spec.Domain.Devices.Disks[2].LUN, v.Spec.Domain.Devices.Disks[2].Disk = nil, &DiskTarget{Bus: DiskBusVirtio}
		}, []wantFieldError{{"spec.volumes[2].hostDisk.path", field.ErrorTypeRequired}, {"spec.volumes[2].hostDisk.capacity", field.ErrorTypeInvalid}}},
		{"33 host disk type", func(v *VirtualMachineInstance) {
			v.Spec.Volumes[2].PersistentVolumeClaim = nil
			v.Spec.Volumes[2].HostDisk = &HostDisk{Path: "/x", Type: "Directory"}
			v.Spec.Domain.Devices.Disks[2].LUN, v.Spec.Domain.Devices.Disks[2].Disk = nil, &DiskTarget{Bus: DiskBusVirtio}
		}, []wantFieldError{{"spec.volumes[2].hostDisk.type", field.ErrorTypeNotSupported}}},
		{"35 probe with two handlers, tcp probe without pod network", func(v *VirtualMachineInstance) {
			v.Spec.ReadinessProbe.Exec = &ExecAction{Command: []string{"true"}}
			v.Spec.LivenessProbe = &Probe{}
		}, []wantFieldError{{"spec.readinessProbe", field.ErrorTypeInvalid}, {"spec.livenessProbe", field.ErrorTypeInvalid}}},
		{"35 start strategy", func(v *VirtualMachineInstance) {
			v.Spec.StartStrategy = ptrTo(StartStrategy("Later"))
		}, []wantFieldError{{"spec.startStrategy", field.ErrorTypeNotSupported}}},
		{"35 paused start with liveness probe", func(v *VirtualMachineInstance) {
			v.Spec.StartStrategy = ptrTo(StartStrategyPaused)
			v.Spec.LivenessProbe = &Probe{Handler: Handler{GuestAgentPing: &GuestAgentPing{}}}
		}, []wantFieldError{{"spec.startStrategy", field.ErrorTypeInvalid}}},
		{"36 eviction strategy", func(v *VirtualMachineInstance) {
			v.Spec.EvictionStrategy = ptrTo(EvictionStrategy("Evict"))
		}, []wantFieldError{{"spec.evictionStrategy", field.ErrorTypeNotSupported}}},
		{"37 inputs", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Devices.Inputs = []Input{{Name: "k", Type: "keyboard", Bus: "ps2"}}
		}, []wantFieldError{{"spec.domain.devices.inputs[0].type", field.ErrorTypeNotSupported}, {"spec.domain.devices.inputs[0].bus", field.ErrorTypeNotSupported}}},
		{"38 hostname, subdomain, dns", func(v *VirtualMachineInstance) {
			v.Spec.Hostname = "Not_A_Label"
			v.Spec.Subdomain = "-bad"
			v.Spec.DNSConfig = &PodDNSConfig{Nameservers: []string{"1.1.1.1", "8.8.8.8", "9.9.9.9", "nope"}, Searches: []string{"a", "b", "c", "d", "e", "f", "g"}}
		}, []wantFieldError{
			{"spec.hostname", field.ErrorTypeInvalid}, {"spec.subdomain", field.ErrorTypeInvalid},
			{"spec.dnsConfig.nameservers", field.ErrorTypeTooMany}, {"spec.dnsConfig.nameservers[3]", field.ErrorTypeInvalid},
			{"spec.dnsConfig.searches", field.ErrorTypeTooMany},
		}},
		{"40 architecture", func(v *VirtualMachineInstance) {
			v.Spec.Architecture = "riscv64"
		}, []wantFieldError{{"spec.architecture", field.ErrorTypeNotSupported}}},
		{"metadata", func(v *VirtualMachineInstance) {
			v.Name = ""
			v.Labels["bad key!"] = "x"
		}, []wantFieldError{{"metadata.name", field.ErrorTypeRequired}, {"metadata.labels", field.ErrorTypeInvalid}}},
		{"scheduling", func(v *VirtualMachineInstance) {
			v.Spec.Tolerations = []Toleration{{Operator: "Maybe"}, {Key: "k", Operator: TolerationOpExists, Value: "v", Effect: "Sometimes"}}
			v.Spec.Affinity = &Affinity{
				NodeAffinity: &NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &NodeSelector{NodeSelectorTerms: []NodeSelectorTerm{{
					MatchExpressions: []NodeSelectorRequirement{{Key: "zone", Operator: NodeSelectorOpIn}}}}}},
				PodAntiAffinity: &PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []WeightedPodAffinityTerm{{Weight: 0,
					PodAffinityTerm: PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}},
			}
		}, []wantFieldError{
			{"spec.tolerations[0].operator", field.ErrorTypeNotSupported},
			{"spec.tolerations[1].effect", field.ErrorTypeNotSupported},
			{"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values", field.ErrorTypeRequired},
			{"spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight", field.ErrorTypeInvalid},
			{"spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey", field.ErrorTypeRequired},
		}},
		{"firmware uuid, hyperv spinlocks, clock", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Firmware.UUID = "nope"
			v.Spec.Domain.Features = &Features{Hyperv: &FeatureHyperv{Spinlocks: &FeatureSpinlocks{Retries: ptrTo(uint32(100))}}}
			tz := ClockOffsetTimezone("Europe/Rome")
			v.Spec.Domain.Clock = &Clock{ClockOffset: ClockOffset{UTC: &ClockOffsetUTC{}, Timezone: &tz}, Timer: &Timer{RTC: &RTCTimer{TickPolicy: "later"}}}
		}, []wantFieldError{
			{"spec.domain.firmware.uuid", field.ErrorTypeInvalid},
			{"spec.domain.features.hyperv.spinlocks.spinlocks", field.ErrorTypeInvalid},
			{"spec.domain.clock", field.ErrorTypeInvalid},
			{"spec.domain.clock.timer.rtc.tickPolicy", field.ErrorTypeNotSupported},
		}},
		{"kernel boot", func(v *VirtualMachineInstance) {
			v.Spec.Domain.Firmware.KernelBoot = &KernelBoot{Container: &KernelBootContainer{}}
		}, []wantFieldError{{"spec.domain.firmware.kernelBoot.container.image", field.ErrorTypeRequired}, {"spec.domain.firmware.kernelBoot.container", field.ErrorTypeRequired}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vmi := validVMI(t)
			tt.mutate(vmi)
			assertFieldErrors(t, Validate(vmi), tt.want)
		})
	}
}

func TestValidateVM(t *testing.T) {
	base := func() *VirtualMachine {
		vm := &VirtualMachine{Spec: VirtualMachineSpec{RunStrategy: ptrTo(RunStrategyAlways), Template: &VirtualMachineInstanceTemplateSpec{}}}
		vm.Name = "vm"
		vm.Spec.Template.Spec.Domain.Memory = &Memory{Guest: ptrTo(resource.MustParse("64Mi"))}
		SetDefaults(vm)
		return vm
	}
	require.Empty(t, Validate(base()))
	tests := []struct {
		name   string
		mutate func(*VirtualMachine)
		want   []wantFieldError
	}{
		{"both running and runStrategy", func(vm *VirtualMachine) { vm.Spec.Running = ptrTo(true) },
			[]wantFieldError{{"spec.running", field.ErrorTypeInvalid}}},
		{"neither", func(vm *VirtualMachine) { vm.Spec.RunStrategy = nil },
			[]wantFieldError{{"spec.running", field.ErrorTypeRequired}}},
		{"running alone is fine", func(vm *VirtualMachine) { vm.Spec.RunStrategy, vm.Spec.Running = nil, ptrTo(false) }, nil},
		{"unknown strategy", func(vm *VirtualMachine) { vm.Spec.RunStrategy = ptrTo(VirtualMachineRunStrategy("Sometimes")) },
			[]wantFieldError{{"spec.runStrategy", field.ErrorTypeNotSupported}}},
		{"WaitAsReceiver is not supported", func(vm *VirtualMachine) { vm.Spec.RunStrategy = ptrTo(RunStrategyWaitAsReceiver) },
			[]wantFieldError{{"spec.runStrategy", field.ErrorTypeNotSupported}}},
		{"template required", func(vm *VirtualMachine) { vm.Spec.Template = nil },
			[]wantFieldError{{"spec.template", field.ErrorTypeRequired}}},
		{"template errors carry the full path", func(vm *VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Devices.Disks = append(vm.Spec.Template.Spec.Domain.Devices.Disks, Disk{Name: "ghost"})
		}, []wantFieldError{{"spec.template.spec.domain.devices.disks[0].name", field.ErrorTypeNotFound}}},
		{"data volume templates", func(vm *VirtualMachine) {
			vm.Spec.DataVolumeTemplates = []DataVolumeTemplateSpec{{}, {ObjectMeta: metav1.ObjectMeta{Name: "dv"}, Spec: DataVolumeSpec{
				Source: &DataVolumeImportSource{Blank: &DataVolumeBlankImage{}}, PVC: &PersistentVolumeClaimSpec{
					AccessModes: []PersistentVolumeAccessMode{ReadWriteOnce},
					Resources:   VolumeResourceRequirements{Requests: ResourceList{ResourceStorage: resource.MustParse("1Gi")}},
				}}}}
		}, []wantFieldError{
			{"spec.dataVolumeTemplates[0].metadata.name", field.ErrorTypeRequired},
			{"spec.dataVolumeTemplates[0].spec.pvc", field.ErrorTypeRequired},
			{"spec.dataVolumeTemplates[0].spec.source", field.ErrorTypeRequired},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := base()
			tt.mutate(vm)
			assertFieldErrors(t, Validate(vm), tt.want)
		})
	}
}

func TestValidateReplicaSet(t *testing.T) {
	base := func() *VirtualMachineInstanceReplicaSet {
		rs := &VirtualMachineInstanceReplicaSet{Spec: VirtualMachineInstanceReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: &VirtualMachineInstanceTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "a"}}},
		}}
		rs.Name = "rs"
		rs.Spec.Template.Spec.Domain.Memory = &Memory{Guest: ptrTo(resource.MustParse("64Mi"))}
		SetDefaults(rs)
		return rs
	}
	require.Empty(t, Validate(base()))
	tests := []struct {
		name   string
		mutate func(*VirtualMachineInstanceReplicaSet)
		want   []wantFieldError
	}{
		{"selector required", func(rs *VirtualMachineInstanceReplicaSet) { rs.Spec.Selector = nil },
			[]wantFieldError{{"spec.selector", field.ErrorTypeRequired}}},
		{"selector must match", func(rs *VirtualMachineInstanceReplicaSet) { rs.Spec.Selector.MatchLabels["app"] = "db" },
			[]wantFieldError{{"spec.selector", field.ErrorTypeInvalid}}},
		{"empty selector", func(rs *VirtualMachineInstanceReplicaSet) { rs.Spec.Selector = &metav1.LabelSelector{} },
			[]wantFieldError{{"spec.selector", field.ErrorTypeInvalid}}},
		{"template labels required", func(rs *VirtualMachineInstanceReplicaSet) { rs.Spec.Template.ObjectMeta.Labels = nil },
			[]wantFieldError{{"spec.template.metadata.labels", field.ErrorTypeRequired}}},
		{"negative replicas", func(rs *VirtualMachineInstanceReplicaSet) { rs.Spec.Replicas = ptrTo(int32(-1)) },
			[]wantFieldError{{"spec.replicas", field.ErrorTypeInvalid}}},
		{"template required", func(rs *VirtualMachineInstanceReplicaSet) { rs.Spec.Template = nil },
			[]wantFieldError{{"spec.template", field.ErrorTypeRequired}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := base()
			tt.mutate(rs)
			assertFieldErrors(t, Validate(rs), tt.want)
		})
	}
}

func TestValidateMigrationPolicyNode(t *testing.T) {
	vmim := &VirtualMachineInstanceMigration{}
	vmim.Name = "m"
	assertFieldErrors(t, Validate(vmim), []wantFieldError{{"spec.vmiName", field.ErrorTypeRequired}})
	vmim.Spec.VMIName = "v"
	vmim.Spec.Priority = ptrTo(MigrationPriority("urgent"))
	assertFieldErrors(t, Validate(vmim), []wantFieldError{{"spec.priority", field.ErrorTypeNotSupported}})

	mp := &MigrationPolicy{}
	mp.Name = "p"
	mp.Namespace = "ns"
	mp.Spec.MaxDowntimeMs = ptrTo(uint64(0))
	mp.Spec.BandwidthPerMigration = ptrTo(resource.MustParse("-1Mi"))
	mp.Spec.CompletionTimeoutPerGiB = ptrTo(int64(-1))
	assertFieldErrors(t, Validate(mp), []wantFieldError{
		{"metadata.namespace", field.ErrorTypeForbidden},
		{"spec.selectors", field.ErrorTypeRequired},
		{"spec.maxDowntimeMs", field.ErrorTypeInvalid},
		{"spec.bandwidthPerMigration", field.ErrorTypeInvalid},
		{"spec.completionTimeoutPerGiB", field.ErrorTypeInvalid},
	})
	mp = &MigrationPolicy{Spec: MigrationPolicySpec{Selectors: &Selectors{}, MaxDowntimeMs: ptrTo(uint64(2000000))}}
	mp.Name = "p"
	assert.Empty(t, Validate(mp))

	n := &Node{Spec: NodeSpec{Taints: []Taint{{Key: "k", Effect: "Never"}}}}
	n.Name = "n1"
	n.Status.Capacity = ResourceList{ResourceCPU: resource.MustParse("-1")}
	assertFieldErrors(t, Validate(n), []wantFieldError{{"spec.taints[0].effect", field.ErrorTypeNotSupported}, {"status.capacity.cpu", field.ErrorTypeInvalid}})
}

func TestValidateForeignObject(t *testing.T) {
	errs := Validate(nil)
	require.Len(t, errs, 1)
	assert.Equal(t, field.ErrorTypeRequired, errs[0].Type)
	_ = fmt.Sprint(errs)
}
