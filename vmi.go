package virtkit

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +kubebuilder:object:root=true

// VirtualMachineInstance (VMI) is one running (or about to run) guest:
// kubevirt.io/v1, namespaced.
type VirtualMachineInstance struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels, annotations and
	// the other fields every object has.
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the guest's specification. Users may not change it after
	// creation.
	Spec VirtualMachineInstanceSpec `json:"spec"`
	// Status is the guest's observed state, written by the controllers and the
	// node agent.
	Status VirtualMachineInstanceStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// VirtualMachineInstanceList is a list of VMIs.
type VirtualMachineInstanceList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the VMIs.
	Items []VirtualMachineInstance `json:"items"`
}

// EvictionStrategy says what happens to a VMI when its node is drained.
type EvictionStrategy string

// Eviction strategies.
const (
	EvictionStrategyNone                  EvictionStrategy = "None"
	EvictionStrategyLiveMigrate           EvictionStrategy = "LiveMigrate"
	EvictionStrategyLiveMigrateIfPossible EvictionStrategy = "LiveMigrateIfPossible"
	EvictionStrategyExternal              EvictionStrategy = "External"
)

// StartStrategy is how the domain starts; only Paused exists.
type StartStrategy string

// StartStrategyPaused starts the domain paused.
const StartStrategyPaused StartStrategy = "Paused"

// VirtualMachineInstanceSpec is the desired guest.
type VirtualMachineInstanceSpec struct {
	// PriorityClassName names the priority class of the VMI.
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// Domain is the virtual hardware: CPU, memory, firmware, features and
	// devices.
	Domain DomainSpec `json:"domain"`
	// NodeSelector is a set of labels a node must all carry to run the VMI.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Affinity constrains and ranks the nodes the VMI may run on.
	Affinity *Affinity `json:"affinity,omitempty"`
	// SchedulerName names the scheduler that places the VMI; empty means the
	// default one.
	SchedulerName string `json:"schedulerName,omitempty"`
	// Tolerations let the VMI run on nodes with matching taints.
	Tolerations []Toleration `json:"tolerations,omitempty"`
	// EvictionStrategy is what happens to the VMI when its node is drained:
	// None, LiveMigrate, LiveMigrateIfPossible or External.
	EvictionStrategy *EvictionStrategy `json:"evictionStrategy,omitempty"`
	// StartStrategy Paused starts the guest paused.
	StartStrategy *StartStrategy `json:"startStrategy,omitempty"`
	// TerminationGracePeriodSeconds is how long the guest may take to shut
	// down before it is powered off.
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// Volumes are the sources of the VMI's disks and filesystems, each matched
	// to a disk or filesystem by name.
	Volumes []Volume `json:"volumes,omitempty"`
	// LivenessProbe restarts (fails) the VMI when the guest stops answering.
	LivenessProbe *Probe `json:"livenessProbe,omitempty"`
	// ReadinessProbe decides when the VMI is ready.
	ReadinessProbe *Probe `json:"readinessProbe,omitempty"`
	// Hostname is the guest's host name; it defaults to the VMI's name.
	Hostname string `json:"hostname,omitempty"`
	// Subdomain, with the hostname, gives the guest a fully qualified domain
	// name.
	Subdomain string `json:"subdomain,omitempty"`
	// Networks are the networks the guest's interfaces attach to, each matched
	// to an interface by name.
	Networks []Network `json:"networks,omitempty"`
	// DNSConfig adds name servers, search domains and resolver options to the
	// guest's DNS configuration.
	DNSConfig *PodDNSConfig `json:"dnsConfig,omitempty"`
	// DNSPolicy selects how the guest's DNS is configured.
	DNSPolicy DNSPolicy `json:"dnsPolicy,omitempty"`
	// Architecture is amd64, arm64 or s390x; defaulted to amd64.
	Architecture string `json:"architecture,omitempty"`
}

// Probe checks guest health (liveness) or readiness.
type Probe struct {
	Handler `json:",inline"`
	// InitialDelaySeconds is how long after the guest starts the first probe
	// runs.
	InitialDelaySeconds int32 `json:"initialDelaySeconds,omitempty"`
	// TimeoutSeconds is how long one probe may take.
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
	// PeriodSeconds is the time between two probes.
	PeriodSeconds int32 `json:"periodSeconds,omitempty"`
	// SuccessThreshold is how many probes in a row must succeed after a
	// failure.
	SuccessThreshold int32 `json:"successThreshold,omitempty"`
	// FailureThreshold is how many probes in a row must fail before the probe
	// counts as failed.
	FailureThreshold int32 `json:"failureThreshold,omitempty"`
}

// Handler is the probe mechanism; exactly one must be set.
type Handler struct {
	// Exec runs a command in the guest through the guest agent.
	Exec *ExecAction `json:"exec,omitempty"`
	// HTTPGet sends an HTTP GET request to the guest.
	HTTPGet *HTTPGetAction `json:"httpGet,omitempty"`
	// TCPSocket opens a TCP connection to the guest.
	TCPSocket *TCPSocketAction `json:"tcpSocket,omitempty"`
	// GuestAgentPing checks that the guest agent answers.
	GuestAgentPing *GuestAgentPing `json:"guestAgentPing,omitempty"`
}

// GuestAgentPing probes by sending guest-ping to the guest agent.
type GuestAgentPing struct{}

// DomainSpec is the virtual hardware.
type DomainSpec struct {
	// Resources are the CPU and memory requests and limits of the VMI.
	Resources ResourceRequirements `json:"resources,omitempty"`
	// CPU is the guest's vCPU topology, model and features.
	CPU *CPU `json:"cpu,omitempty"`
	// Memory is the guest's memory size and backing.
	Memory *Memory `json:"memory,omitempty"`
	// Machine is the emulated machine type.
	Machine *Machine `json:"machine,omitempty"`
	// Firmware is the guest's firmware, boot loader and identity.
	Firmware *Firmware `json:"firmware,omitempty"`
	// Clock is the guest's clock offset and timers.
	Clock *Clock `json:"clock,omitempty"`
	// Features are the hypervisor features exposed to the guest.
	Features *Features `json:"features,omitempty"`
	// Devices are the guest's disks, network interfaces, input and other
	// devices.
	Devices Devices `json:"devices"`
	// IOThreadsPolicy is how disks get IO threads: shared (one thread
	// for the disks that ask for none of their own), auto or
	// supplementalPool.
	IOThreadsPolicy *IOThreadsPolicy `json:"ioThreadsPolicy,omitempty"`
	// IOThreads sizes the supplementalPool policy's thread pool.
	IOThreads *DiskIOThreads `json:"ioThreads,omitempty"`
	// LaunchSecurity asks for a confidential guest (SEV, SNP, TDX; an
	// empty one is s390x Secure Execution).
	LaunchSecurity *LaunchSecurity `json:"launchSecurity,omitempty"`
}

