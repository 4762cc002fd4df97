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
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              VirtualMachineInstanceSpec   `json:"spec"`
	Status            VirtualMachineInstanceStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// VirtualMachineInstanceList is a list of VMIs.
type VirtualMachineInstanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VirtualMachineInstance `json:"items"`
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
	PriorityClassName             string            `json:"priorityClassName,omitempty"`
	Domain                        DomainSpec        `json:"domain"`
	NodeSelector                  map[string]string `json:"nodeSelector,omitempty"`
	Affinity                      *Affinity         `json:"affinity,omitempty"`
	SchedulerName                 string            `json:"schedulerName,omitempty"`
	Tolerations                   []Toleration      `json:"tolerations,omitempty"`
	EvictionStrategy              *EvictionStrategy `json:"evictionStrategy,omitempty"`
	StartStrategy                 *StartStrategy    `json:"startStrategy,omitempty"`
	TerminationGracePeriodSeconds *int64            `json:"terminationGracePeriodSeconds,omitempty"`
	Volumes                       []Volume          `json:"volumes,omitempty"`
	LivenessProbe                 *Probe            `json:"livenessProbe,omitempty"`
	ReadinessProbe                *Probe            `json:"readinessProbe,omitempty"`
	Hostname                      string            `json:"hostname,omitempty"`
	Subdomain                     string            `json:"subdomain,omitempty"`
	Networks                      []Network         `json:"networks,omitempty"`
	DNSConfig                     *PodDNSConfig     `json:"dnsConfig,omitempty"`
	DNSPolicy                     DNSPolicy         `json:"dnsPolicy,omitempty"`
	// Architecture is amd64, arm64 or s390x; defaulted to amd64.
	Architecture string `json:"architecture,omitempty"`
}

// Probe checks guest health (liveness) or readiness.
type Probe struct {
	Handler             `json:",inline"`
	InitialDelaySeconds int32 `json:"initialDelaySeconds,omitempty"`
	TimeoutSeconds      int32 `json:"timeoutSeconds,omitempty"`
	PeriodSeconds       int32 `json:"periodSeconds,omitempty"`
	SuccessThreshold    int32 `json:"successThreshold,omitempty"`
	FailureThreshold    int32 `json:"failureThreshold,omitempty"`
}

// Handler is the probe mechanism; exactly one must be set.
type Handler struct {
	Exec           *ExecAction      `json:"exec,omitempty"`
	HTTPGet        *HTTPGetAction   `json:"httpGet,omitempty"`
	TCPSocket      *TCPSocketAction `json:"tcpSocket,omitempty"`
	GuestAgentPing *GuestAgentPing  `json:"guestAgentPing,omitempty"`
}

// GuestAgentPing probes by sending guest-ping to the guest agent.
type GuestAgentPing struct{}

// DomainSpec is the virtual hardware.
type DomainSpec struct {
	Resources ResourceRequirements `json:"resources,omitempty"`
	CPU       *CPU                 `json:"cpu,omitempty"`
	Memory    *Memory              `json:"memory,omitempty"`
	Machine   *Machine             `json:"machine,omitempty"`
	Firmware  *Firmware            `json:"firmware,omitempty"`
	Clock     *Clock               `json:"clock,omitempty"`
	Features  *Features            `json:"features,omitempty"`
	Devices   Devices              `json:"devices"`
}

// ResourceRequirements are the VMI's requests and limits (cpu, memory).
type ResourceRequirements struct {
	Requests                ResourceList `json:"requests,omitempty"`
	Limits                  ResourceList `json:"limits,omitempty"`
	OvercommitGuestOverhead bool         `json:"overcommitGuestOverhead,omitempty"`
}

// CPU is the vCPU topology and model.
type CPU struct {
	Cores                 uint32       `json:"cores,omitempty"`
	Sockets               uint32       `json:"sockets,omitempty"`
	MaxSockets            uint32       `json:"maxSockets,omitempty"`
	Threads               uint32       `json:"threads,omitempty"`
	Model                 string       `json:"model,omitempty"`
	Features              []CPUFeature `json:"features,omitempty"`
	DedicatedCPUPlacement bool         `json:"dedicatedCpuPlacement,omitempty"`
	IsolateEmulatorThread bool         `json:"isolateEmulatorThread,omitempty"`
}

