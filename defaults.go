package virtkit

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// NetworkBinding is how the default pod-network interface is wired.
type NetworkBinding string

// Default interface bindings for the pod network.
const (
	NetworkBindingBridge     NetworkBinding = "bridge"
	NetworkBindingMasquerade NetworkBinding = "masquerade"
)

// DefaultOptions tune SetDefaults the way KubeVirt's cluster configuration
// tunes its defaulting webhook. The zero value gives KubeVirt's cluster
// defaults.
//
// +kubebuilder:object:generate=false
// +k8s:openapi-gen=false
type DefaultOptions struct {
	// Architecture for VMIs that name none; "" = amd64.
	Architecture string
	// MachineType for VMIs that name none; "" = the architecture's default
	// (q35 on amd64, virt on arm64, s390-ccw-virtio on s390x).
	MachineType string
	// PodNetworkBinding of the default interface; "" = bridge (KubeVirt's
	// permitBridgeInterfaceOnPodNetwork default). Note that bridge on the
	// pod network is not live-migratable; masquerade is.
	PodNetworkBinding NetworkBinding
	// EvictionStrategy for VMIs that set none; "" = None.
	EvictionStrategy EvictionStrategy
	// NewUUID returns the firmware UUID of a VMI that has none; nil = a
	// random UUID, as KubeVirt does. Tests inject a fixed source. A VM's
	// template never uses it: it gets KubeVirt's stable UUIDv5 of the VM
	// name (FirmwareUUIDForVM).
	NewUUID func() types.UID
	// MemoryOvercommit is the cluster's memoryOvercommit percentage: a
	// VMI with memory.guest and no memory request gets a request of
	// guest × 100 / MemoryOvercommit, as KubeVirt sizes the memory request
	// of the pod it runs such a VMI in. 0 and 100 add no request.
	MemoryOvercommit int
	// NoHotplug leaves cpu.maxSockets and memory.maxGuest unset, as
	// KubeVirt's Stage rollout strategy does; the zero value sets them as
	// its default LiveUpdate strategy does.
	NoHotplug bool
}

// Hot-plug defaults of KubeVirt's LiveUpdate rollout strategy.
const (
	// HotplugRatio is how many times its boot sockets (and boot memory) a
	// guest may grow to.
	HotplugRatio = 4
	// hotplugMaxVCPUs bounds maxSockets × cores × threads.
	hotplugMaxVCPUs = 512
	// hotplugMinGuest is the least guest memory that gets a maxGuest.
	hotplugMinGuest = 1 << 30
	// hotplugAlignment is the block memory is hot-plugged in (1Gi with
	// 1Gi hugepages).
	hotplugAlignment = 2 << 20
)

// SetDefaults fills unset fields of obj with KubeVirt's defaults, using the
// zero DefaultOptions. It never validates; run Validate afterwards.
func SetDefaults(obj Object) { DefaultOptions{}.SetDefaults(obj) }

// SetDefaults fills unset fields of obj in KubeVirt's order: arch,
// machine type, resource requests, memory.guest, CPU topology, pull
// policies, eviction strategy, default network, default disks, API defaults
// (disk targets, CD-ROM, inputs, probes, firmware UUID, features, timers),
// Hyper-V dependencies, per-arch disk bus, CPU model, interface model.
//
// Like KubeVirt's mutating webhooks, it sets only what KubeVirt sets: a
// VM's template gets the architecture, the machine type and its firmware
// identity (the VM-name-derived UUID and a random serial); the rest of a
// template is defaulted on each VMI created from it (Validate checks a
// defaulted copy of a VM's template, as KubeVirt's admission does). A
// ReplicaSet's template is left alone; replicas default to 1. A VMI gets
// the hot-plug maxima of KubeVirt's LiveUpdate rollout (cpu.maxSockets,
// and memory.maxGuest from 1Gi of guest memory) unless NoHotplug. Other
// kinds have nothing to default.
func (o DefaultOptions) SetDefaults(obj Object) {
	switch t := obj.(type) {
	case *VirtualMachineInstance:
		o.setVMISpecDefaults(&t.Spec, o.newUUID)
	case *DataVolume:
		SetDataVolumeDefaults(t)
	case *VirtualMachine:
		for i := range t.Spec.DataVolumeTemplates {
			setDataVolumeSpecDefaults(&t.Spec.DataVolumeTemplates[i].Spec, t.Namespace)
		}
		if t.Spec.Template != nil {
			o.setVMTemplateDefaults(t.Name, &t.Spec.Template.Spec)
		}
	case *VirtualMachineInstanceReplicaSet:
		if t.Spec.Replicas == nil {
			one := int32(1)
			t.Spec.Replicas = &one
		}
	}
}