// ResourceRequirements are the VMI's requests and limits (cpu, memory).
type ResourceRequirements struct {
	// Requests are the CPU and memory the VMI needs from its node.
	Requests ResourceList `json:"requests,omitempty"`
	// Limits are the most CPU and memory the VMI may use.
	Limits ResourceList `json:"limits,omitempty"`
	// OvercommitGuestOverhead leaves the hypervisor's memory overhead out of
	// the memory request.
	OvercommitGuestOverhead bool `json:"overcommitGuestOverhead,omitempty"`
}

// CPU is the vCPU topology and model.
type CPU struct {
	// Cores is the number of cores per socket.
	Cores uint32 `json:"cores,omitempty"`
	// Sockets is the number of sockets.
	Sockets uint32 `json:"sockets,omitempty"`
	// MaxSockets is the most sockets CPU hot-plug may add up to.
	MaxSockets uint32 `json:"maxSockets,omitempty"`
	// Threads is the number of threads per core.
	Threads uint32 `json:"threads,omitempty"`
	// Model is the CPU model: a named model, host-model or host-passthrough.
	Model string `json:"model,omitempty"`
	// Features are CPU features to require, forbid or otherwise set on top of
	// the model.
	Features []CPUFeature `json:"features,omitempty"`
	// DedicatedCPUPlacement pins each vCPU to a host CPU of its own.
	DedicatedCPUPlacement bool `json:"dedicatedCpuPlacement,omitempty"`
	// IsolateEmulatorThread gives the emulator thread a host CPU of its own;
	// needs dedicated CPU placement.
	IsolateEmulatorThread bool `json:"isolateEmulatorThread,omitempty"`
	// NUMA maps the guest's NUMA topology onto the host's; needs
	// dedicated CPU placement and hugepages.
	NUMA *NUMA `json:"numa,omitempty"`
	// Realtime runs the vCPUs with a realtime scheduler; needs dedicated
	// CPU placement.
	Realtime *Realtime `json:"realtime,omitempty"`
}

// CPU models with a special meaning.
const (
	CPUModeHostPassthrough = "host-passthrough"
	CPUModeHostModel       = "host-model"
)

// CPUFeature enables or disables one CPU feature.
type CPUFeature struct {
	// Name is the feature's name, as the hypervisor knows it.
	Name string `json:"name"`
	// Policy is force, require, optional, disable or forbid; require by
	// default.
	Policy string `json:"policy,omitempty"`
}

// CPUTopology is sockets x cores x threads.
type CPUTopology struct {
	// Cores is the number of cores per socket.
	Cores uint32 `json:"cores,omitempty"`
	// Sockets is the number of sockets.
	Sockets uint32 `json:"sockets,omitempty"`
	// Threads is the number of threads per core.
	Threads uint32 `json:"threads,omitempty"`
}

// Memory is the guest's memory.
type Memory struct {
	// Hugepages backs the guest's memory with huge pages.
	Hugepages *Hugepages `json:"hugepages,omitempty"`
	// Guest is the memory the guest sees; it defaults to the memory request.
	Guest *resource.Quantity `json:"guest,omitempty"`
	// MaxGuest is the most memory hot-plug may raise the guest's memory to.
	MaxGuest *resource.Quantity `json:"maxGuest,omitempty"`
}

// Hugepages backs guest memory with huge pages of PageSize (2Mi, 1Gi).
type Hugepages struct {
	// PageSize is the huge page size, such as 2Mi or 1Gi.
	PageSize string `json:"pageSize,omitempty"`
}

// Machine is the emulated machine type (q35).
type Machine struct {
	// Type is the machine type, such as q35.
	Type string `json:"type"`
}

// Firmware is SMBIOS identity and boot firmware.
type Firmware struct {
	// UUID is the guest's system UUID.
	UUID types.UID `json:"uuid,omitempty"`
	// Bootloader selects BIOS or EFI.
	Bootloader *Bootloader `json:"bootloader,omitempty"`
	// Serial is the guest's system serial number.
	Serial string `json:"serial,omitempty"`
	// KernelBoot boots a kernel and initrd from a container image instead of a
	// disk.
	KernelBoot *KernelBoot `json:"kernelBoot,omitempty"`
}

// Bootloader is BIOS or EFI, never both.
type Bootloader struct {
	// BIOS boots the guest with a legacy BIOS.
	BIOS *BIOS `json:"bios,omitempty"`
	// EFI boots the guest with UEFI firmware.
	EFI *EFI `json:"efi,omitempty"`
}

// BIOS is SeaBIOS.
type BIOS struct {
	// UseSerial sends the BIOS output to the serial console.
	UseSerial *bool `json:"useSerial,omitempty"`
}

// EFI is OVMF, with secure boot by default.
type EFI struct {
	// SecureBoot enables Secure Boot; it needs SMM.
	SecureBoot *bool `json:"secureBoot,omitempty"`
	// Persistent keeps the EFI variables across restarts.
	Persistent *bool `json:"persistent,omitempty"`
}

// KernelBoot boots a kernel and initrd taken from a container image.
type KernelBoot struct {
	// KernelArgs is the kernel command line.
	KernelArgs string `json:"kernelArgs,omitempty"`
	// Container is the image the kernel and initrd are read from.
	Container *KernelBootContainer `json:"container,omitempty"`
}

// KernelBootContainer is the image holding the kernel and initrd.
type KernelBootContainer struct {
	// Image is the container image holding the kernel and initrd.
	Image string `json:"image"`
	// ImagePullSecret names the secret used to pull the image.
	ImagePullSecret string `json:"imagePullSecret,omitempty"`
	// KernelPath is the path of the kernel in the image.
	KernelPath string `json:"kernelPath,omitempty"`
	// InitrdPath is the path of the initrd in the image.
	InitrdPath string `json:"initrdPath,omitempty"`
	// ImagePullPolicy is when the image is pulled: Always, Never or
	// IfNotPresent.
	ImagePullPolicy PullPolicy `json:"imagePullPolicy,omitempty"`
}

// Clock is the guest clock offset and timers.
type Clock struct {
	ClockOffset `json:",inline"`
	// Timer configures the guest's timer devices.
	Timer *Timer `json:"timer,omitempty"`
}

// ClockOffset is UTC (with an optional offset) or a timezone; exactly one.
type ClockOffset struct {
	// UTC sets the guest's clock to UTC, with an optional offset.
	UTC *ClockOffsetUTC `json:"utc,omitempty"`
	// Timezone sets the guest's clock to the local time of a time zone.
	Timezone *ClockOffsetTimezone `json:"timezone,omitempty"`
}

// ClockOffsetUTC sets the guest clock to UTC plus OffsetSeconds.
type ClockOffsetUTC struct {
	// OffsetSeconds is added to UTC.
	OffsetSeconds *int `json:"offsetSeconds,omitempty"`
}

// ClockOffsetTimezone sets the guest clock to a timezone, e.g. "Europe/Rome".
type ClockOffsetTimezone string

// Timer configures the emulated timers.
type Timer struct {
	// HPET configures the high precision event timer.
	HPET *HPETTimer `json:"hpet,omitempty"`
	// KVM configures the KVM paravirtual clock.
	KVM *KVMTimer `json:"kvm,omitempty"`
	// PIT configures the programmable interval timer.
	PIT *PITTimer `json:"pit,omitempty"`
	// RTC configures the real time clock.
	RTC *RTCTimer `json:"rtc,omitempty"`
	// Hyperv configures the Hyper-V reference time counter.
	Hyperv *HypervTimer `json:"hyperv,omitempty"`
}