// CPU models with a special meaning.
const (
	CPUModeHostPassthrough = "host-passthrough"
	CPUModeHostModel       = "host-model"
)

// CPUFeature enables or disables one CPU feature.
type CPUFeature struct {
	Name   string `json:"name"`
	Policy string `json:"policy,omitempty"`
}

// CPUTopology is sockets x cores x threads.
type CPUTopology struct {
	Cores   uint32 `json:"cores,omitempty"`
	Sockets uint32 `json:"sockets,omitempty"`
	Threads uint32 `json:"threads,omitempty"`
}

// Memory is the guest's memory.
type Memory struct {
	Hugepages *Hugepages         `json:"hugepages,omitempty"`
	Guest     *resource.Quantity `json:"guest,omitempty"`
	MaxGuest  *resource.Quantity `json:"maxGuest,omitempty"`
}

// Hugepages backs guest memory with huge pages of PageSize (2Mi, 1Gi).
type Hugepages struct {
	PageSize string `json:"pageSize,omitempty"`
}

// Machine is the emulated machine type (q35).
type Machine struct {
	Type string `json:"type"`
}

// Firmware is SMBIOS identity and boot firmware.
type Firmware struct {
	UUID       types.UID   `json:"uuid,omitempty"`
	Bootloader *Bootloader `json:"bootloader,omitempty"`
	Serial     string      `json:"serial,omitempty"`
	KernelBoot *KernelBoot `json:"kernelBoot,omitempty"`
}

// Bootloader is BIOS or EFI, never both.
type Bootloader struct {
	BIOS *BIOS `json:"bios,omitempty"`
	EFI  *EFI  `json:"efi,omitempty"`
}

// BIOS is SeaBIOS.
type BIOS struct {
	UseSerial *bool `json:"useSerial,omitempty"`
}

// EFI is OVMF, with secure boot by default.
type EFI struct {
	SecureBoot *bool `json:"secureBoot,omitempty"`
	Persistent *bool `json:"persistent,omitempty"`
}

// KernelBoot boots a kernel and initrd taken from a container image.
type KernelBoot struct {
	KernelArgs string               `json:"kernelArgs,omitempty"`
	Container  *KernelBootContainer `json:"container,omitempty"`
}

// KernelBootContainer is the image holding the kernel and initrd.
type KernelBootContainer struct {
	Image           string     `json:"image"`
	ImagePullSecret string     `json:"imagePullSecret,omitempty"`
	KernelPath      string     `json:"kernelPath,omitempty"`
	InitrdPath      string     `json:"initrdPath,omitempty"`
	ImagePullPolicy PullPolicy `json:"imagePullPolicy,omitempty"`
}

// Clock is the guest clock offset and timers.
type Clock struct {
	ClockOffset `json:",inline"`
	Timer       *Timer `json:"timer,omitempty"`
}

// ClockOffset is UTC (with an optional offset) or a timezone; exactly one.
type ClockOffset struct {
	UTC      *ClockOffsetUTC      `json:"utc,omitempty"`
	Timezone *ClockOffsetTimezone `json:"timezone,omitempty"`
}

// ClockOffsetUTC sets the guest clock to UTC plus OffsetSeconds.
type ClockOffsetUTC struct {
	OffsetSeconds *int `json:"offsetSeconds,omitempty"`
}

// ClockOffsetTimezone sets the guest clock to a timezone, e.g. "Europe/Rome".
type ClockOffsetTimezone string

// Timer configures the emulated timers.
type Timer struct {
	HPET   *HPETTimer   `json:"hpet,omitempty"`
	KVM    *KVMTimer    `json:"kvm,omitempty"`
	PIT    *PITTimer    `json:"pit,omitempty"`
	RTC    *RTCTimer    `json:"rtc,omitempty"`
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
	TickPolicy TickPolicy `json:"tickPolicy,omitempty"`
	Enabled    *bool      `json:"present,omitempty"`
}

// PITTimer is the programmable interval timer.
type PITTimer struct {
	TickPolicy TickPolicy `json:"tickPolicy,omitempty"`
	Enabled    *bool      `json:"present,omitempty"`
}

// RTCTimer is the real-time clock.
type RTCTimer struct {
	TickPolicy TickPolicy `json:"tickPolicy,omitempty"`
	Enabled    *bool      `json:"present,omitempty"`
	Track      string     `json:"track,omitempty"`
}