// setVMTemplateDefaults is KubeVirt's VM mutator: architecture, machine
// type, and the firmware UUID (from the VM's name) and serial.
func (o DefaultOptions) setVMTemplateDefaults(name string, spec *VirtualMachineInstanceSpec) {
	o.setArchAndMachine(spec)
	fw := spec.Domain.Firmware
	if fw == nil {
		fw = &Firmware{}
	}
	if fw.UUID == "" && name != "" { // with generateName the name, and so the UUID, is not known yet
		fw.UUID = FirmwareUUIDForVM(name)
	}
	if fw.Serial == "" {
		fw.Serial = string(o.newUUID())
	}
	spec.Domain.Firmware = fw
}

func (o DefaultOptions) setArchAndMachine(spec *VirtualMachineInstanceSpec) {
	if spec.Architecture == "" {
		spec.Architecture = o.Architecture
		if spec.Architecture == "" {
			spec.Architecture = DefaultArchitecture
		}
	}
	if spec.Domain.Machine == nil {
		spec.Domain.Machine = &Machine{}
	}
	if spec.Domain.Machine.Type == "" {
		spec.Domain.Machine.Type = o.machineType(spec.Architecture)
	}
}

func (o DefaultOptions) newUUID() types.UID {
	if o.NewUUID != nil {
		return o.NewUUID()
	}
	return RandomUUID()
}

func (o DefaultOptions) setVMISpecDefaults(spec *VirtualMachineInstanceSpec, uuid func() types.UID) {
	// 1. architecture and 2. machine type.
	o.setArchAndMachine(spec)
	// 3. resource requests and 4. memory.guest.
	setResourceDefaults(&spec.Domain)
	o.overcommitMemory(&spec.Domain)
	// 5. CPU topology.
	setCPUTopology(&spec.Domain)
	// 6. pull policies.
	for i := range spec.Volumes {
		if cd := spec.Volumes[i].ContainerDisk; cd != nil && cd.ImagePullPolicy == "" {
			cd.ImagePullPolicy = defaultPullPolicy(cd.Image)
		}
	}
	// 7. eviction strategy.
	if spec.EvictionStrategy == nil {
		es := o.EvictionStrategy
		if es == "" {
			es = EvictionStrategyNone
		}
		spec.EvictionStrategy = &es
	}
	// 8. default network.
	o.setDefaultNetwork(spec)
	// 9. a disk for every volume that has none.
	setDefaultVolumeDisks(spec)
	setWatchdogDefaults(&spec.Domain.Devices)
	// 10. API defaults.
	setAPIDefaults(spec, uuid)
	// 11. Hyper-V dependencies.
	if f := spec.Domain.Features; f != nil && f.Hyperv != nil {
		setHypervDependencies(f.Hyperv)
	}
	// 12. per-architecture defaults.
	setArchDefaults(spec)
	// 13. CPU model (host-passthrough on arm64, which has no host-model).
	if spec.Domain.CPU.Model == "" {
		spec.Domain.CPU.Model = DefaultCPUModel
		if spec.Architecture == "arm64" {
			spec.Domain.CPU.Model = CPUModeHostPassthrough
		}
	}
	// 14. hot-plug maxima (not on arm64, as in KubeVirt).
	if !o.NoHotplug && spec.Architecture != "arm64" {
		setHotplugDefaults(spec)
	}
}

