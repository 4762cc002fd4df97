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
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels, annotations and
	// the other fields every object has.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the CPU, memory and devices the instance type gives.
	Spec VirtualMachineInstancetypeSpec `json:"spec"`
}

// VirtualMachineInstancetypeList is a list of VirtualMachineInstancetypes.
//
// +kubebuilder:object:root=true
type VirtualMachineInstancetypeList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the instance types.
	Items []VirtualMachineInstancetype `json:"items"`
}

// VirtualMachineClusterInstancetype is a cluster-scoped instance type,
// the kind a VM's spec.instancetype names when it gives no kind.
//
// +kubebuilder:object:root=true
type VirtualMachineClusterInstancetype struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels, annotations and
	// the other fields every object has.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the CPU, memory and devices the instance type gives.
	Spec VirtualMachineInstancetypeSpec `json:"spec"`
}

// VirtualMachineClusterInstancetypeList is a list of
// VirtualMachineClusterInstancetypes.
//
// +kubebuilder:object:root=true
type VirtualMachineClusterInstancetypeList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the cluster instance types.
	Items []VirtualMachineClusterInstancetype `json:"items"`
}

// VirtualMachineInstancetypeSpec is what an instance type gives a VM:
// every field of KubeVirt's instancetype.kubevirt.io/v1beta1, each
// applied to the VM's template as KubeVirt applies it (see
// ApplyInstancetype).
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
	// GPUs are GPUs passed through to the guest.
	// +listType=atomic
	GPUs []GPU `json:"gpus,omitempty"`
	// HostDevices are host devices passed through to the guest.
	// +listType=atomic
	HostDevices []HostDevice `json:"hostDevices,omitempty"`
	// IOThreadsPolicy is how disks share IO threads (shared, auto,
	// supplementalPool); IOThreads sizes the supplemental pool.
	IOThreadsPolicy *IOThreadsPolicy `json:"ioThreadsPolicy,omitempty"`
	// IOThreads configures the I/O threads of the guest's disks.
	IOThreads *DiskIOThreads `json:"ioThreads,omitempty"`
	// LaunchSecurity asks for a confidential guest (SEV, SNP, TDX).
	LaunchSecurity *LaunchSecurity `json:"launchSecurity,omitempty"`
}

// CPUInstancetype is an instance type's vCPUs.
type CPUInstancetype struct {
	// Guest is the number of vCPUs, laid out as the preference's
	// preferred topology says (sockets by default).
	Guest uint32 `json:"guest"`
	// Model is the CPU model the guest gets.
	Model *string `json:"model,omitempty"`
	// DedicatedCPUPlacement pins each vCPU to a host CPU of its own.
	DedicatedCPUPlacement *bool `json:"dedicatedCPUPlacement,omitempty"`
	// IsolateEmulatorThread gives the emulator thread a host CPU of its own.
	IsolateEmulatorThread *bool `json:"isolateEmulatorThread,omitempty"`
	// MaxSockets is the most sockets CPU hot-plug may add up to.
	MaxSockets *uint32 `json:"maxSockets,omitempty"`
	// NUMA maps the guest's NUMA topology onto the host's.
	NUMA *NUMA `json:"numa,omitempty"`
	// Realtime tunes the vCPUs for real-time workloads.
	Realtime *Realtime `json:"realtime,omitempty"`
}

// MemoryInstancetype is an instance type's memory.
type MemoryInstancetype struct {
	// Guest is the memory the guest sees.
	Guest resource.Quantity `json:"guest"`
	// Hugepages backs the guest's memory with huge pages.
	Hugepages *Hugepages `json:"hugepages,omitempty"`
	// OvercommitPercent lowers the memory request below the guest's
	// memory by this percentage (0-100); not with hugepages.
	OvercommitPercent int `json:"overcommitPercent,omitempty"`
	// MaxGuest is the most memory hot-plug may raise the guest's memory to.
	MaxGuest *resource.Quantity `json:"maxGuest,omitempty"`
}

// VirtualMachinePreference is a namespaced preference: defaults a VM's
// template gets where it leaves a field unset.
//
// +kubebuilder:object:root=true
type VirtualMachinePreference struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels, annotations and
	// the other fields every object has.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the defaults the preference gives.
	Spec VirtualMachinePreferenceSpec `json:"spec"`
}