// TickPolicy is what happens when the guest misses ticks.
type TickPolicy string

// Tick policies.
const (
	TickPolicyDelay    TickPolicy = "delay"
	TickPolicyCatchup  TickPolicy = "catchup"
	TickPolicyMerge    TickPolicy = "merge"
	TickPolicyDiscard  TickPolicy = "discard"
	TickPolicyTerminal TickPolicy = "terminal" // not valid; kept for rejection messages
)

// HPETTimer is the high-precision event timer.
type HPETTimer struct {
	// TickPolicy is what happens to ticks the guest missed: delay, catchup,
	// merge or discard.
	TickPolicy TickPolicy `json:"tickPolicy,omitempty"`
	// Enabled (JSON present) exposes the timer; true by default.
	Enabled *bool `json:"present,omitempty"`
}

// PITTimer is the programmable interval timer.
type PITTimer struct {
	// TickPolicy is what happens to ticks the guest missed: delay, catchup or
	// discard.
	TickPolicy TickPolicy `json:"tickPolicy,omitempty"`
	// Enabled (JSON present) exposes the timer; true by default.
	Enabled *bool `json:"present,omitempty"`
}

// RTCTimer is the real-time clock.
type RTCTimer struct {
	// TickPolicy is what happens to ticks the guest missed: delay or catchup.
	TickPolicy TickPolicy `json:"tickPolicy,omitempty"`
	// Enabled (JSON present) exposes the timer; true by default.
	Enabled *bool `json:"present,omitempty"`
	// Track is the time source the RTC follows: guest or wall.
	Track string `json:"track,omitempty"`
}

// KVMTimer is the kvmclock paravirtual clock.
type KVMTimer struct {
	// Enabled (JSON present) exposes the timer; true by default.
	Enabled *bool `json:"present,omitempty"`
}

// HypervTimer is the Hyper-V reference clock.
type HypervTimer struct {
	// Enabled (JSON present) exposes the timer; true by default.
	Enabled *bool `json:"present,omitempty"`
}

// FeatureState enables (default) or disables a feature.
type FeatureState struct {
	// Enabled switches the feature on or off; true by default.
	Enabled *bool `json:"enabled,omitempty"`
}

// Features are hypervisor features exposed to the guest.
type Features struct {
	// ACPI exposes ACPI to the guest; it is on unless enabled is false.
	ACPI FeatureState `json:"acpi,omitempty"`
	// APIC exposes the advanced programmable interrupt controller.
	APIC *FeatureAPIC `json:"apic,omitempty"`
	// Hyperv exposes Hyper-V enlightenments, for Windows guests.
	Hyperv *FeatureHyperv `json:"hyperv,omitempty"`
	// SMM enables System Management Mode, needed by Secure Boot.
	SMM *FeatureState `json:"smm,omitempty"`
	// KVM configures the KVM paravirtual features the guest sees.
	KVM *FeatureKVM `json:"kvm,omitempty"`
	// Pvspinlock exposes paravirtual spinlocks.
	Pvspinlock *FeatureState `json:"pvspinlock,omitempty"`
}

// FeatureAPIC is the APIC and its EOI setting.
type FeatureAPIC struct {
	// Enabled switches the APIC on or off; true by default.
	Enabled *bool `json:"enabled,omitempty"`
	// EndOfInterrupt enables the paravirtual end-of-interrupt.
	EndOfInterrupt bool `json:"endOfInterrupt,omitempty"`
}

// FeatureKVM hides the KVM signature from the guest.
type FeatureKVM struct {
	// Hidden hides the KVM signature from the guest.
	Hidden bool `json:"hidden,omitempty"`
}

// FeatureSpinlocks sets the Hyper-V spinlock retry count (>= 4096).
type FeatureSpinlocks struct {
	// Enabled switches the enlightenment on or off; true by default.
	Enabled *bool `json:"enabled,omitempty"`
	// Retries (JSON spinlocks) is how many times the guest spins before it
	// notifies the hypervisor; at least 4096.
	Retries *uint32 `json:"spinlocks,omitempty"`
}

// FeatureVendorID sets the Hyper-V vendor id string.
type FeatureVendorID struct {
	// Enabled switches the vendor ID on or off; true by default.
	Enabled *bool `json:"enabled,omitempty"`
	// VendorID is the hypervisor vendor ID shown to the guest, at most 12
	// characters.
	VendorID string `json:"vendorid,omitempty"`
}

// SyNICTimer is the Hyper-V synthetic timer.
type SyNICTimer struct {
	// Enabled switches the timers on or off; true by default.
	Enabled *bool `json:"enabled,omitempty"`
	// Direct enables direct-mode synthetic timers.
	Direct *FeatureState `json:"direct,omitempty"`
}

// TLBFlush is the Hyper-V paravirtual TLB flush.
type TLBFlush struct {
	// Enabled switches the enlightenment on or off; true by default.
	Enabled *bool `json:"enabled,omitempty"`
	// Direct enables direct TLB flushes.
	Direct *FeatureState `json:"direct,omitempty"`
	// Extended enables extended TLB flushes.
	Extended *FeatureState `json:"extended,omitempty"`
}

// FeatureHyperv are the Hyper-V enlightenments.
type FeatureHyperv struct {
	// Relaxed disables watchdog timeouts that fire under host load.
	Relaxed *FeatureState `json:"relaxed,omitempty"`
	// VAPIC enables the virtual APIC.
	VAPIC *FeatureState `json:"vapic,omitempty"`
	// Spinlocks configures spinlock retries.
	Spinlocks *FeatureSpinlocks `json:"spinlocks,omitempty"`
	// VPIndex lets the guest identify virtual processors.
	VPIndex *FeatureState `json:"vpindex,omitempty"`
	// Runtime exposes processor time spent in the guest and the hypervisor.
	Runtime *FeatureState `json:"runtime,omitempty"`
	// SyNIC enables the synthetic interrupt controller.
	SyNIC *FeatureState `json:"synic,omitempty"`
	// SyNICTimer enables synthetic timers; needs SyNIC.
	SyNICTimer *SyNICTimer `json:"synictimer,omitempty"`
	// Reset lets the guest reset the virtual machine.
	Reset *FeatureState `json:"reset,omitempty"`
	// VendorID sets the hypervisor vendor ID.
	VendorID *FeatureVendorID `json:"vendorid,omitempty"`
	// Frequencies exposes the TSC and APIC frequencies.
	Frequencies *FeatureState `json:"frequencies,omitempty"`
	// Reenlightenment notifies the guest of TSC frequency changes, as after a
	// migration.
	Reenlightenment *FeatureState `json:"reenlightenment,omitempty"`
	// TLBFlush enables paravirtual TLB flushes.
	TLBFlush *TLBFlush `json:"tlbflush,omitempty"`
	// IPI enables paravirtual inter-processor interrupts.
	IPI *FeatureState `json:"ipi,omitempty"`
	// EVMCS enables the enlightened VMCS, for nested virtualization.
	EVMCS *FeatureState `json:"evmcs,omitempty"`
}