// setHotplugDefaults sets cpu.maxSockets to HotplugRatio × sockets (within
// 512 vCPUs) and, for at least 1Gi of aligned guest memory on amd64,
// memory.maxGuest to HotplugRatio × guest, as KubeVirt's LiveUpdate
// rollout does.
func setHotplugDefaults(spec *VirtualMachineInstanceSpec) {
	cpu := spec.Domain.CPU
	if cpu.MaxSockets == 0 {
		cpu.MaxSockets = cpu.Sockets * HotplugRatio
		if per := cpu.Cores * cpu.Threads; per > 0 && cpu.MaxSockets*per > hotplugMaxVCPUs {
			cpu.MaxSockets = max(hotplugMaxVCPUs/per, cpu.Sockets)
		}
	}
	m := spec.Domain.Memory
	if m == nil || m.MaxGuest != nil || m.Guest == nil || spec.Architecture != "amd64" {
		return
	}
	// As KubeVirt: realtime vCPUs, guest NUMA passthrough and confidential
	// guests get no memory hotplug.
	if c := spec.Domain.CPU; c != nil && (c.Realtime != nil || c.NUMA != nil && c.NUMA.GuestMappingPassthrough != nil) || spec.Domain.LaunchSecurity != nil {
		return
	}
	align := int64(hotplugAlignment)
	if m.Hugepages != nil && m.Hugepages.PageSize == "1Gi" {
		align = 1 << 30
	}
	guest := m.Guest.Value()
	if guest < hotplugMinGuest || guest%align != 0 || guest > (1<<62)/HotplugRatio {
		return
	}
	m.MaxGuest = resource.NewQuantity(guest*HotplugRatio, resource.BinarySI)
}

func (o DefaultOptions) machineType(arch string) string {
	if o.MachineType != "" {
		return o.MachineType
	}
	switch arch {
	case "arm64":
		return "virt"
	case "s390x":
		return "s390-ccw-virtio"
	}
	return DefaultMachineType
}

// setResourceDefaults: the CPU request from the limit, and memory.guest
// from the memory request, else the limit, else the hugepage size, as
// KubeVirt does (it does not derive a memory request from memory.guest).
func setResourceDefaults(dom *DomainSpec) {
	res := &dom.Resources
	if q, ok := res.Requests[ResourceCPU]; !ok || q.IsZero() {
		if limit, ok := res.Limits[ResourceCPU]; ok && !limit.IsZero() {
			setResource(&res.Requests, ResourceCPU, limit)
		}
	}
	if dom.Memory == nil || dom.Memory.Guest == nil {
		var guest *resource.Quantity
		if q, ok := res.Requests[ResourceMemory]; ok && !q.IsZero() {
			guest = &q
		} else if q, ok := res.Limits[ResourceMemory]; ok && !q.IsZero() {
			guest = &q
		} else if dom.Memory != nil && dom.Memory.Hugepages != nil {
			if q, err := resource.ParseQuantity(dom.Memory.Hugepages.PageSize); err == nil {
				guest = &q
			}
		}
		if guest != nil {
			if dom.Memory == nil {
				dom.Memory = &Memory{}
			}
			g := guest.DeepCopy()
			dom.Memory.Guest = &g
		}
	}
}

// overcommitMemory gives a VMI with guest memory and no memory request a
// request of guest × 100 / MemoryOvercommit, rounded down to whole
// bytes, when the cluster overcommits memory.
func (o DefaultOptions) overcommitMemory(dom *DomainSpec) {
	oc := o.MemoryOvercommit
	if oc <= 0 || oc == 100 || dom.Memory == nil || dom.Memory.Guest == nil {
		return
	}
	if _, ok := dom.Resources.Requests[ResourceMemory]; ok {
		return
	}
	guest := dom.Memory.Guest.Value()
	if guest <= 0 || guest > (1<<62)/100 {
		return
	}
	setResource(&dom.Resources.Requests, ResourceMemory, *resource.NewQuantity(guest*100/int64(oc), dom.Memory.Guest.Format))
}

func setResource(list *ResourceList, name ResourceName, q resource.Quantity) {
	if *list == nil {
		*list = ResourceList{}
	}
	(*list)[name] = q.DeepCopy()
}

func setCPUTopology(dom *DomainSpec) {
	if dom.CPU == nil {
		dom.CPU = &CPU{}
	}
	cpu := dom.CPU
	// KubeVirt fills the topology only when none of it is given; a
	// partial topology keeps its zeros (counted as 1).
	if cpu.Cores == 0 && cpu.Sockets == 0 && cpu.Threads == 0 {
		cpu.Sockets, cpu.Cores, cpu.Threads = 1, 1, 1
		q, ok := dom.Resources.Limits[ResourceCPU]
		if !ok {
			q, ok = dom.Resources.Requests[ResourceCPU]
		}
		if ok {
			if v := q.Value(); v > 1 && v <= MaxVCPUs {
				cpu.Sockets = uint32(v)
			}
		}
	}
}