// VirtualMachinePreferenceList is a list of VirtualMachinePreferences.
//
// +kubebuilder:object:root=true
type VirtualMachinePreferenceList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the preferences.
	// +listType=set
	Items []VirtualMachinePreference `json:"items"`
}

// VirtualMachineClusterPreference is a cluster-scoped preference, the
// kind a VM's spec.preference names when it gives no kind.
//
// +kubebuilder:object:root=true
type VirtualMachineClusterPreference struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels, annotations and
	// the other fields every object has.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the defaults the preference gives.
	Spec VirtualMachinePreferenceSpec `json:"spec"`
}

// VirtualMachineClusterPreferenceList is a list of
// VirtualMachineClusterPreferences.
//
// +kubebuilder:object:root=true
type VirtualMachineClusterPreferenceList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the cluster preferences.
	// +listType=set
	Items []VirtualMachineClusterPreference `json:"items"`
}

// VirtualMachinePreferenceSpec is a preference: every field of KubeVirt's
// instancetype.kubevirt.io/v1beta1, each filling only what the VM's
// template leaves unset (see ApplyInstancetype and
// ApplyPreferredStorageClass).
type VirtualMachinePreferenceSpec struct {
	// Clock is the preferred clock configuration.
	Clock *ClockPreferences `json:"clock,omitempty"`
	// CPU is the preferred vCPU topology.
	CPU *CPUPreferences `json:"cpu,omitempty"`
	// Devices are the preferred device models, buses and settings.
	Devices *DevicePreferences `json:"devices,omitempty"`
	// Features are the preferred hypervisor features.
	Features *FeaturePreferences `json:"features,omitempty"`
	// Firmware is the preferred firmware.
	Firmware *FirmwarePreferences `json:"firmware,omitempty"`
	// Machine is the preferred machine type.
	Machine *MachinePreferences `json:"machine,omitempty"`
	// Volumes are the preferred volume settings.
	Volumes *VolumePreferences `json:"volumes,omitempty"`
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
	// PreferredClockOffset is the clock offset used when the VM sets none.
	PreferredClockOffset *ClockOffset `json:"preferredClockOffset,omitempty"`
	// PreferredTimer are the timers used when the VM sets none.
	PreferredTimer *Timer `json:"preferredTimer,omitempty"`
}

// FeaturePreferences are a preference's hypervisor feature defaults.
type FeaturePreferences struct {
	// PreferredAcpi is the ACPI setting used when the VM sets none.
	PreferredAcpi *FeatureState `json:"preferredAcpi,omitempty"`
	// PreferredApic is the APIC setting used when the VM sets none.
	PreferredApic *FeatureAPIC `json:"preferredApic,omitempty"`
	// PreferredHyperv are the Hyper-V enlightenments used when the VM sets
	// none.
	PreferredHyperv *FeatureHyperv `json:"preferredHyperv,omitempty"`
	// PreferredKvm is the KVM setting used when the VM sets none.
	PreferredKvm *FeatureKVM `json:"preferredKvm,omitempty"`
	// PreferredPvspinlock is the paravirtual spinlock setting used when the VM
	// sets none.
	PreferredPvspinlock *FeatureState `json:"preferredPvspinlock,omitempty"`
	// PreferredSmm is the SMM setting used when the VM sets none.
	PreferredSmm *FeatureState `json:"preferredSmm,omitempty"`
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
	// PreferredCPUTopology is how the instance type's vCPUs are laid out:
	// sockets, cores, threads, spread or any.
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
	// Ratio is how many vCPUs go to each unit of the second level of the
	// spread; 2 by default.
	Ratio *uint32 `json:"ratio,omitempty"`
	// Across is what the vCPUs are spread over: SocketsCores,
	// SocketsCoresThreads or CoresThreads.
	Across *string `json:"across,omitempty"`
}