// Devices are the guest's devices.
type Devices struct {
	// Disks are the block devices of the guest (disks, CD-ROMs, LUNs), each
	// backed by the volume of the same name.
	Disks []Disk `json:"disks,omitempty"`
	// Interfaces are the guest's network interfaces, each attached to the
	// network of the same name.
	Interfaces []Interface `json:"interfaces,omitempty"`
	// Inputs are input devices, such as a USB tablet.
	Inputs []Input `json:"inputs,omitempty"`
	// AutoattachPodInterface adds the default pod network and its interface
	// when none is given; true by default.
	AutoattachPodInterface *bool `json:"autoattachPodInterface,omitempty"`
	// AutoattachGraphicsDevice adds a graphics device and VNC; true by
	// default.
	AutoattachGraphicsDevice *bool `json:"autoattachGraphicsDevice,omitempty"`
	// AutoattachSerialConsole adds a serial console; true by default.
	AutoattachSerialConsole *bool `json:"autoattachSerialConsole,omitempty"`
	// LogSerialConsole keeps a log of the serial console's output.
	LogSerialConsole *bool `json:"logSerialConsole,omitempty"`
	// AutoattachMemBalloon adds a memory balloon device; true by default.
	AutoattachMemBalloon *bool `json:"autoattachMemBalloon,omitempty"`
	// AutoattachInputDevice adds an input device when none is given.
	AutoattachInputDevice *bool `json:"autoattachInputDevice,omitempty"`
	// Rng adds a virtio random number generator fed from the host.
	Rng *Rng `json:"rng,omitempty"`
	// BlockMultiQueue gives virtio disks one queue per vCPU.
	BlockMultiQueue *bool `json:"blockMultiQueue,omitempty"`
	// NetworkInterfaceMultiQueue gives virtio interfaces one queue per vCPU.
	NetworkInterfaceMultiQueue *bool `json:"networkInterfaceMultiqueue,omitempty"`
	// UseVirtioTransitional uses virtio devices old guests without virtio 1.0
	// drivers can drive.
	UseVirtioTransitional *bool `json:"useVirtioTransitional,omitempty"`
	// TPM adds an emulated TPM 2.0 to the guest, where the host can provide
	// one.
	TPM *TPMDevice `json:"tpm,omitempty"`
	// Filesystems share volumes with the guest over virtiofs; see
	// Filesystem.
	// +listType=atomic
	Filesystems []Filesystem `json:"filesystems,omitempty"`
	// Watchdog is an emulated watchdog device; see Watchdog.
	Watchdog *Watchdog `json:"watchdog,omitempty"`
	// Video chooses the graphics device's model; see VideoDevice.
	Video *VideoDevice `json:"video,omitempty"`
	// DownwardMetrics adds the virtio-serial port org.github.vhostmd.1 on
	// which the guest asks for the downward metrics; see DownwardMetrics.
	DownwardMetrics *DownwardMetrics `json:"downwardMetrics,omitempty"`
	// DisableHotplug leaves out the spare slots that devices hot-plugged
	// later would use.
	DisableHotplug bool `json:"disableHotplug,omitempty"`
	// GPUs are GPUs passed through to the guest.
	// +listType=atomic
	GPUs []GPU `json:"gpus,omitempty"`
	// HostDevices are host devices passed through to the guest.
	// +listType=atomic
	HostDevices []HostDevice `json:"hostDevices,omitempty"`
	// PanicDevices are devices through which the guest reports a kernel
	// panic to the host.
	// +listType=atomic
	PanicDevices []PanicDevice `json:"panicDevices,omitempty"`
	// Sound is an emulated sound card.
	Sound *SoundDevice `json:"sound,omitempty"`
}

// Rng adds a virtio-rng device fed from /dev/urandom.
type Rng struct{}

// TPMDevice is an emulated TPM 2.0.
type TPMDevice struct {
	// Enabled adds an emulated TPM; true by default when tpm is given.
	Enabled *bool `json:"enabled,omitempty"`
	// Persistent keeps the TPM's state across restarts.
	Persistent *bool `json:"persistent,omitempty"`
}

// DiskBus is the bus a disk is attached to.
type DiskBus string

// Disk buses.
const (
	DiskBusVirtio DiskBus = "virtio"
	DiskBusSATA   DiskBus = "sata"
	DiskBusSCSI   DiskBus = "scsi"
	DiskBusUSB    DiskBus = "usb"
	DiskBusIDE    DiskBus = "ide" // rejected by validation, kept for its message
)

// DriverCache is the host page-cache mode of a disk.
type DriverCache string

// Cache modes.
const (
	CacheNone         DriverCache = "none"
	CacheWriteThrough DriverCache = "writethrough"
	CacheWriteBack    DriverCache = "writeback"
)

// DriverIO is the host I/O mode of a disk.
type DriverIO string

// I/O modes.
const (
	IOThreads DriverIO = "threads"
	IONative  DriverIO = "native"
)

// DiskErrorPolicy is what happens on an I/O error.
type DiskErrorPolicy string

// Disk error policies.
const (
	DiskErrorPolicyStop     DiskErrorPolicy = "stop"
	DiskErrorPolicyIgnore   DiskErrorPolicy = "ignore"
	DiskErrorPolicyReport   DiskErrorPolicy = "report"
	DiskErrorPolicyEnospace DiskErrorPolicy = "enospace"
)

// TrayState is the CD-ROM tray.
type TrayState string

// Tray states.
const (
	TrayStateOpen   TrayState = "open"
	TrayStateClosed TrayState = "closed"
)

// Disk attaches a volume to the guest as a disk, LUN or CD-ROM.
type Disk struct {
	// Name is the disk's name; the volume of the same name backs it.
	Name       string `json:"name"`
	DiskDevice `json:",inline"`
	// BootOrder is the disk's place in the boot order, from 1; disks without
	// one are not booted from.
	BootOrder *uint `json:"bootOrder,omitempty"`
	// Serial is the serial number the guest sees.
	Serial string `json:"serial,omitempty"`
	// DedicatedIOThread gives the disk an I/O thread of its own.
	DedicatedIOThread *bool `json:"dedicatedIOThread,omitempty"`
	// Cache is the host cache mode: none, writethrough or writeback.
	Cache DriverCache `json:"cache,omitempty"`
	// IO is the host I/O mode: threads or native.
	IO DriverIO `json:"io,omitempty"`
	// Tag is a device role tag passed to the guest in the metadata.
	Tag string `json:"tag,omitempty"`
	// Shareable lets several VMIs attach the disk at once.
	Shareable *bool `json:"shareable,omitempty"`
	// ErrorPolicy is what an I/O error does: stop, ignore, report or enospace.
	ErrorPolicy *DiskErrorPolicy `json:"errorPolicy,omitempty"`
	// BlockSize is the disk's logical and physical block sizes.
	BlockSize *BlockSize `json:"blockSize,omitempty"`
}

