package virtkit

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// InstancetypeGroupName is the API group of instancetypes and preferences.
const InstancetypeGroupName = "instancetype.kubevirt.io"

// InstancetypeSchemeGroupVersion is the group version of instancetypes and
// preferences.
var InstancetypeSchemeGroupVersion = schema.GroupVersion{Group: InstancetypeGroupName, Version: "v1beta1"}

// Kind names of instancetypes, preferences and their revisions.
const (
	KindVirtualMachineInstancetype        = "VirtualMachineInstancetype"
	KindVirtualMachineClusterInstancetype = "VirtualMachineClusterInstancetype"
	KindVirtualMachinePreference          = "VirtualMachinePreference"
	KindVirtualMachineClusterPreference   = "VirtualMachineClusterPreference"
	KindControllerRevision                = "ControllerRevision"
)

// AppsSchemeGroupVersion is the group version of ControllerRevision.
var AppsSchemeGroupVersion = schema.GroupVersion{Group: "apps", Version: "v1"}

var (
	_ Object     = (*VirtualMachineInstancetype)(nil)
	_ Object     = (*VirtualMachineClusterInstancetype)(nil)
	_ Object     = (*VirtualMachinePreference)(nil)
	_ Object     = (*VirtualMachineClusterPreference)(nil)
	_ Object     = (*ControllerRevision)(nil)
	_ ObjectList = (*VirtualMachineInstancetypeList)(nil)
	_ ObjectList = (*VirtualMachineClusterInstancetypeList)(nil)
	_ ObjectList = (*VirtualMachinePreferenceList)(nil)
	_ ObjectList = (*VirtualMachineClusterPreferenceList)(nil)
	_ ObjectList = (*ControllerRevisionList)(nil)
)

// VirtualMachineInstancetype is a namespaced instance type: the CPU and
// memory (and a few more resources) a VM gets when it names it in
// spec.instancetype.
//
// +kubebuilder:object:root=true
type VirtualMachineInstancetype struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec VirtualMachineInstancetypeSpec `json:"spec"`
}

// VirtualMachineInstancetypeList is a list of VirtualMachineInstancetypes.
//
// +kubebuilder:object:root=true
type VirtualMachineInstancetypeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []VirtualMachineInstancetype `json:"items"`
}

// VirtualMachineClusterInstancetype is a cluster-scoped instance type,
// the kind a VM's spec.instancetype names when it gives no kind.
//
// +kubebuilder:object:root=true
type VirtualMachineClusterInstancetype struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec VirtualMachineInstancetypeSpec `json:"spec"`
}

// VirtualMachineClusterInstancetypeList is a list of
// VirtualMachineClusterInstancetypes.
//
// +kubebuilder:object:root=true
type VirtualMachineClusterInstancetypeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []VirtualMachineClusterInstancetype `json:"items"`
}

// VirtualMachineInstancetypeSpec is what an instance type gives a VM:
// every field of KubeVirt's instancetype.kubevirt.io/v1beta1. The fields
// whose VMI counterpart virtkit does not model (gpus, hostDevices,
// ioThreadsPolicy other than shared, ioThreads, launchSecurity,
// cpu.numa, cpu.realtime) decode, and expanding an instance type that
// sets one is a NotSupported error naming it.
type VirtualMachineInstancetypeSpec struct {
	// CPU is the guest's vCPUs; required.
	CPU CPUInstancetype `json:"cpu"`
	// Memory is the guest's memory; required.
	Memory MemoryInstancetype `json:"memory"`
	// NodeSelector is merged into the VMI's; a template that sets one
	// conflicts.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// SchedulerName is copied to the VMI; a template that sets one
	// conflicts.
	SchedulerName string `json:"schedulerName,omitempty"`
	// Annotations are added to the VMI where the template has none of
	// the same key.
	Annotations map[string]string `json:"annotations,omitempty"`
	// GPUs and HostDevices are devices passed through to the guest.
	// +listType=atomic
	GPUs []GPU `json:"gpus,omitempty"`
	// +listType=atomic
	HostDevices []HostDevice `json:"hostDevices,omitempty"`
	// IOThreadsPolicy is how disks share IO threads (shared, auto,
	// supplementalPool); IOThreads sizes the supplemental pool.
	IOThreadsPolicy *IOThreadsPolicy `json:"ioThreadsPolicy,omitempty"`
	IOThreads       *DiskIOThreads   `json:"ioThreads,omitempty"`
	// LaunchSecurity asks for a confidential guest (SEV, SNP, TDX).
	LaunchSecurity *LaunchSecurity `json:"launchSecurity,omitempty"`
}