// KVMTimer is the kvmclock paravirtual clock.
type KVMTimer struct {
	Enabled *bool `json:"present,omitempty"`
}

// HypervTimer is the Hyper-V reference clock.
type HypervTimer struct {
	Enabled *bool `json:"present,omitempty"`
}

// FeatureState enables (default) or disables a feature.
type FeatureState struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// Features are hypervisor features exposed to the guest.
type Features struct {
	// ACPI is a value, not a pointer: ACPI is on unless enabled: false.
	ACPI       FeatureState   `json:"acpi,omitempty"`
	APIC       *FeatureAPIC   `json:"apic,omitempty"`
	Hyperv     *FeatureHyperv `json:"hyperv,omitempty"`
	SMM        *FeatureState  `json:"smm,omitempty"`
	KVM        *FeatureKVM    `json:"kvm,omitempty"`
	Pvspinlock *FeatureState  `json:"pvspinlock,omitempty"`
}

// FeatureAPIC is the APIC and its EOI setting.
type FeatureAPIC struct {
	Enabled        *bool `json:"enabled,omitempty"`
	EndOfInterrupt bool  `json:"endOfInterrupt,omitempty"`
}

// FeatureKVM hides the KVM signature from the guest.
type FeatureKVM struct {
	Hidden bool `json:"hidden,omitempty"`
}

// FeatureSpinlocks sets the Hyper-V spinlock retry count (>= 4096).
type FeatureSpinlocks struct {
	Enabled *bool   `json:"enabled,omitempty"`
	Retries *uint32 `json:"spinlocks,omitempty"`
}

// FeatureVendorID sets the Hyper-V vendor id string.
type FeatureVendorID struct {
	Enabled  *bool  `json:"enabled,omitempty"`
	VendorID string `json:"vendorid,omitempty"`
}

// SyNICTimer is the Hyper-V synthetic timer.
type SyNICTimer struct {
	Enabled *bool         `json:"enabled,omitempty"`
	Direct  *FeatureState `json:"direct,omitempty"`
}

// TLBFlush is the Hyper-V paravirtual TLB flush.
type TLBFlush struct {
	Enabled  *bool         `json:"enabled,omitempty"`
	Direct   *FeatureState `json:"direct,omitempty"`
	Extended *FeatureState `json:"extended,omitempty"`
}

// FeatureHyperv are the Hyper-V enlightenments.
type FeatureHyperv struct {
	Relaxed         *FeatureState     `json:"relaxed,omitempty"`
	VAPIC           *FeatureState     `json:"vapic,omitempty"`
	Spinlocks       *FeatureSpinlocks `json:"spinlocks,omitempty"`
	VPIndex         *FeatureState     `json:"vpindex,omitempty"`
	Runtime         *FeatureState     `json:"runtime,omitempty"`
	SyNIC           *FeatureState     `json:"synic,omitempty"`
	SyNICTimer      *SyNICTimer       `json:"synictimer,omitempty"`
	Reset           *FeatureState     `json:"reset,omitempty"`
	VendorID        *FeatureVendorID  `json:"vendorid,omitempty"`
	Frequencies     *FeatureState     `json:"frequencies,omitempty"`
	Reenlightenment *FeatureState     `json:"reenlightenment,omitempty"`
	TLBFlush        *TLBFlush         `json:"tlbflush,omitempty"`
	IPI             *FeatureState     `json:"ipi,omitempty"`
	EVMCS           *FeatureState     `json:"evmcs,omitempty"`
}

// Devices are the guest's devices.
type Devices struct {
	Disks                      []Disk      `json:"disks,omitempty"`
	Interfaces                 []Interface `json:"interfaces,omitempty"`
	Inputs                     []Input     `json:"inputs,omitempty"`
	AutoattachPodInterface     *bool       `json:"autoattachPodInterface,omitempty"`
	AutoattachGraphicsDevice   *bool       `json:"autoattachGraphicsDevice,omitempty"`
	AutoattachSerialConsole    *bool       `json:"autoattachSerialConsole,omitempty"`
	LogSerialConsole           *bool       `json:"logSerialConsole,omitempty"`
	AutoattachMemBalloon       *bool       `json:"autoattachMemBalloon,omitempty"`
	AutoattachInputDevice      *bool       `json:"autoattachInputDevice,omitempty"`
	Rng                        *Rng        `json:"rng,omitempty"`
	BlockMultiQueue            *bool       `json:"blockMultiQueue,omitempty"`
	NetworkInterfaceMultiQueue *bool       `json:"networkInterfaceMultiqueue,omitempty"`
	UseVirtioTransitional      *bool       `json:"useVirtioTransitional,omitempty"`
	// TPM is an emulated TPM (swtpm); accepted by the model, the domain
	// builder decides whether the host can provide it.
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
}