// defaultPullPolicy is Always for :latest or untagged images, else
// IfNotPresent (Kubernetes' rule, which KubeVirt applies).
func defaultPullPolicy(image string) PullPolicy {
	if strings.Contains(image, "@") {
		return PullIfNotPresent
	}
	lastSlash := strings.LastIndex(image, "/")
	tag := ""
	if i := strings.LastIndex(image, ":"); i > lastSlash {
		tag = image[i+1:]
	}
	if tag == "" || tag == "latest" {
		return PullAlways
	}
	return PullIfNotPresent
}

func (o DefaultOptions) setDefaultNetwork(spec *VirtualMachineInstanceSpec) {
	dev := &spec.Domain.Devices
	if len(spec.Networks) > 0 || len(dev.Interfaces) > 0 {
		return
	}
	if dev.AutoattachPodInterface != nil && !*dev.AutoattachPodInterface {
		return
	}
	spec.Networks = []Network{{Name: DefaultNetworkName, NetworkSource: NetworkSource{Pod: &PodNetwork{}}}}
	iface := Interface{Name: DefaultNetworkName}
	if o.PodNetworkBinding == NetworkBindingMasquerade {
		iface.Masquerade = &InterfaceMasquerade{}
	} else {
		iface.Bridge = &InterfaceBridge{}
	}
	dev.Interfaces = []Interface{iface}
}

// SetDefaultVolumeDisks gives every volume of spec that no disk or
// filesystem uses a disk of its name (a hard disk, its bus left to the
// defaults), as KubeVirt does for a VMI; KubeVirt's VM controller does it
// before it applies a VM's instance type and preference, so a
// preference's disk defaults reach those disks too.
func SetDefaultVolumeDisks(spec *VirtualMachineInstanceSpec) { setDefaultVolumeDisks(spec) }

func setDefaultVolumeDisks(spec *VirtualMachineInstanceSpec) {
	have := make(map[string]bool, len(spec.Domain.Devices.Disks))
	for _, d := range spec.Domain.Devices.Disks {
		have[d.Name] = true
	}
	for _, f := range spec.Domain.Devices.Filesystems { // shared, not a disk
		have[f.Name] = true
	}
	for _, v := range spec.Volumes {
		if !have[v.Name] {
			spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, Disk{Name: v.Name})
			have[v.Name] = true
		}
	}
}