// CPUInstancetype is an instance type's vCPUs.
type CPUInstancetype struct {
	// Guest is the number of vCPUs, laid out as the preference's
	// preferred topology says (sockets by default).
	Guest                 uint32  `json:"guest"`
	Model                 *string `json:"model,omitempty"`
	DedicatedCPUPlacement *bool   `json:"dedicatedCPUPlacement,omitempty"`
	IsolateEmulatorThread *bool   `json:"isolateEmulatorThread,omitempty"`
	MaxSockets            *uint32 `json:"maxSockets,omitempty"`
	// NUMA maps the guest's NUMA topology onto the host's; Realtime tunes
	// the vCPUs for realtime workloads.
	NUMA     *NUMA     `json:"numa,omitempty"`
	Realtime *Realtime `json:"realtime,omitempty"`
}

// MemoryInstancetype is an instance type's memory.
type MemoryInstancetype struct {
	Guest     resource.Quantity `json:"guest"`
	Hugepages *Hugepages        `json:"hugepages,omitempty"`
	// OvercommitPercent lowers the memory request below the guest's
	// memory by this percentage (0-100); not with hugepages.
	OvercommitPercent int                `json:"overcommitPercent,omitempty"`
	MaxGuest          *resource.Quantity `json:"maxGuest,omitempty"`
}

// VirtualMachinePreference is a namespaced preference: defaults a VM's
// template gets where it leaves a field unset.
//
// +kubebuilder:object:root=true
type VirtualMachinePreference struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec VirtualMachinePreferenceSpec `json:"spec"`
}

// VirtualMachinePreferenceList is a list of VirtualMachinePreferences.
//
// +kubebuilder:object:root=true
type VirtualMachinePreferenceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// +listType=set
	Items []VirtualMachinePreference `json:"items"`
}

// VirtualMachineClusterPreference is a cluster-scoped preference, the
// kind a VM's spec.preference names when it gives no kind.
//
// +kubebuilder:object:root=true
type VirtualMachineClusterPreference struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec VirtualMachinePreferenceSpec `json:"spec"`
}

// VirtualMachineClusterPreferenceList is a list of
// VirtualMachineClusterPreferences.
//
// +kubebuilder:object:root=true
type VirtualMachineClusterPreferenceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// +listType=set
	Items []VirtualMachineClusterPreference `json:"items"`
}

// VirtualMachinePreferenceSpec is a preference: every field of KubeVirt's
// instancetype.kubevirt.io/v1beta1. A preferred value whose VMI
// counterpart virtkit does not model decodes, and expanding it into a
// template is an error naming it.
type VirtualMachinePreferenceSpec struct {
	Clock    *ClockPreferences    `json:"clock,omitempty"`
	CPU      *CPUPreferences      `json:"cpu,omitempty"`
	Devices  *DevicePreferences   `json:"devices,omitempty"`
	Features *FeaturePreferences  `json:"features,omitempty"`
	Firmware *FirmwarePreferences `json:"firmware,omitempty"`
	Machine  *MachinePreferences  `json:"machine,omitempty"`
	Volumes  *VolumePreferences   `json:"volumes,omitempty"`
	// PreferredSubdomain is the VMI's subdomain when the template sets
	// none.
	PreferredSubdomain *string `json:"preferredSubdomain,omitempty"`
	// PreferredTerminationGracePeriodSeconds is the VMI's grace period
	// when the template sets none.
	PreferredTerminationGracePeriodSeconds *int64 `json:"preferredTerminationGracePeriodSeconds,omitempty"`
	// Requirements are the least CPU and memory an instance type must
	// give a VM that uses this preference.
	Requirements *PreferenceRequirements `json:"requirements,omitempty"`
	// Annotations are added to the VMI where the template and the
	// instance type have none of the same key.
	Annotations map[string]string `json:"annotations,omitempty"`
	// PreferSpreadSocketToCoreRatio is the older spelling of
	// cpu.spreadOptions.ratio.
	PreferSpreadSocketToCoreRatio uint32 `json:"preferSpreadSocketToCoreRatio,omitempty"`
	// PreferredArchitecture is the VM's spec.template.spec.architecture
	// when it sets none.
	PreferredArchitecture *string `json:"preferredArchitecture,omitempty"`
	// PreferredLaunchSecurity asks for a confidential guest.
	PreferredLaunchSecurity *LaunchSecurity `json:"preferredLaunchSecurity,omitempty"`
}