// DevicePreferences are a preference's device defaults.
type DevicePreferences struct {
	// PreferredAutoattachGraphicsDevice is used when the VM does not set
	// autoattachGraphicsDevice.
	PreferredAutoattachGraphicsDevice *bool `json:"preferredAutoattachGraphicsDevice,omitempty"`
	// PreferredAutoattachMemBalloon is used when the VM does not set
	// autoattachMemBalloon.
	PreferredAutoattachMemBalloon *bool `json:"preferredAutoattachMemBalloon,omitempty"`
	// PreferredAutoattachPodInterface is used when the VM does not set
	// autoattachPodInterface.
	PreferredAutoattachPodInterface *bool `json:"preferredAutoattachPodInterface,omitempty"`
	// PreferredAutoattachSerialConsole is used when the VM does not set
	// autoattachSerialConsole.
	PreferredAutoattachSerialConsole *bool `json:"preferredAutoattachSerialConsole,omitempty"`
	// PreferredAutoattachInputDevice is used when the VM does not set
	// autoattachInputDevice.
	PreferredAutoattachInputDevice *bool `json:"preferredAutoattachInputDevice,omitempty"`
	// PreferredDisableHotplug is used when the VM does not set disableHotplug.
	PreferredDisableHotplug *bool `json:"preferredDisableHotplug,omitempty"`
	// PreferredUseVirtioTransitional is used when the VM does not set
	// useVirtioTransitional.
	PreferredUseVirtioTransitional *bool `json:"preferredUseVirtioTransitional,omitempty"`
	// PreferredBlockMultiQueue is used when the VM does not set
	// blockMultiQueue.
	PreferredBlockMultiQueue *bool `json:"preferredBlockMultiQueue,omitempty"`
	// PreferredNetworkInterfaceMultiQueue is used when the VM does not set
	// networkInterfaceMultiqueue.
	PreferredNetworkInterfaceMultiQueue *bool `json:"preferredNetworkInterfaceMultiQueue,omitempty"`
	// PreferredVirtualGPUOptions are the display options of mediated
	// GPUs.
	PreferredVirtualGPUOptions *VGPUOptions `json:"preferredVirtualGPUOptions,omitempty"`
	// PreferredSoundModel is the sound device model used when the VM sets
	// none.
	PreferredSoundModel string `json:"preferredSoundModel,omitempty"`
	// PreferredInputBus is the bus of input devices that set none.
	PreferredInputBus InputBus `json:"preferredInputBus,omitempty"`
	// PreferredInputType is the type of input devices that set none.
	PreferredInputType InputType `json:"preferredInputType,omitempty"`
	// PreferredDiskBlockSize is the block size of disks that set none.
	PreferredDiskBlockSize *BlockSize `json:"preferredDiskBlockSize,omitempty"`
	// PreferredRng adds a random number generator when the VM sets none.
	PreferredRng *Rng `json:"preferredRng,omitempty"`
	// PreferredTPM adds a TPM when the VM sets none.
	PreferredTPM *TPMDevice `json:"preferredTPM,omitempty"`
	// PreferredInterfaceMasquerade binds interfaces on the pod network
	// that name no binding with masquerade.
	PreferredInterfaceMasquerade *InterfaceMasquerade `json:"preferredInterfaceMasquerade,omitempty"`
	// PreferredPanicDeviceModel is the model of panic devices that set none.
	PreferredPanicDeviceModel *PanicDeviceModel `json:"preferredPanicDeviceModel,omitempty"`
	// PreferredVideoType is the video device type used when the VM sets none.
	PreferredVideoType *string `json:"preferredVideoType,omitempty"`
	// PreferredDiskBus is the bus of disks that set none.
	PreferredDiskBus DiskBus `json:"preferredDiskBus,omitempty"`
	// PreferredCdromBus is the bus of CD-ROMs that set none.
	PreferredCdromBus DiskBus `json:"preferredCdromBus,omitempty"`
	// PreferredLunBus is the bus of LUNs that set none.
	PreferredLunBus DiskBus `json:"preferredLunBus,omitempty"`
	// PreferredInterfaceModel is the model of interfaces that set none.
	PreferredInterfaceModel string `json:"preferredInterfaceModel,omitempty"`
	// PreferredDiskCache is the cache mode of virtio disks that set none.
	PreferredDiskCache DriverCache `json:"preferredDiskCache,omitempty"`
	// PreferredDiskIO is the I/O mode of disks that set none.
	PreferredDiskIO DriverIO `json:"preferredDiskIO,omitempty"`
	// PreferredDiskDedicatedIoThread is used for disks that do not set
	// dedicatedIOThread.
	PreferredDiskDedicatedIoThread *bool `json:"preferredDiskDedicatedIoThread,omitempty"`
}

