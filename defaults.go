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
}

// SetDefaults fills unset fields of obj with KubeVirt's defaults, using the
// zero DefaultOptions. It never validates; run Validate afterwards.
func SetDefaults(obj Object) { DefaultOptions{}.SetDefaults(obj) }

// SetDefaults fills unset fields of obj in KubeVirt's order: arch,
// machine type, resource requests, memory.guest, CPU topology, pull
// policies, eviction strategy, default network, default disks, API defaults
// (disk targets, CD-ROM, inputs, probes, firmware UUID, features, timers),
// Hyper-V dependencies, per-arch disk bus, CPU model, interface model.
//
// VMs and ReplicaSets default their templates; a VM template gets the
// VM-name-derived firmware UUID, a ReplicaSet template none (each VMI it
// creates is defaulted on its own). ReplicaSet replicas default to 1. Other
// kinds have nothing to default. Hot-plug maxima (maxSockets, maxGuest) are
// not defaulted: virtkit does not hot-plug CPUs or memory.
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
			name := t.Name
			o.setVMISpecDefaults(&t.Spec.Template.Spec, func() types.UID {
				if name == "" {
					return "" // generateName: the name, and so the UUID, is not known yet
				}
				return FirmwareUUIDForVM(name)
			})
		}
	case *VirtualMachineInstanceReplicaSet:
		if t.Spec.Replicas == nil {
			one := int32(1)
			t.Spec.Replicas = &one
		}
		if t.Spec.Template != nil {
			o.setVMISpecDefaults(&t.Spec.Template.Spec, nil)
		}
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
	// 3. resource requests and 4. memory.guest.
	setResourceDefaults(&spec.Domain)
	// 5. CPU topology.
	setCPUTopology(&spec.Domain)
	// 6. pull policies.
	for i := range spec.Volumes {
		if cd := spec.Volumes[i].ContainerDisk; cd != nil && cd.ImagePullPolicy == "" {
			cd.ImagePullPolicy = defaultPullPolicy(cd.Image)
		}
	}
	if fw := spec.Domain.Firmware; fw != nil && fw.KernelBoot != nil && fw.KernelBoot.Container != nil {
		if c := fw.KernelBoot.Container; c.ImagePullPolicy == "" {
			c.ImagePullPolicy = defaultPullPolicy(c.Image)
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
	// 10. API defaults.
	setAPIDefaults(spec, uuid)
	// 11. Hyper-V dependencies.
	if f := spec.Domain.Features; f != nil && f.Hyperv != nil {
		setHypervDependencies(f.Hyperv)
	}
	// 12. per-architecture defaults.
	setArchDefaults(spec)
	// 13. CPU model.
	if spec.Domain.CPU.Model == "" {
		spec.Domain.CPU.Model = DefaultCPUModel
	}
	// Interface model (KubeVirt leaves it to the converter, which picks
	// virtio; writing it down makes the spec say what runs).
	for i := range spec.Domain.Devices.Interfaces {
		if spec.Domain.Devices.Interfaces[i].Model == "" {
			spec.Domain.Devices.Interfaces[i].Model = InterfaceModelVirtio
		}
	}
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

func setResourceDefaults(dom *DomainSpec) {
	res := &dom.Resources
	if _, ok := res.Requests[ResourceCPU]; !ok {
		if limit, ok := res.Limits[ResourceCPU]; ok {
			setResource(&res.Requests, ResourceCPU, limit)
		}
	}
	if _, ok := res.Requests[ResourceMemory]; !ok {
		if dom.Memory != nil && dom.Memory.Guest != nil && dom.Memory.Guest.Sign() > 0 {
			setResource(&res.Requests, ResourceMemory, *dom.Memory.Guest)
		}
	}
	if dom.Memory == nil || dom.Memory.Guest == nil {
		var guest *resource.Quantity
		if q, ok := res.Requests[ResourceMemory]; ok {
			guest = &q
		} else if q, ok := res.Limits[ResourceMemory]; ok {
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
	if cpu.Cores == 0 && cpu.Sockets == 0 && cpu.Threads == 0 {
		cpu.Sockets = 1
		q, ok := dom.Resources.Limits[ResourceCPU]
		if !ok {
			q, ok = dom.Resources.Requests[ResourceCPU]
		}
		if ok {
			if v := q.Value(); v > 1 && v <= 512 {
				cpu.Sockets = uint32(v)
			}
		}
	}
	if cpu.Cores == 0 {
		cpu.Cores = 1
	}
	if cpu.Sockets == 0 {
		cpu.Sockets = 1
	}
	if cpu.Threads == 0 {
		cpu.Threads = 1
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

func setDefaultVolumeDisks(spec *VirtualMachineInstanceSpec) {
	have := make(map[string]bool, len(spec.Domain.Devices.Disks))
	for _, d := range spec.Domain.Devices.Disks {
		have[d.Name] = true
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
	if spec.TerminationGracePeriodSeconds == nil {
		g := DefaultGracePeriodSeconds
		spec.TerminationGracePeriodSeconds = &g
	}
	if fw := spec.Domain.Firmware; (fw == nil || fw.UUID == "") && uuid != nil {
		if id := uuid(); id != "" {
			if fw == nil {
				spec.Domain.Firmware = &Firmware{}
			}
			spec.Domain.Firmware.UUID = id
		}
	}
	if fw := spec.Domain.Firmware; fw != nil && fw.Bootloader != nil && fw.Bootloader.EFI != nil && fw.Bootloader.EFI.SecureBoot == nil {
		sb := spec.Architecture != "arm64"
		fw.Bootloader.EFI.SecureBoot = &sb
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