// Rng adds a virtio-rng device fed from /dev/urandom.
type Rng struct{}

// TPMDevice is an emulated TPM 2.0.
type TPMDevice struct {
	Enabled    *bool `json:"enabled,omitempty"`
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
	Name              string `json:"name"`
	DiskDevice        `json:",inline"`
	BootOrder         *uint            `json:"bootOrder,omitempty"`
	Serial            string           `json:"serial,omitempty"`
	DedicatedIOThread *bool            `json:"dedicatedIOThread,omitempty"`
	Cache             DriverCache      `json:"cache,omitempty"`
	IO                DriverIO         `json:"io,omitempty"`
	Tag               string           `json:"tag,omitempty"`
	Shareable         *bool            `json:"shareable,omitempty"`
	ErrorPolicy       *DiskErrorPolicy `json:"errorPolicy,omitempty"`
}

// DiskDevice is the disk's target type; at most one is set (none = disk).
type DiskDevice struct {
	Disk  *DiskTarget  `json:"disk,omitempty"`
	LUN   *LunTarget   `json:"lun,omitempty"`
	CDRom *CDRomTarget `json:"cdrom,omitempty"`
}

// DiskTarget is a hard disk.
type DiskTarget struct {
	Bus        DiskBus `json:"bus,omitempty"`
	ReadOnly   bool    `json:"readonly,omitempty"`
	PciAddress string  `json:"pciAddress,omitempty"`
}

// LunTarget is a SCSI LUN passthrough.
type LunTarget struct {
	Bus         DiskBus `json:"bus,omitempty"`
	ReadOnly    bool    `json:"readonly,omitempty"`
	Reservation bool    `json:"reservation,omitempty"`
}

// CDRomTarget is a CD-ROM; read-only with a closed tray by default.
type CDRomTarget struct {
	Bus      DiskBus   `json:"bus,omitempty"`
	ReadOnly *bool     `json:"readonly,omitempty"`
	Tray     TrayState `json:"tray,omitempty"`
}