// DiskDevice is the disk's target type; at most one is set (none = disk).
type DiskDevice struct {
	// Disk attaches the volume as a disk.
	Disk *DiskTarget `json:"disk,omitempty"`
	// LUN attaches the volume as a SCSI LUN.
	LUN *LunTarget `json:"lun,omitempty"`
	// CDRom attaches the volume as a CD-ROM.
	CDRom *CDRomTarget `json:"cdrom,omitempty"`
}

// DiskTarget is a hard disk.
type DiskTarget struct {
	// Bus is the bus the disk is attached to: virtio, sata, scsi or usb. It
	// defaults to virtio, or to the preference's disk bus.
	Bus DiskBus `json:"bus,omitempty"`
	// ReadOnly makes the disk read-only.
	ReadOnly bool `json:"readonly,omitempty"`
	// PciAddress places the disk at this PCI address, as in 0000:81:01.1.
	PciAddress string `json:"pciAddress,omitempty"`
}

// LunTarget is a SCSI LUN passthrough.
type LunTarget struct {
	// Bus is the bus the LUN is attached to; scsi by default.
	Bus DiskBus `json:"bus,omitempty"`
	// ReadOnly makes the LUN read-only.
	ReadOnly bool `json:"readonly,omitempty"`
	// Reservation passes SCSI persistent reservations through to the device.
	Reservation bool `json:"reservation,omitempty"`
}

// CDRomTarget is a CD-ROM; read-only with a closed tray by default.
type CDRomTarget struct {
	// Bus is the bus the CD-ROM is attached to: sata or scsi; sata by default.
	Bus DiskBus `json:"bus,omitempty"`
	// ReadOnly makes the CD-ROM read-only; true by default.
	ReadOnly *bool `json:"readonly,omitempty"`
	// Tray is the tray's state: open or closed; closed by default.
	Tray TrayState `json:"tray,omitempty"`
}

// Input is a tablet on the usb or virtio bus.
type Input struct {
	// Bus is the bus of the input device: usb or virtio.
	Bus InputBus `json:"bus,omitempty"`
	// Type is the kind of input device: tablet or keyboard.
	Type InputType `json:"type"`
	// Name is the device's name.
	Name string `json:"name"`
}

// InputBus is usb or virtio.
type InputBus string

// InputType is tablet (the only one).
type InputType string

// Input buses and types.
const (
	InputBusUSB     InputBus  = "usb"
	InputBusVirtio  InputBus  = "virtio"
	InputTypeTablet InputType = "tablet"
)

// Interface connects the guest to a network (networks[] by name).
type Interface struct {
	// Name is the interface's name; the network of the same name is what it
	// attaches to.
	Name string `json:"name"`
	// Model is the emulated NIC model, such as virtio or e1000.
	Model                  string `json:"model,omitempty"`
	InterfaceBindingMethod `json:",inline"`
	// Ports are the ports forwarded to the guest; empty forwards all
	// (masquerade binding only).
	Ports []Port `json:"ports,omitempty"`
	// MacAddress is the interface's MAC address.
	MacAddress string `json:"macAddress,omitempty"`
	// BootOrder is the interface's place in the boot order, for network boot.
	BootOrder *uint `json:"bootOrder,omitempty"`
	// PciAddress places the interface at this PCI address.
	PciAddress string `json:"pciAddress,omitempty"`
	// Tag is a device role tag passed to the guest in the metadata.
	Tag string `json:"tag,omitempty"`
	// ACPIIndex is the interface's ACPI index, which names it in the guest.
	ACPIIndex int `json:"acpiIndex,omitempty"`
	// State is the interface's link state: up, down or absent.
	State InterfaceState `json:"state,omitempty"`
}

// Interface models.
const (
	InterfaceModelVirtio  = "virtio"
	InterfaceModelE1000   = "e1000"
	InterfaceModelE1000E  = "e1000e"
	InterfaceModelIGB     = "igb"
	InterfaceModelNe2kPCI = "ne2k_pci"
	InterfaceModelPCNet   = "pcnet"
	InterfaceModelRTL8139 = "rtl8139"
)

// InterfaceState is the link state.
type InterfaceState string

// Interface states.
const (
	InterfaceStateLinkUp   InterfaceState = "up"
	InterfaceStateLinkDown InterfaceState = "down"
	InterfaceStateAbsent   InterfaceState = "absent"
)

// InterfaceBindingMethod is how the interface is wired; exactly one. Slirp,
// Macvtap and Passt are discontinued in KubeVirt and decode only so that
// validation can reject them with KubeVirt's reason.
type InterfaceBindingMethod struct {
	// Bridge connects the interface to the network through a bridge.
	Bridge *InterfaceBridge `json:"bridge,omitempty"`
	// Masquerade puts the guest behind NAT on the network.
	Masquerade *InterfaceMasquerade `json:"masquerade,omitempty"`
	// SRIOV passes an SR-IOV virtual function through to the guest.
	SRIOV *InterfaceSRIOV `json:"sriov,omitempty"`
	// Slirp connects the interface through user-mode networking.
	Slirp *DeprecatedBinding `json:"slirp,omitempty"`
	// Macvtap connects the interface through a macvtap device.
	Macvtap *DeprecatedBinding `json:"macvtap,omitempty"`
	// Passt connects the interface through passt, a user-mode network
	// translator.
	Passt *DeprecatedBinding `json:"passt,omitempty"`
}

// InterfaceBridge connects the guest to the network with a bridge.
type InterfaceBridge struct{}

// InterfaceMasquerade NATs the guest behind the node's address.
type InterfaceMasquerade struct{}

// InterfaceSRIOV passes through an SR-IOV virtual function.
type InterfaceSRIOV struct{}

// DeprecatedBinding is a binding KubeVirt removed (slirp, macvtap, passt).
type DeprecatedBinding struct{}

// Port is a port exposed by a masquerade interface.
type Port struct {
	// Name is the port's name.
	Name string `json:"name,omitempty"`
	// Protocol is TCP or UDP; TCP by default.
	Protocol string `json:"protocol,omitempty"`
	// Port is the port number.
	Port int32 `json:"port"`
}

// Network is a network the guest can connect to.
type Network struct {
	// Name is the network's name; the interface of the same name attaches to
	// it.
	Name          string `json:"name"`
	NetworkSource `json:",inline"`
}

// NetworkSource is pod or multus; exactly one.
type NetworkSource struct {
	// Pod is the default network of the VMI's node.
	Pod *PodNetwork `json:"pod,omitempty"`
	// Multus is a secondary network, defined by a NetworkAttachmentDefinition.
	Multus *MultusNetwork `json:"multus,omitempty"`
}

// PodNetwork is the node's primary network.
type PodNetwork struct {
	// VMNetworkCIDR is the IPv4 network the guest's address is taken from
	// (masquerade binding).
	VMNetworkCIDR string `json:"vmNetworkCIDR,omitempty"`
	// VMIPv6NetworkCIDR is the IPv6 network the guest's address is taken from
	// (masquerade binding).
	VMIPv6NetworkCIDR string `json:"vmIPv6NetworkCIDR,omitempty"`
}