func setAPIDefaults(spec *VirtualMachineInstanceSpec, uuid func() types.UID) {
	dev := &spec.Domain.Devices
	for i := range dev.Disks {
		d := &dev.Disks[i]
		if d.Disk == nil && d.LUN == nil && d.CDRom == nil {
			d.Disk = &DiskTarget{}
		}
		if d.CDRom != nil {
			if d.CDRom.ReadOnly == nil {
				t := true
				d.CDRom.ReadOnly = &t
			}
			if d.CDRom.Tray == "" {
				d.CDRom.Tray = TrayStateClosed
			}
		}
	}
	for i := range dev.Inputs {
		if dev.Inputs[i].Bus == "" {
			dev.Inputs[i].Bus = InputBusUSB
		}
	}
	for _, p := range []*Probe{spec.LivenessProbe, spec.ReadinessProbe} {
		if p == nil {
			continue
		}
		setDefault(&p.TimeoutSeconds, DefaultProbeTimeoutSeconds)
		setDefault(&p.PeriodSeconds, DefaultProbePeriodSeconds)
		setDefault(&p.SuccessThreshold, DefaultProbeSuccessThreshold)
		setDefault(&p.FailureThreshold, DefaultProbeFailureThreshold)
	}
	if fw := spec.Domain.Firmware; (fw == nil || fw.UUID == "") && uuid != nil {
		if id := uuid(); id != "" {
			if fw == nil {
				spec.Domain.Firmware = &Firmware{}
			}
			spec.Domain.Firmware.UUID = id
		}
	}
	// Secure boot is left unset (on, for EFI on amd64), except on arm64,
	// where KubeVirt boots EFI without it by default.
	if spec.Architecture == "arm64" {
		fw := spec.Domain.Firmware
		if fw == nil {
			fw = &Firmware{}
			spec.Domain.Firmware = fw
		}
		if fw.Bootloader == nil {
			fw.Bootloader = &Bootloader{EFI: &EFI{}}
		}
		if efi := fw.Bootloader.EFI; efi != nil && efi.SecureBoot == nil {
			off := false
			efi.SecureBoot = &off
		}
	}
	if spec.Domain.Features == nil {
		spec.Domain.Features = &Features{}
	}
	if f := spec.Domain.Features; f != nil {
		enable(&f.ACPI.Enabled)
		if f.APIC != nil {
			enable(&f.APIC.Enabled)
		}
		for _, fs := range []*FeatureState{f.SMM, f.Pvspinlock} {
			if fs != nil {
				enable(&fs.Enabled)
			}
		}
		if h := f.Hyperv; h != nil {
			for _, fs := range []*FeatureState{h.Relaxed, h.VAPIC, h.VPIndex, h.Runtime, h.SyNIC, h.Reset,
				h.Frequencies, h.Reenlightenment, h.IPI, h.EVMCS} {
				if fs != nil {
					enable(&fs.Enabled)
				}
			}
			if h.Spinlocks != nil {
				enable(&h.Spinlocks.Enabled)
				if h.Spinlocks.Retries == nil {
					r := DefaultHypervSpinlocks
					h.Spinlocks.Retries = &r
				}
			}
			if h.SyNICTimer != nil {
				enable(&h.SyNICTimer.Enabled)
				if h.SyNICTimer.Direct != nil {
					enable(&h.SyNICTimer.Direct.Enabled)
				}
			}
			if h.VendorID != nil {
				enable(&h.VendorID.Enabled)
			}
			if h.TLBFlush != nil {
				enable(&h.TLBFlush.Enabled)
				for _, fs := range []*FeatureState{h.TLBFlush.Direct, h.TLBFlush.Extended} {
					if fs != nil {
						enable(&fs.Enabled)
					}
				}
			}
		}
	}
	if c := spec.Domain.Clock; c != nil && c.Timer != nil {
		tm := c.Timer
		if tm.HPET != nil {
			enable(&tm.HPET.Enabled)
		}
		if tm.PIT != nil {
			enable(&tm.PIT.Enabled)
		}
		if tm.RTC != nil {
			enable(&tm.RTC.Enabled)
		}
		if tm.KVM != nil {
			enable(&tm.KVM.Enabled)
		}
		if tm.Hyperv != nil {
			enable(&tm.Hyperv.Enabled)
		}
	}
}

func enable(b **bool) {
	if *b == nil {
		t := true
		*b = &t
	}
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

func featureOn(fs *FeatureState) bool {
	return fs != nil && (fs.Enabled == nil || *fs.Enabled)
}

// setHypervDependencies enables the enlightenments others need, as
// KubeVirt's defaulting does: synic and tlbflush and ipi need vpindex,
// synictimer needs synic (and so vpindex) and frequencies, evmcs needs
// vapic. An explicitly disabled dependency is left alone for validation
// and libvirt to reject.
func setHypervDependencies(h *FeatureHyperv) {
	on := func(fs **FeatureState) {
		if *fs == nil {
			t := true
			*fs = &FeatureState{Enabled: &t}
		}
	}
	stimer := h.SyNICTimer != nil && (h.SyNICTimer.Enabled == nil || *h.SyNICTimer.Enabled)
	tlb := h.TLBFlush != nil && (h.TLBFlush.Enabled == nil || *h.TLBFlush.Enabled)
	if stimer {
		on(&h.SyNIC)
		on(&h.Frequencies)
	}
	if featureOn(h.SyNIC) || tlb || featureOn(h.IPI) {
		on(&h.VPIndex)
	}
	if featureOn(h.EVMCS) {
		on(&h.VAPIC)
	}
}

func setArchDefaults(spec *VirtualMachineInstanceSpec) {
	diskBus := DiskBusSATA
	cdromBus := DiskBusSATA
	if spec.Architecture == "arm64" || spec.Architecture == "s390x" {
		diskBus = DiskBusVirtio
		cdromBus = DiskBusSCSI
	}
	for i := range spec.Domain.Devices.Disks {
		d := &spec.Domain.Devices.Disks[i]
		switch {
		case d.Disk != nil && d.Disk.Bus == "":
			d.Disk.Bus = diskBus
		case d.LUN != nil && d.LUN.Bus == "":
			d.LUN.Bus = DiskBusSCSI
		case d.CDRom != nil && d.CDRom.Bus == "":
			d.CDRom.Bus = cdromBus
		}
	}
}