// VolumePreferences are a preference's volume defaults.
type VolumePreferences struct {
	// PreferredStorageClassName is the storage class of the VM's
	// dataVolumeTemplates that name none.
	PreferredStorageClassName string `json:"preferredStorageClassName,omitempty"`
}

// ClockPreferences are a preference's clock defaults.
type ClockPreferences struct {
	PreferredClockOffset *ClockOffset `json:"preferredClockOffset,omitempty"`
	PreferredTimer       *Timer       `json:"preferredTimer,omitempty"`
}

// FeaturePreferences are a preference's hypervisor feature defaults.
type FeaturePreferences struct {
	PreferredAcpi       *FeatureState  `json:"preferredAcpi,omitempty"`
	PreferredApic       *FeatureAPIC   `json:"preferredApic,omitempty"`
	PreferredHyperv     *FeatureHyperv `json:"preferredHyperv,omitempty"`
	PreferredKvm        *FeatureKVM    `json:"preferredKvm,omitempty"`
	PreferredPvspinlock *FeatureState  `json:"preferredPvspinlock,omitempty"`
	PreferredSmm        *FeatureState  `json:"preferredSmm,omitempty"`
}

// PreferredCPUTopology is how an instance type's vCPUs are laid out.
type PreferredCPUTopology string

// CPU topologies a preference may prefer, in KubeVirt's current and
// earlier spellings.
const (
	PreferSockets           PreferredCPUTopology = "sockets"
	PreferCores             PreferredCPUTopology = "cores"
	PreferThreads           PreferredCPUTopology = "threads"
	PreferSpread            PreferredCPUTopology = "spread"
	PreferAny               PreferredCPUTopology = "any"
	DeprecatedPreferSockets PreferredCPUTopology = "preferSockets"
	DeprecatedPreferCores   PreferredCPUTopology = "preferCores"
	DeprecatedPreferThreads PreferredCPUTopology = "preferThreads"
	DeprecatedPreferSpread  PreferredCPUTopology = "preferSpread"
	DeprecatedPreferAny     PreferredCPUTopology = "preferAny"
)

// CPUPreferences are a preference's CPU defaults.
type CPUPreferences struct {
	PreferredCPUTopology *PreferredCPUTopology `json:"preferredCPUTopology,omitempty"`
	// SpreadOptions set the sockets:cores ratio of the spread topology.
	SpreadOptions *SpreadOptions `json:"spreadOptions,omitempty"`
	// PreferredCPUFeatures are added to the VMI's CPU features that do
	// not name the same feature.
	PreferredCPUFeatures []CPUFeature `json:"preferredCPUFeatures,omitempty"`
}

// SpreadOptions are the options of the spread topology: vCPUs across
// sockets and cores (or cores and threads) in Ratio (default 2).
type SpreadOptions struct {
	Ratio  *uint32 `json:"ratio,omitempty"`
	Across *string `json:"across,omitempty"`
}