// MultusNetwork is a secondary network by name.
type MultusNetwork struct {
	// NetworkName names the NetworkAttachmentDefinition, as name or
	// namespace/name.
	NetworkName string `json:"networkName"`
	// Default makes this network the default one, in place of the pod network.
	Default bool `json:"default,omitempty"`
}

// Volume is a named storage source used by a disk.
type Volume struct {
	// Name is the volume's name; the disk or filesystem of the same name uses
	// it.
	Name         string `json:"name"`
	VolumeSource `json:",inline"`
}

// VolumeSource is where a volume's data comes from; exactly one.
type VolumeSource struct {
	// HostDisk is a disk image file on the node.
	HostDisk *HostDisk `json:"hostDisk,omitempty"`
	// PersistentVolumeClaim is a claim in the VMI's namespace.
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty"`
	// CloudInitNoCloud is cloud-init user and network data in the NoCloud
	// format.
	CloudInitNoCloud *CloudInitNoCloudSource `json:"cloudInitNoCloud,omitempty"`
	// CloudInitConfigDrive is cloud-init user and network data in the
	// ConfigDrive format.
	CloudInitConfigDrive *CloudInitConfigDriveSource `json:"cloudInitConfigDrive,omitempty"`
	// ContainerDisk is a disk image from a container image; the guest's writes
	// are lost when it stops.
	ContainerDisk *ContainerDiskSource `json:"containerDisk,omitempty"`
	// Ephemeral is a claim the guest reads, with its writes kept in a
	// temporary overlay.
	Ephemeral *EphemeralVolumeSource `json:"ephemeral,omitempty"`
	// EmptyDisk is a new, empty disk that lives as long as the VMI.
	EmptyDisk *EmptyDiskSource `json:"emptyDisk,omitempty"`
	// DataVolume is a DataVolume in the VMI's namespace.
	DataVolume *DataVolumeSource `json:"dataVolume,omitempty"`
	// ConfigMap exposes a ConfigMap to the guest as a disk or filesystem.
	ConfigMap *ConfigMapVolumeSource `json:"configMap,omitempty"`
	// Secret exposes a Secret to the guest as a disk or filesystem.
	Secret *SecretVolumeSource `json:"secret,omitempty"`
	// ServiceAccount exposes a service account's token to the guest.
	ServiceAccount *ServiceAccountVolumeSource `json:"serviceAccount,omitempty"`
	// DownwardAPI exposes fields of the VMI to the guest.
	DownwardAPI *DownwardAPIVolumeSource `json:"downwardAPI,omitempty"`
	// Sysprep is a Windows answer file from a ConfigMap or Secret.
	Sysprep *SysprepSource `json:"sysprep,omitempty"`
	// DownwardMetrics exposes host and guest metrics to the guest.
	DownwardMetrics *DownwardMetricsVolumeSource `json:"downwardMetrics,omitempty"`
}

// HostDiskType is Disk (must exist) or DiskOrCreate.
type HostDiskType string

// Host disk types.
const (
	HostDiskExists         HostDiskType = "Disk"
	HostDiskExistsOrCreate HostDiskType = "DiskOrCreate"
)

// HostDisk is an image file on the node.
type HostDisk struct {
	// Path is the image file's path on the node.
	Path string `json:"path"`
	// Type is Disk (the image must exist) or DiskOrCreate (it is created with
	// capacity if missing).
	Type HostDiskType `json:"type"`
	// Capacity is the size of an image created by DiskOrCreate.
	Capacity resource.Quantity `json:"capacity,omitempty"`
	// Shared marks the image as shared between nodes, so the VMI may migrate.
	Shared *bool `json:"shared,omitempty"`
}

// PersistentVolumeClaimVolumeSource uses a claim by name.
type PersistentVolumeClaimVolumeSource struct {
	// ClaimName names the claim.
	ClaimName string `json:"claimName"`
	// ReadOnly attaches the claim read-only.
	ReadOnly bool `json:"readOnly,omitempty"`
	// Hotpluggable marks the volume as hot-plugged.
	Hotpluggable bool `json:"hotpluggable,omitempty"`
}

// CloudInitNoCloudSource is cloud-init NoCloud data.
type CloudInitNoCloudSource struct {
	// UserDataSecretRef (JSON secretRef) names a Secret holding the user data.
	UserDataSecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// UserDataBase64 is the user data, base64 encoded.
	UserDataBase64 string `json:"userDataBase64,omitempty"`
	// UserData is the user data.
	UserData string `json:"userData,omitempty"`
	// NetworkDataSecretRef names a Secret holding the network data.
	NetworkDataSecretRef *LocalObjectReference `json:"networkDataSecretRef,omitempty"`
	// NetworkDataBase64 is the network data, base64 encoded.
	NetworkDataBase64 string `json:"networkDataBase64,omitempty"`
	// NetworkData is the network data.
	NetworkData string `json:"networkData,omitempty"`
}

// CloudInitConfigDriveSource is cloud-init ConfigDrive data.
type CloudInitConfigDriveSource struct {
	// UserDataSecretRef (JSON secretRef) names a Secret holding the user data.
	UserDataSecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// UserDataBase64 is the user data, base64 encoded.
	UserDataBase64 string `json:"userDataBase64,omitempty"`
	// UserData is the user data.
	UserData string `json:"userData,omitempty"`
	// NetworkDataSecretRef names a Secret holding the network data.
	NetworkDataSecretRef *LocalObjectReference `json:"networkDataSecretRef,omitempty"`
	// NetworkDataBase64 is the network data, base64 encoded.
	NetworkDataBase64 string `json:"networkDataBase64,omitempty"`
	// NetworkData is the network data.
	NetworkData string `json:"networkData,omitempty"`
}

// ContainerDiskSource is a disk image shipped in a container image.
type ContainerDiskSource struct {
	// Image is the container image holding the disk image.
	Image string `json:"image"`
	// ImagePullSecret names the secret used to pull the image.
	ImagePullSecret string `json:"imagePullSecret,omitempty"`
	// Path is the disk image's path in the container image; the first image
	// under /disk by default.
	Path string `json:"path,omitempty"`
	// ImagePullPolicy is when the image is pulled: Always, Never or
	// IfNotPresent.
	ImagePullPolicy PullPolicy `json:"imagePullPolicy,omitempty"`
}

// EphemeralVolumeSource is a claim used read-only with a throwaway overlay.
type EphemeralVolumeSource struct {
	// PersistentVolumeClaim is the claim read through the overlay.
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty"`
}

// EmptyDiskSource is a blank sparse disk that lives as long as the VMI.
type EmptyDiskSource struct {
	// Capacity is the disk's size.
	Capacity resource.Quantity `json:"capacity"`
}

// DataVolumeSource uses a DataVolume by name.
type DataVolumeSource struct {
	// Name names the DataVolume.
	Name string `json:"name"`
	// Hotpluggable marks the volume as hot-plugged.
	Hotpluggable bool `json:"hotpluggable,omitempty"`
}

