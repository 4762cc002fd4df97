package virtkit

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

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
	// MigratedVolumes are the volumes a volume migration copies: each
	// volume's claim before and after. The node agents copy their data to
	// the destination claims during the migration.
	// +listType=atomic
	MigratedVolumes []StorageMigratedVolumeInfo `json:"migratedVolumes,omitempty"`
}

// StorageMigratedVolumeInfo names a volume a volume migration moves from
// one claim to another.
type StorageMigratedVolumeInfo struct {
	// VolumeName is the volume's name in the VMI spec.
	VolumeName string `json:"volumeName"`
	// SourcePVCInfo is the claim the volume uses before the migration.
	SourcePVCInfo *PersistentVolumeClaimInfo `json:"sourcePVCInfo,omitempty"`
	// DestinationPVCInfo is the claim the volume uses after it.
	DestinationPVCInfo *PersistentVolumeClaimInfo `json:"destinationPVCInfo,omitempty"`
}

// PersistentVolumeClaimInfo identifies a claim taking part in a volume
// migration.
type PersistentVolumeClaimInfo struct {
	// ClaimName is the claim's name (a DataVolume's claim has the
	// DataVolume's name).
	ClaimName string `json:"claimName,omitempty"`
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
	// HotplugVolume is set for a hot-plugged volume.
	HotplugVolume *HotplugVolumeStatus `json:"hotplugVolume,omitempty"`
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

// IsFinal reports whether the phase is Succeeded or Failed.
func (p VirtualMachineInstancePhase) IsFinal() bool {
	return p == Succeeded || p == Failed
}