// DevicePreferences are a preference's device defaults.
type DevicePreferences struct {
	PreferredAutoattachGraphicsDevice   *bool `json:"preferredAutoattachGraphicsDevice,omitempty"`
	PreferredAutoattachMemBalloon       *bool `json:"preferredAutoattachMemBalloon,omitempty"`
	PreferredAutoattachPodInterface     *bool `json:"preferredAutoattachPodInterface,omitempty"`
	PreferredAutoattachSerialConsole    *bool `json:"preferredAutoattachSerialConsole,omitempty"`
	PreferredAutoattachInputDevice      *bool `json:"preferredAutoattachInputDevice,omitempty"`
	PreferredDisableHotplug             *bool `json:"preferredDisableHotplug,omitempty"`
	PreferredUseVirtioTransitional      *bool `json:"preferredUseVirtioTransitional,omitempty"`
	PreferredBlockMultiQueue            *bool `json:"preferredBlockMultiQueue,omitempty"`
	PreferredNetworkInterfaceMultiQueue *bool `json:"preferredNetworkInterfaceMultiQueue,omitempty"`
	// PreferredVirtualGPUOptions are the display options of mediated
	// GPUs.
	PreferredVirtualGPUOptions *VGPUOptions `json:"preferredVirtualGPUOptions,omitempty"`
	PreferredSoundModel        string       `json:"preferredSoundModel,omitempty"`
	PreferredInputBus          InputBus     `json:"preferredInputBus,omitempty"`
	PreferredInputType         InputType    `json:"preferredInputType,omitempty"`
	PreferredDiskBlockSize     *BlockSize   `json:"preferredDiskBlockSize,omitempty"`
	PreferredRng               *Rng         `json:"preferredRng,omitempty"`
	PreferredTPM               *TPMDevice   `json:"preferredTPM,omitempty"`
	// PreferredInterfaceMasquerade binds interfaces on the pod network
	// that name no binding with masquerade.
	PreferredInterfaceMasquerade *InterfaceMasquerade `json:"preferredInterfaceMasquerade,omitempty"`
	PreferredPanicDeviceModel    *PanicDeviceModel    `json:"preferredPanicDeviceModel,omitempty"`
	PreferredVideoType           *string              `json:"preferredVideoType,omitempty"`
	PreferredDiskBus             DiskBus              `json:"preferredDiskBus,omitempty"`
	PreferredCdromBus            DiskBus              `json:"preferredCdromBus,omitempty"`
	PreferredLunBus              DiskBus              `json:"preferredLunBus,omitempty"`
	PreferredInterfaceModel      string               `json:"preferredInterfaceModel,omitempty"`
	// PreferredDiskCache, PreferredDiskIO and
	// PreferredDiskDedicatedIoThread (virtio disks only) apply to disks.
	PreferredDiskCache             DriverCache `json:"preferredDiskCache,omitempty"`
	PreferredDiskIO                DriverIO    `json:"preferredDiskIO,omitempty"`
	PreferredDiskDedicatedIoThread *bool       `json:"preferredDiskDedicatedIoThread,omitempty"`
}

// FirmwarePreferences are a preference's boot firmware defaults.
type FirmwarePreferences struct {
	PreferredUseBios       *bool `json:"preferredUseBios,omitempty"`
	PreferredUseBiosSerial *bool `json:"preferredUseBiosSerial,omitempty"`
	PreferredUseEfi        *bool `json:"preferredUseEfi,omitempty"`
	PreferredUseSecureBoot *bool `json:"preferredUseSecureBoot,omitempty"`
	// PreferredEfi is the EFI bootloader to use; it takes precedence over
	// the older preferredUseEfi and preferredUseSecureBoot.
	PreferredEfi *EFI `json:"preferredEfi,omitempty"`
}

// MachinePreferences are a preference's machine defaults.
type MachinePreferences struct {
	PreferredMachineType string `json:"preferredMachineType,omitempty"`
}

// PreferenceRequirements are the least resources a preference needs.
type PreferenceRequirements struct {
	CPU    *CPUPreferenceRequirement    `json:"cpu,omitempty"`
	Memory *MemoryPreferenceRequirement `json:"memory,omitempty"`
	// Architecture is the architecture the VM must have.
	Architecture *string `json:"architecture,omitempty"`
}