// VirtualMachineInstancePhase is the VMI lifecycle phase.
type VirtualMachineInstancePhase string

// VMI phases.
const (
	VmPhaseUnset   VirtualMachineInstancePhase = ""
	Pending        VirtualMachineInstancePhase = "Pending"
	Scheduling     VirtualMachineInstancePhase = "Scheduling"
	Scheduled      VirtualMachineInstancePhase = "Scheduled"
	Running        VirtualMachineInstancePhase = "Running"
	Succeeded      VirtualMachineInstancePhase = "Succeeded"
	Failed         VirtualMachineInstancePhase = "Failed"
	WaitingForSync VirtualMachineInstancePhase = "WaitingForSync"
	Unknown        VirtualMachineInstancePhase = "Unknown"
)

// VirtualMachineInstanceStatus is the observed state of a VMI.
type VirtualMachineInstanceStatus struct {
	// NodeName is the node the VMI runs on.
	NodeName string `json:"nodeName,omitempty"`
	// Reason is a short, machine readable cause of the current phase.
	Reason string `json:"reason,omitempty"`
	// Conditions are the VMI's current conditions, such as Ready and
	// LiveMigratable.
	Conditions []Condition `json:"conditions,omitempty"`
	// Phase is where the VMI stands in its lifecycle: Pending, Scheduling,
	// Scheduled, Running, Succeeded, Failed or Unknown.
	Phase VirtualMachineInstancePhase `json:"phase,omitempty"`
	// PhaseTransitionTimestamps record when the VMI entered each phase.
	// +listType=atomic
	PhaseTransitionTimestamps []VirtualMachineInstancePhaseTransitionTimestamp `json:"phaseTransitionTimestamps,omitempty"`
	// Interfaces are the guest's network interfaces as last reported, with
	// their addresses.
	Interfaces []VirtualMachineInstanceNetworkInterface `json:"interfaces,omitempty"`
	// GuestOSInfo is the guest's operating system, as its agent reports it.
	GuestOSInfo VirtualMachineInstanceGuestOSInfo `json:"guestOSInfo,omitempty"`
	// MigrationState is the state of the VMI's current or last migration.
	MigrationState *VirtualMachineInstanceMigrationState `json:"migrationState,omitempty"`
	// MigrationMethod is BlockMigration when local disks are copied, else
	// LiveMigration.
	MigrationMethod VirtualMachineInstanceMigrationMethod `json:"migrationMethod,omitempty"`
	// MigrationTransport is how the migration stream travels.
	MigrationTransport VirtualMachineInstanceMigrationTransport `json:"migrationTransport,omitempty"`
	// QOSClass is the quality of service class the VMI's resources give it.
	QOSClass *PodQOSClass `json:"qosClass,omitempty"`
	// EvacuationNodeName is set to the node the VMI must leave, as when the
	// node is drained.
	EvacuationNodeName string `json:"evacuationNodeName,omitempty"`
	// ActivePods maps each launcher "pod" UID to its node. In virtkit a pod
	// is a domain on a node: one entry normally, two during a migration.
	ActivePods map[types.UID]string `json:"activePods,omitempty"`
	// VolumeStatus is the state of each volume.
	// +listType=atomic
	VolumeStatus []VolumeStatus `json:"volumeStatus,omitempty"`
	// FSFreezeStatus is frozen while the guest's filesystems are frozen.
	FSFreezeStatus string `json:"fsFreezeStatus,omitempty"`
	// RuntimeUser is the user ID the guest's process runs as.
	RuntimeUser uint64 `json:"runtimeUser"`
	// VSOCKCID is the guest's VSOCK context ID.
	VSOCKCID *uint32 `json:"VSOCKCID,omitempty"`
	// Machine is the machine type the guest runs with.
	Machine *Machine `json:"machine,omitempty"`
	// CurrentCPUTopology is the vCPU topology the guest runs with, which hot-
	// plug may change.
	CurrentCPUTopology *CPUTopology `json:"currentCPUTopology,omitempty"`
	// Memory is the guest's memory at boot, now and as requested.
	Memory *MemoryStatus `json:"memory,omitempty"`
}

// VirtualMachineInstancePhaseTransitionTimestamp records when a phase began.
type VirtualMachineInstancePhaseTransitionTimestamp struct {
	// Phase is the phase entered.
	Phase VirtualMachineInstancePhase `json:"phase,omitempty"`
	// PhaseTransitionTimestamp is when the phase was entered.
	PhaseTransitionTimestamp metav1.Time `json:"phaseTransitionTimestamp,omitempty"`
}

// Interface info sources (joined with ", " when merged).
const (
	InfoSourceDomain       = "domain"
	InfoSourceGuestAgent   = "guest-agent"
	InfoSourceMultusStatus = "multus-status"
	InfoSourceDomainAndGA  = "domain, guest-agent"
)

// VirtualMachineInstanceNetworkInterface is one guest NIC as observed.
type VirtualMachineInstanceNetworkInterface struct {
	// IP is the interface's primary IP address.
	IP string `json:"ipAddress,omitempty"`
	// MAC is the interface's MAC address.
	MAC string `json:"mac,omitempty"`
	// Name is the interface's name in the VMI's spec.
	Name string `json:"name,omitempty"`
	// IPs are all the interface's IP addresses.
	IPs []string `json:"ipAddresses,omitempty"`
	// PodInterfaceName is the name of the interface on the host side.
	PodInterfaceName string `json:"podInterfaceName,omitempty"`
	// InterfaceName is the interface's name in the guest.
	InterfaceName string `json:"interfaceName,omitempty"`
	// InfoSource says where the information came from: domain, guest-agent,
	// multus-status, or several of them.
	InfoSource string `json:"infoSource,omitempty"`
	// QueueCount is the number of queues of the interface.
	QueueCount int32 `json:"queueCount,omitempty"`
	// LinkState is the interface's link state: up or down.
	LinkState string `json:"linkState,omitempty"`
}

// VirtualMachineInstanceGuestOSInfo is what the guest agent reports.
type VirtualMachineInstanceGuestOSInfo struct {
	// Name is the operating system's name.
	Name string `json:"name,omitempty"`
	// KernelRelease is the kernel's release.
	KernelRelease string `json:"kernelRelease,omitempty"`
	// Version is the operating system's version.
	Version string `json:"version,omitempty"`
	// PrettyName is the operating system's full, human readable name.
	PrettyName string `json:"prettyName,omitempty"`
	// VersionID is the operating system's version identifier.
	VersionID string `json:"versionId,omitempty"`
	// KernelVersion is the kernel's version.
	KernelVersion string `json:"kernelVersion,omitempty"`
	// Machine is the guest's hardware architecture.
	Machine string `json:"machine,omitempty"`
	// ID is the operating system's identifier, such as fedora.
	ID string `json:"id,omitempty"`
}

// VirtualMachineInstanceMigrationMethod is BlockMigration or LiveMigration.
type VirtualMachineInstanceMigrationMethod string