// Input is a tablet on the usb or virtio bus.
type Input struct {
	Bus  InputBus  `json:"bus,omitempty"`
	Type InputType `json:"type"`
	Name string    `json:"name"`
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
	Name                   string `json:"name"`
	Model                  string `json:"model,omitempty"`
	InterfaceBindingMethod `json:",inline"`
	Ports                  []Port         `json:"ports,omitempty"`
	MacAddress             string         `json:"macAddress,omitempty"`
	BootOrder              *uint          `json:"bootOrder,omitempty"`
	PciAddress             string         `json:"pciAddress,omitempty"`
	Tag                    string         `json:"tag,omitempty"`
	ACPIIndex              int            `json:"acpiIndex,omitempty"`
	State                  InterfaceState `json:"state,omitempty"`
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
	Bridge     *InterfaceBridge     `json:"bridge,omitempty"`
	Masquerade *InterfaceMasquerade `json:"masquerade,omitempty"`
	SRIOV      *InterfaceSRIOV      `json:"sriov,omitempty"`
	Slirp      *DeprecatedBinding   `json:"slirp,omitempty"`
	Macvtap    *DeprecatedBinding   `json:"macvtap,omitempty"`
	Passt      *DeprecatedBinding   `json:"passt,omitempty"`
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
	Name     string `json:"name,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	Port     int32  `json:"port"`
}

// Network is a network the guest can connect to.
type Network struct {
	Name          string `json:"name"`
	NetworkSource `json:",inline"`
}

// NetworkSource is pod or multus; exactly one.
type NetworkSource struct {
	Pod    *PodNetwork    `json:"pod,omitempty"`
	Multus *MultusNetwork `json:"multus,omitempty"`
}

// PodNetwork is the node's primary network.
type PodNetwork struct {
	VMNetworkCIDR     string `json:"vmNetworkCIDR,omitempty"`
	VMIPv6NetworkCIDR string `json:"vmIPv6NetworkCIDR,omitempty"`
}

// MultusNetwork is a secondary network by name.
type MultusNetwork struct {
	NetworkName string `json:"networkName"`
	Default     bool   `json:"default,omitempty"`
}

// Volume is a named storage source used by a disk.
type Volume struct {
	Name         string `json:"name"`
	VolumeSource `json:",inline"`
}

// VolumeSource is where a volume's data comes from; exactly one.
type VolumeSource struct {
	HostDisk              *HostDisk                          `json:"hostDisk,omitempty"`
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty"`
	CloudInitNoCloud      *CloudInitNoCloudSource            `json:"cloudInitNoCloud,omitempty"`
	CloudInitConfigDrive  *CloudInitConfigDriveSource        `json:"cloudInitConfigDrive,omitempty"`
	ContainerDisk         *ContainerDiskSource               `json:"containerDisk,omitempty"`
	Ephemeral             *EphemeralVolumeSource             `json:"ephemeral,omitempty"`
	EmptyDisk             *EmptyDiskSource                   `json:"emptyDisk,omitempty"`
	DataVolume            *DataVolumeSource                  `json:"dataVolume,omitempty"`
	ConfigMap             *ConfigMapVolumeSource             `json:"configMap,omitempty"`
	Secret                *SecretVolumeSource                `json:"secret,omitempty"`
	ServiceAccount        *ServiceAccountVolumeSource        `json:"serviceAccount,omitempty"`
	DownwardAPI           *DownwardAPIVolumeSource           `json:"downwardAPI,omitempty"`
	Sysprep               *SysprepSource                     `json:"sysprep,omitempty"`
	DownwardMetrics       *DownwardMetricsVolumeSource       `json:"downwardMetrics,omitempty"`
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
	Path     string            `json:"path"`
	Type     HostDiskType      `json:"type"`
	Capacity resource.Quantity `json:"capacity,omitempty"`
	Shared   *bool             `json:"shared,omitempty"`
}

// PersistentVolumeClaimVolumeSource uses a claim by name.
type PersistentVolumeClaimVolumeSource struct {
	ClaimName    string `json:"claimName"`
	ReadOnly     bool   `json:"readOnly,omitempty"`
	Hotpluggable bool   `json:"hotpluggable,omitempty"`
}

// CloudInitNoCloudSource is cloud-init NoCloud data.
type CloudInitNoCloudSource struct {
	UserDataSecretRef    *LocalObjectReference `json:"secretRef,omitempty"`
	UserDataBase64       string                `json:"userDataBase64,omitempty"`
	UserData             string                `json:"userData,omitempty"`
	NetworkDataSecretRef *LocalObjectReference `json:"networkDataSecretRef,omitempty"`
	NetworkDataBase64    string                `json:"networkDataBase64,omitempty"`
	NetworkData          string                `json:"networkData,omitempty"`
}

// CloudInitConfigDriveSource is cloud-init ConfigDrive data.
type CloudInitConfigDriveSource struct {
	UserDataSecretRef    *LocalObjectReference `json:"secretRef,omitempty"`
	UserDataBase64       string                `json:"userDataBase64,omitempty"`
	UserData             string                `json:"userData,omitempty"`
	NetworkDataSecretRef *LocalObjectReference `json:"networkDataSecretRef,omitempty"`
	NetworkDataBase64    string                `json:"networkDataBase64,omitempty"`
	NetworkData          string                `json:"networkData,omitempty"`
}

// ContainerDiskSource is a disk image shipped in a container image.
type ContainerDiskSource struct {
	Image           string     `json:"image"`
	ImagePullSecret string     `json:"imagePullSecret,omitempty"`
	Path            string     `json:"path,omitempty"`
	ImagePullPolicy PullPolicy `json:"imagePullPolicy,omitempty"`
}

// EphemeralVolumeSource is a claim used read-only with a throwaway overlay.
type EphemeralVolumeSource struct {
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty"`
}

// EmptyDiskSource is a blank sparse disk that lives as long as the VMI.
type EmptyDiskSource struct {
	Capacity resource.Quantity `json:"capacity"`
}