// CPUPreferenceRequirement is the least number of vCPUs.
type CPUPreferenceRequirement struct {
	Guest uint32 `json:"guest"`
}

// MemoryPreferenceRequirement is the least guest memory.
type MemoryPreferenceRequirement struct {
	Guest resource.Quantity `json:"guest"`
}

// InstancetypeMatcher is a VM's spec.instancetype: which instance type
// it uses. Kind defaults to VirtualMachineClusterInstancetype.
type InstancetypeMatcher struct {
	Name string `json:"name,omitempty"`
	Kind string `json:"kind,omitempty"`
	// RevisionName names the ControllerRevision that holds the instance
	// type the VM was first started with.
	RevisionName string `json:"revisionName,omitempty"`
	// InferFromVolume names a template volume (a dataVolume or a
	// persistentVolumeClaim) whose DataVolume's labels
	// (DefaultInstancetypeLabel, DefaultInstancetypeKindLabel) name the
	// instance type; it is resolved when the VM is applied.
	InferFromVolume string `json:"inferFromVolume,omitempty"`
	// InferFromVolumeFailurePolicy is Reject (the default: a VM whose
	// volume names no instance type is refused) or Ignore (the matcher is
	// dropped).
	InferFromVolumeFailurePolicy *InferFromVolumeFailurePolicy `json:"inferFromVolumeFailurePolicy,omitempty"`
}

// InferFromVolumeFailurePolicy is what a failed inference does.
type InferFromVolumeFailurePolicy string

// Inference failure policies.
const (
	RejectInferFromVolumeFailure InferFromVolumeFailurePolicy = "Reject"
	IgnoreInferFromVolumeFailure InferFromVolumeFailurePolicy = "Ignore"
)

// Labels on a DataVolume (or the claim it fills) that name the instance
// type and preference a VM inferring from it uses, as KubeVirt reads them.
const (
	DefaultInstancetypeLabel     = "instancetype.kubevirt.io/default-instancetype"
	DefaultInstancetypeKindLabel = "instancetype.kubevirt.io/default-instancetype-kind"
	DefaultPreferenceLabel       = "instancetype.kubevirt.io/default-preference"
	DefaultPreferenceKindLabel   = "instancetype.kubevirt.io/default-preference-kind"
)

// PreferenceMatcher is a VM's spec.preference: which preference it uses.
// Kind defaults to VirtualMachineClusterPreference.
type PreferenceMatcher struct {
	Name         string `json:"name,omitempty"`
	Kind         string `json:"kind,omitempty"`
	RevisionName string `json:"revisionName,omitempty"`
	// InferFromVolume and InferFromVolumeFailurePolicy: as for
	// InstancetypeMatcher, with DefaultPreferenceLabel.
	InferFromVolume              string                        `json:"inferFromVolume,omitempty"`
	InferFromVolumeFailurePolicy *InferFromVolumeFailurePolicy `json:"inferFromVolumeFailurePolicy,omitempty"`
}

// InstancetypeStatusRef is status.instancetypeRef or
// status.preferenceRef: the instance type or preference a VM was started
// with and the revision that holds it.
type InstancetypeStatusRef struct {
	Name                  string                 `json:"name,omitempty"`
	Kind                  string                 `json:"kind,omitempty"`
	ControllerRevisionRef *ControllerRevisionRef `json:"controllerRevisionRef,omitempty"`
}

// ControllerRevisionRef names a ControllerRevision.
type ControllerRevisionRef struct {
	Name string `json:"name,omitempty"`
}

// ControllerRevision is an immutable snapshot (apps/v1 shape): the VM
// controller keeps in one the instance type or preference a VM was first
// started with, so that later edits of it leave the VM unchanged.
//
// +kubebuilder:object:root=true
type ControllerRevision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Data is the snapshot: the instance type or preference object.
	Data     runtime.RawExtension `json:"data,omitempty"`
	Revision int64                `json:"revision"`
}

// ControllerRevisionList is a list of ControllerRevisions.
//
// +kubebuilder:object:root=true
type ControllerRevisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ControllerRevision `json:"items"`
}