// Migration methods.
const (
	BlockMigration VirtualMachineInstanceMigrationMethod = "BlockMigration"
	LiveMigration  VirtualMachineInstanceMigrationMethod = "LiveMigration"
)

// VirtualMachineInstanceMigrationTransport is how migration traffic flows.
type VirtualMachineInstanceMigrationTransport string

// MigrationTransportUnix is KubeVirt's (and virtkit's) only transport value.
const MigrationTransportUnix VirtualMachineInstanceMigrationTransport = "Unix"

// VolumePhase is the phase of a volume.
type VolumePhase string

// VolumeStatus is the observed state of one volume.
type VolumeStatus struct {
	// Name is the volume's name.
	Name string `json:"name"`
	// Target is the device name the guest sees, such as vda.
	Target string `json:"target"`
	// Phase is the volume's state.
	Phase VolumePhase `json:"phase,omitempty"`
	// Reason is a short, machine readable cause of the volume's state.
	Reason string `json:"reason,omitempty"`
	// Message is a human readable account of the volume's state.
	Message string `json:"message,omitempty"`
	// Size is the volume's size in bytes.
	Size int64 `json:"size,omitempty"`
}

// MemoryStatus is the guest memory as seen by the hypervisor.
type MemoryStatus struct {
	// GuestAtBoot is the guest's memory when it booted.
	GuestAtBoot *resource.Quantity `json:"guestAtBoot,omitempty"`
	// GuestCurrent is the guest's memory now.
	GuestCurrent *resource.Quantity `json:"guestCurrent,omitempty"`
	// GuestRequested is the guest's memory as last requested.
	GuestRequested *resource.Quantity `json:"guestRequested,omitempty"`
	// MemoryOverhead is the hypervisor's memory overhead for the guest.
	MemoryOverhead *resource.Quantity `json:"memoryOverhead,omitempty"`
}

// IsFinal reports whether the VMI has stopped for good (Succeeded or Failed).
func (vmi *VirtualMachineInstance) IsFinal() bool {
	return vmi.Status.Phase.IsFinal()
}

// IsFinal reports whether the phase is Succeeded or Failed.
func (p VirtualMachineInstancePhase) IsFinal() bool {
	return p == Succeeded || p == Failed
}

// IsUnprocessed reports whether no controller has acted on the VMI yet.
func (vmi *VirtualMachineInstance) IsUnprocessed() bool {
	return vmi.Status.Phase == VmPhaseUnset || vmi.Status.Phase == Pending
}

// IsScheduling reports whether the VMI is being placed.
func (vmi *VirtualMachineInstance) IsScheduling() bool { return vmi.Status.Phase == Scheduling }

// IsScheduled reports whether the VMI has a node but no running domain yet.
func (vmi *VirtualMachineInstance) IsScheduled() bool { return vmi.Status.Phase == Scheduled }

// IsRunning reports whether the VMI's domain runs (paused counts as running).
func (vmi *VirtualMachineInstance) IsRunning() bool { return vmi.Status.Phase == Running }

// IsMarkedForEviction reports whether the VMI's node is being drained.
func (vmi *VirtualMachineInstance) IsMarkedForEviction() bool {
	return vmi.Status.EvacuationNodeName != ""
}

// IsMigratable reports whether the VMI's LiveMigratable condition is True.
func (vmi *VirtualMachineInstance) IsMigratable() bool {
	return IsConditionTrue(vmi.Status.Conditions, VirtualMachineInstanceIsMigratable)
}

// IsPaused reports whether the VMI's Paused condition is True.
func (vmi *VirtualMachineInstance) IsPaused() bool {
	return IsConditionTrue(vmi.Status.Conditions, VirtualMachineInstancePaused)
}

// IsReady reports whether the VMI's Ready condition is True.
func (vmi *VirtualMachineInstance) IsReady() bool {
	return IsConditionTrue(vmi.Status.Conditions, VirtualMachineInstanceReady)
}

// ShouldStartPaused reports whether spec.startStrategy is Paused.
func (vmi *VirtualMachineInstance) ShouldStartPaused() bool {
	return vmi.Spec.StartStrategy != nil && *vmi.Spec.StartStrategy == StartStrategyPaused
}

// IsMigrating reports whether a migration has started (startTimestamp at or
// before now) and not ended.
func (vmi *VirtualMachineInstance) IsMigrating(now metav1.Time) bool {
	ms := vmi.Status.MigrationState
	return ms != nil && ms.StartTimestamp != nil && !ms.StartTimestamp.After(now.Time) && ms.EndTimestamp == nil
}

// WantsToHaveQOSGuaranteed reports whether requests equal limits for both
// cpu and memory (a resource with only a limit counts as equal), with a
// non-zero cpu.
func (vmi *VirtualMachineInstance) WantsToHaveQOSGuaranteed() bool {
	res := vmi.Spec.Domain.Resources
	equal := func(name ResourceName) bool {
		limit, ok := res.Limits[name]
		if !ok || limit.IsZero() {
			return false
		}
		req, ok := res.Requests[name]
		return !ok || req.Cmp(limit) == 0
	}
	return equal(ResourceCPU) && equal(ResourceMemory)
}

// SetPhase moves the VMI to phase and records the transition time; it
// reports whether the phase changed.
func (vmi *VirtualMachineInstance) SetPhase(phase VirtualMachineInstancePhase, now metav1.Time) bool {
	if vmi.Status.Phase == phase {
		return false
	}
	vmi.Status.Phase = phase
	vmi.Status.PhaseTransitionTimestamps = append(vmi.Status.PhaseTransitionTimestamps,
		VirtualMachineInstancePhaseTransitionTimestamp{Phase: phase, PhaseTransitionTimestamp: now})
	return true
}

// HasReachedPhase reports whether the VMI ever entered phase, according to
// its phaseTransitionTimestamps.
func (vmi *VirtualMachineInstance) HasReachedPhase(phase VirtualMachineInstancePhase) bool {
	for _, t := range vmi.Status.PhaseTransitionTimestamps {
		if t.Phase == phase {
			return true
		}
	}
	return false
}

// SetActivePod records that the domain identified by uid runs on node and
// reports whether status changed.
func (vmi *VirtualMachineInstance) SetActivePod(uid types.UID, node string) bool {
	if cur, ok := vmi.Status.ActivePods[uid]; ok && cur == node {
		return false
	}
	if vmi.Status.ActivePods == nil {
		vmi.Status.ActivePods = map[types.UID]string{}
	}
	vmi.Status.ActivePods[uid] = node
	return true
}

// RemoveActivePod forgets the domain identified by uid and reports whether
// it was recorded.
func (vmi *VirtualMachineInstance) RemoveActivePod(uid types.UID) bool {
	if _, ok := vmi.Status.ActivePods[uid]; !ok {
		return false
	}
	delete(vmi.Status.ActivePods, uid)
	if len(vmi.Status.ActivePods) == 0 {
		vmi.Status.ActivePods = nil
	}
	return true
}

// ActiveNodes returns the distinct nodes in status.activePods, sorted.
func (vmi *VirtualMachineInstance) ActiveNodes() []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range vmi.Status.ActivePods {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