// FirmwarePreferences are a preference's boot firmware defaults.
type FirmwarePreferences struct {
	// PreferredUseBios boots with BIOS when the VM sets no boot loader.
	PreferredUseBios *bool `json:"preferredUseBios,omitempty"`
	// PreferredUseBiosSerial sends BIOS output to the serial console when the
	// VM does not say.
	PreferredUseBiosSerial *bool `json:"preferredUseBiosSerial,omitempty"`
	// PreferredUseEfi boots with EFI when the VM sets no boot loader.
	PreferredUseEfi *bool `json:"preferredUseEfi,omitempty"`
	// PreferredUseSecureBoot enables Secure Boot when the VM does not say.
	PreferredUseSecureBoot *bool `json:"preferredUseSecureBoot,omitempty"`
	// PreferredEfi is the EFI bootloader to use; it takes precedence over
	// the older preferredUseEfi and preferredUseSecureBoot.
	PreferredEfi *EFI `json:"preferredEfi,omitempty"`
}

// MachinePreferences are a preference's machine defaults.
type MachinePreferences struct {
	// PreferredMachineType is the machine type used when the VM sets none.
	PreferredMachineType string `json:"preferredMachineType,omitempty"`
}

// PreferenceRequirements are the least resources a preference needs.
type PreferenceRequirements struct {
	// CPU is the least CPU a VM using the preference must have.
	CPU *CPUPreferenceRequirement `json:"cpu,omitempty"`
	// Memory is the least memory a VM using the preference must have.
	Memory *MemoryPreferenceRequirement `json:"memory,omitempty"`
	// Architecture is the architecture the VM must have.
	Architecture *string `json:"architecture,omitempty"`
}

// CPUPreferenceRequirement is the least number of vCPUs.
type CPUPreferenceRequirement struct {
	// Guest is the least number of vCPUs.
	Guest uint32 `json:"guest"`
}

// MemoryPreferenceRequirement is the least guest memory.
type MemoryPreferenceRequirement struct {
	// Guest is the least guest memory.
	Guest resource.Quantity `json:"guest"`
}

// InstancetypeMatcher is a VM's spec.instancetype: which instance type
// it uses. Kind defaults to VirtualMachineClusterInstancetype.
type InstancetypeMatcher struct {
	// Name names the instance type.
	Name string `json:"name,omitempty"`
	// Kind is VirtualMachineInstancetype or VirtualMachineClusterInstancetype
	// (the default).
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
	// Name names the preference.
	Name string `json:"name,omitempty"`
	// Kind is VirtualMachinePreference or VirtualMachineClusterPreference (the
	// default).
	Kind string `json:"kind,omitempty"`
	// RevisionName names the ControllerRevision holding the preference the VM
	// was first started with.
	RevisionName string `json:"revisionName,omitempty"`
	// InferFromVolume names a template volume (a dataVolume or a
	// persistentVolumeClaim) whose DataVolume's labels name the preference; it
	// is resolved when the VM is applied.
	InferFromVolume string `json:"inferFromVolume,omitempty"`
	// InferFromVolumeFailurePolicy is what happens when the preference cannot
	// be inferred from the volume: Reject or Ignore.
	InferFromVolumeFailurePolicy *InferFromVolumeFailurePolicy `json:"inferFromVolumeFailurePolicy,omitempty"`
}

// InstancetypeStatusRef is status.instancetypeRef or
// status.preferenceRef: the instance type or preference a VM was started
// with and the revision that holds it.
type InstancetypeStatusRef struct {
	// Name is the name of the instance type or preference.
	Name string `json:"name,omitempty"`
	// Kind is the kind of the instance type or preference.
	Kind string `json:"kind,omitempty"`
	// ControllerRevisionRef names the revision holding the copy the VM uses.
	ControllerRevisionRef *ControllerRevisionRef `json:"controllerRevisionRef,omitempty"`
}

// ControllerRevisionRef names a ControllerRevision.
type ControllerRevisionRef struct {
	// Name names the ControllerRevision.
	Name string `json:"name,omitempty"`
}

// ControllerRevision is an immutable snapshot (apps/v1 shape): the VM
// controller keeps in one the instance type or preference a VM was first
// started with, so that later edits of it leave the VM unchanged.
//
// +kubebuilder:object:root=true
type ControllerRevision struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels, annotations and
	// the other fields every object has.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Data is the snapshot: the instance type or preference object.
	Data runtime.RawExtension `json:"data,omitempty"`
	// Revision is the revision's number.
	Revision int64 `json:"revision"`
}

// ControllerRevisionList is a list of ControllerRevisions.
//
// +kubebuilder:object:root=true
type ControllerRevisionList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the revisions.
	Items []ControllerRevision `json:"items"`
}