// DataVolumeSource uses a DataVolume by name.
type DataVolumeSource struct {
	Name         string `json:"name"`
	Hotpluggable bool   `json:"hotpluggable,omitempty"`
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
	NodeName   string                      `json:"nodeName,omitempty"`
	Reason     string                      `json:"reason,omitempty"`
	Conditions []Condition                 `json:"conditions,omitempty"`
	Phase      VirtualMachineInstancePhase `json:"phase,omitempty"`
	// +listType=atomic
	PhaseTransitionTimestamps []VirtualMachineInstancePhaseTransitionTimestamp `json:"phaseTransitionTimestamps,omitempty"`
	Interfaces                []VirtualMachineInstanceNetworkInterface         `json:"interfaces,omitempty"`
	GuestOSInfo               VirtualMachineInstanceGuestOSInfo                `json:"guestOSInfo,omitempty"`
	MigrationState            *VirtualMachineInstanceMigrationState            `json:"migrationState,omitempty"`
	MigrationMethod           VirtualMachineInstanceMigrationMethod            `json:"migrationMethod,omitempty"`
	MigrationTransport        VirtualMachineInstanceMigrationTransport         `json:"migrationTransport,omitempty"`
	QOSClass                  *PodQOSClass                                     `json:"qosClass,omitempty"`
	EvacuationNodeName        string                                           `json:"evacuationNodeName,omitempty"`
	// ActivePods maps each launcher "pod" UID to its node. In virtkit a pod
	// is a domain on a node: one entry normally, two during a migration.
	ActivePods map[types.UID]string `json:"activePods,omitempty"`
	// +listType=atomic
	VolumeStatus       []VolumeStatus `json:"volumeStatus,omitempty"`
	FSFreezeStatus     string         `json:"fsFreezeStatus,omitempty"`
	RuntimeUser        uint64         `json:"runtimeUser"`
	VSOCKCID           *uint32        `json:"VSOCKCID,omitempty"`
	Machine            *Machine       `json:"machine,omitempty"`
	CurrentCPUTopology *CPUTopology   `json:"currentCPUTopology,omitempty"`
	Memory             *MemoryStatus  `json:"memory,omitempty"`
}

// VirtualMachineInstancePhaseTransitionTimestamp records when a phase began.
type VirtualMachineInstancePhaseTransitionTimestamp struct {
	Phase                    VirtualMachineInstancePhase `json:"phase,omitempty"`
	PhaseTransitionTimestamp metav1.Time                 `json:"phaseTransitionTimestamp,omitempty"`
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
	IP               string   `json:"ipAddress,omitempty"`
	MAC              string   `json:"mac,omitempty"`
	Name             string   `json:"name,omitempty"`
	IPs              []string `json:"ipAddresses,omitempty"`
	PodInterfaceName string   `json:"podInterfaceName,omitempty"`
	InterfaceName    string   `json:"interfaceName,omitempty"`
	InfoSource       string   `json:"infoSource,omitempty"`
	QueueCount       int32    `json:"queueCount,omitempty"`
	LinkState        string   `json:"linkState,omitempty"`
}

// VirtualMachineInstanceGuestOSInfo is what the guest agent reports.
type VirtualMachineInstanceGuestOSInfo struct {
	Name          string `json:"name,omitempty"`
	KernelRelease string `json:"kernelRelease,omitempty"`
	Version       string `json:"version,omitempty"`
	PrettyName    string `json:"prettyName,omitempty"`
	VersionID     string `json:"versionId,omitempty"`
	KernelVersion string `json:"kernelVersion,omitempty"`
	Machine       string `json:"machine,omitempty"`
	ID            string `json:"id,omitempty"`
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
	Name    string      `json:"name"`
	Target  string      `json:"target"`
	Phase   VolumePhase `json:"phase,omitempty"`
	Reason  string      `json:"reason,omitempty"`
	Message string      `json:"message,omitempty"`
	Size    int64       `json:"size,omitempty"`
}

// MemoryStatus is the guest memory as seen by the hypervisor.
type MemoryStatus struct {
	GuestAtBoot    *resource.Quantity `json:"guestAtBoot,omitempty"`
	GuestCurrent   *resource.Quantity `json:"guestCurrent,omitempty"`
	GuestRequested *resource.Quantity `json:"guestRequested,omitempty"`
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
