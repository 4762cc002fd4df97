package virtkit

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SnapshotGroupName is the API group of KubeVirt's snapshot and restore
// kinds.
const SnapshotGroupName = "snapshot.kubevirt.io"

// SnapshotSchemeGroupVersion is the group version of the snapshot kinds.
var SnapshotSchemeGroupVersion = schema.GroupVersion{Group: SnapshotGroupName, Version: "v1beta1"}

// Kind names of the snapshot kinds.
const (
	KindVirtualMachineSnapshot        = "VirtualMachineSnapshot"
	KindVirtualMachineSnapshotContent = "VirtualMachineSnapshotContent"
	KindVirtualMachineRestore         = "VirtualMachineRestore"
)

var (
	_ Object     = (*VirtualMachineSnapshot)(nil)
	_ Object     = (*VirtualMachineSnapshotContent)(nil)
	_ Object     = (*VirtualMachineRestore)(nil)
	_ ObjectList = (*VirtualMachineSnapshotList)(nil)
	_ ObjectList = (*VirtualMachineSnapshotContentList)(nil)
	_ ObjectList = (*VirtualMachineRestoreList)(nil)
)

// TypedLocalObjectReference names an object in the same namespace by API
// group, kind and name.
type TypedLocalObjectReference struct {
	// APIGroup is the group of the referenced kind (kubevirt.io for a
	// VirtualMachine).
	APIGroup *string `json:"apiGroup,omitempty"`
	// Kind is the referenced kind.
	Kind string `json:"kind"`
	// Name is the referenced object's name.
	Name string `json:"name"`
}

// VirtualMachineSnapshot (snapshot.kubevirt.io/v1beta1) asks for a
// point-in-time copy of a VirtualMachine: its spec and the content of its
// volumes.
//
// +kubebuilder:object:root=true
type VirtualMachineSnapshot struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels and annotations.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the VM to snapshot.
	Spec VirtualMachineSnapshotSpec `json:"spec"`
	// Status is the snapshot's progress.
	Status *VirtualMachineSnapshotStatus `json:"status,omitempty"`
}

// VirtualMachineSnapshotList is a list of VirtualMachineSnapshots.
//
// +kubebuilder:object:root=true
type VirtualMachineSnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the snapshots.
	Items []VirtualMachineSnapshot `json:"items"`
}

// DeletionPolicy says what happens to a snapshot's content when the
// snapshot is deleted.
type DeletionPolicy string

// Deletion policies.
const (
	// VirtualMachineSnapshotContentDelete deletes the content (and its
	// volume snapshots) with the snapshot; the default.
	VirtualMachineSnapshotContentDelete DeletionPolicy = "Delete"
	// VirtualMachineSnapshotContentRetain keeps the content.
	VirtualMachineSnapshotContentRetain DeletionPolicy = "Retain"
)

// DefaultSnapshotFailureDeadline is how long a snapshot may take before
// it fails when spec.failureDeadline is not set (KubeVirt's five minutes).
const DefaultSnapshotFailureDeadline = 5 * 60 // seconds

// VirtualMachineSnapshotSpec is what to snapshot.
type VirtualMachineSnapshotSpec struct {
	// Source is the VirtualMachine to snapshot (apiGroup kubevirt.io, kind
	// VirtualMachine).
	Source TypedLocalObjectReference `json:"source"`
	// DeletionPolicy is Delete (default) or Retain.
	DeletionPolicy *DeletionPolicy `json:"deletionPolicy,omitempty"`
	// FailureDeadline is how long the snapshot may take before it fails;
	// zero means no deadline, unset is five minutes.
	FailureDeadline *metav1.Duration `json:"failureDeadline,omitempty"`
}

// VirtualMachineSnapshotPhase is a snapshot's phase.
type VirtualMachineSnapshotPhase string

// Snapshot phases.
const (
	SnapshotPhaseUnset VirtualMachineSnapshotPhase = ""
	SnapshotInProgress VirtualMachineSnapshotPhase = "InProgress"
	SnapshotSucceeded  VirtualMachineSnapshotPhase = "Succeeded"
	SnapshotFailed     VirtualMachineSnapshotPhase = "Failed"
	SnapshotUnknown    VirtualMachineSnapshotPhase = "Unknown"
)

// Indication is a fact about how a snapshot was taken.
type Indication string

// Indications.
const (
	// SnapshotIndicationOnline: the VM was running.
	SnapshotIndicationOnline Indication = "Online"
	// SnapshotIndicationGuestAgent: the guest's filesystems were frozen
	// through its guest agent.
	SnapshotIndicationGuestAgent Indication = "GuestAgent"
	// SnapshotIndicationNoGuestAgent: the VM ran without a connected
	// guest agent, so nothing was frozen (crash-consistent copy).
	SnapshotIndicationNoGuestAgent Indication = "NoGuestAgent"
	// SnapshotIndicationPaused: the VM was paused, so its guest wrote
	// nothing during the copy and was not frozen.
	SnapshotIndicationPaused Indication = "Paused"
)

// Snapshot and restore condition types.
const (
	ConditionProgressing ConditionType = "Progressing"
	ConditionReady       ConditionType = "Ready"
	ConditionFailure     ConditionType = "Failure"
)

// VirtualMachineSnapshotStatus is a snapshot's progress.
type VirtualMachineSnapshotStatus struct {
	// SourceUID is the uid of the snapshotted VM.
	SourceUID *string `json:"sourceUID,omitempty"`
	// VirtualMachineSnapshotContentName names the content holding the
	// copy.
	VirtualMachineSnapshotContentName *string `json:"virtualMachineSnapshotContentName,omitempty"`
	// CreationTime is when the copy was taken.
	CreationTime *metav1.Time `json:"creationTime,omitempty"`
	// Phase is InProgress, Succeeded, Failed or Unknown.
	Phase VirtualMachineSnapshotPhase `json:"phase,omitempty"`
	// ReadyToUse says the snapshot can be restored.
	ReadyToUse *bool `json:"readyToUse,omitempty"`
	// Error is the last error.
	Error *SnapshotError `json:"error,omitempty"`
	// Conditions are Progressing and Ready.
	// +listType=atomic
	Conditions []Condition `json:"conditions,omitempty"`
	// Indications say how the snapshot was taken (Online, GuestAgent,
	// NoGuestAgent, Paused).
	// +listType=set
	Indications []Indication `json:"indications,omitempty"`
	// SnapshotVolumes lists the volumes included in and excluded from
	// the snapshot.
	SnapshotVolumes *SnapshotVolumesLists `json:"snapshotVolumes,omitempty"`
}

// SnapshotVolumesLists are the volumes a snapshot includes and excludes.
type SnapshotVolumesLists struct {
	// IncludedVolumes are copied.
	// +listType=atomic
	IncludedVolumes []string `json:"includedVolumes,omitempty"`
	// ExcludedVolumes are not (volumes without storage to copy).
	// +listType=atomic
	ExcludedVolumes []string `json:"excludedVolumes,omitempty"`
}

// SnapshotError is an error of a snapshot, its content or a volume
// snapshot.
type SnapshotError struct {
	// Time is when it happened.
	Time *metav1.Time `json:"time,omitempty"`
	// Message says what happened.
	Message *string `json:"message,omitempty"`
}

// VirtualMachineSnapshotContent (snapshot.kubevirt.io/v1beta1) is the copy
// a snapshot made: the VM as it was and a backup of each volume.
//
// +kubebuilder:object:root=true
type VirtualMachineSnapshotContent struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels and annotations.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the copied VM and its volume backups.
	Spec VirtualMachineSnapshotContentSpec `json:"spec"`
	// Status says whether the copy is ready.
	Status *VirtualMachineSnapshotContentStatus `json:"status,omitempty"`
}

// VirtualMachineSnapshotContentList is a list of snapshot contents.
//
// +kubebuilder:object:root=true
type VirtualMachineSnapshotContentList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the contents.
	Items []VirtualMachineSnapshotContent `json:"items"`
}

// VirtualMachineSnapshotContentSpec is the copy.
type VirtualMachineSnapshotContentSpec struct {
	// VirtualMachineSnapshotName names the snapshot this content belongs
	// to.
	VirtualMachineSnapshotName *string `json:"virtualMachineSnapshotName,omitempty"`
	// Source is the VM as it was when the snapshot was taken.
	Source SourceSpec `json:"source"`
	// VolumeBackups are the copies of the VM's volumes.
	// +listType=atomic
	VolumeBackups []VolumeBackup `json:"volumeBackups,omitempty"`
}

// SourceSpec holds the copied source object.
type SourceSpec struct {
	// VirtualMachine is the VM's metadata and spec (no status).
	VirtualMachine *VirtualMachine `json:"virtualMachine,omitempty"`
}

// VolumeBackup is the copy of one VM volume.
type VolumeBackup struct {
	// VolumeName is the VM volume's name.
	VolumeName string `json:"volumeName"`
	// PersistentVolumeClaim is the claim the volume used, as it was.
	PersistentVolumeClaim PersistentVolumeClaim `json:"persistentVolumeClaim"`
	// VolumeSnapshotName names the copy of the claim's data.
	VolumeSnapshotName *string `json:"volumeSnapshotName,omitempty"`
}

// PersistentVolumeClaim is a claim's metadata and spec, as a snapshot
// records it.
type PersistentVolumeClaim struct {
	// Metadata is the claim's name, labels and annotations.
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the claim's spec.
	Spec PersistentVolumeClaimSpec `json:"spec,omitempty"`
}

// VirtualMachineSnapshotContentStatus says whether the copy is ready.
type VirtualMachineSnapshotContentStatus struct {
	// CreationTime is when the copy was taken.
	CreationTime *metav1.Time `json:"creationTime,omitempty"`
	// ReadyToUse says every volume snapshot is ready.
	ReadyToUse *bool `json:"readyToUse,omitempty"`
	// Error is the last error.
	Error *SnapshotError `json:"error,omitempty"`
	// VolumeSnapshotStatus is each volume snapshot's state.
	// +listType=atomic
	VolumeSnapshotStatus []VolumeSnapshotStatus `json:"volumeSnapshotStatus,omitempty"`
}

// VolumeSnapshotStatus is one volume snapshot's state.
type VolumeSnapshotStatus struct {
	// VolumeSnapshotName names the volume snapshot.
	VolumeSnapshotName string `json:"volumeSnapshotName"`
	// CreationTime is when it was taken.
	CreationTime *metav1.Time `json:"creationTime,omitempty"`
	// ReadyToUse says it can be restored.
	ReadyToUse *bool `json:"readyToUse,omitempty"`
	// Error is its last error.
	Error *SnapshotError `json:"error,omitempty"`
}

// VirtualMachineRestore (snapshot.kubevirt.io/v1beta1) restores a
// snapshot into the VM it was taken of (which must be stopped) or into a
// new VM.
//
// +kubebuilder:object:root=true
type VirtualMachineRestore struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels and annotations.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the snapshot and the target VM.
	Spec VirtualMachineRestoreSpec `json:"spec"`
	// Status is the restore's progress.
	Status *VirtualMachineRestoreStatus `json:"status,omitempty"`
}

// VirtualMachineRestoreList is a list of restores.
//
// +kubebuilder:object:root=true
type VirtualMachineRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the restores.
	Items []VirtualMachineRestore `json:"items"`
}

// VolumeRestorePolicy says how restored volumes are named.
type VolumeRestorePolicy string

// Volume restore policies.
const (
	// VolumeRestorePolicyRandomizeNames gives restored volumes new names
	// (restore-<restore uid>-<volume>); the default.
	VolumeRestorePolicyRandomizeNames VolumeRestorePolicy = "RandomizeNames"
	// VolumeRestorePolicyInPlace overwrites the volumes with their
	// original names; virtkit does not support it.
	VolumeRestorePolicyInPlace VolumeRestorePolicy = "InPlace"
)

// VirtualMachineRestoreSpec is what to restore where.
type VirtualMachineRestoreSpec struct {
	// Target is the VM to restore into: the snapshot's source VM or a
	// new one.
	Target TypedLocalObjectReference `json:"target"`
	// VirtualMachineSnapshotName names the snapshot to restore.
	VirtualMachineSnapshotName string `json:"virtualMachineSnapshotName"`
	// Patches are JSON patch operations, one per string, applied in order
	// to the restored VM; they may touch only its spec, labels and
	// annotations.
	// +listType=atomic
	Patches []string `json:"patches,omitempty"`
	// VolumeRestorePolicy is RandomizeNames (the default) or InPlace.
	VolumeRestorePolicy *VolumeRestorePolicy `json:"volumeRestorePolicy,omitempty"`
}

// VirtualMachineRestoreStatus is a restore's progress.
type VirtualMachineRestoreStatus struct {
	// Restores are the restored volumes.
	// +listType=atomic
	Restores []VolumeRestore `json:"restores,omitempty"`
	// RestoreTime is when the restore completed.
	RestoreTime *metav1.Time `json:"restoreTime,omitempty"`
	// DeletedDataVolumes are the target VM's DataVolumes the restore
	// replaced and deleted.
	// +listType=atomic
	DeletedDataVolumes []string `json:"deletedDataVolumes,omitempty"`
	// Complete says the restore is done.
	Complete *bool `json:"complete,omitempty"`
	// Conditions are Progressing and Ready.
	// +listType=atomic
	Conditions []Condition `json:"conditions,omitempty"`
}

// VolumeRestore is one restored volume.
type VolumeRestore struct {
	// VolumeName is the VM volume's name.
	VolumeName string `json:"volumeName"`
	// PersistentVolumeClaim is the restored claim.
	PersistentVolumeClaim string `json:"persistentVolumeClaim"`
	// VolumeSnapshotName is the volume snapshot it was restored from.
	VolumeSnapshotName string `json:"volumeSnapshotName"`
	// DataVolumeName is the restored DataVolume, when the claim is one.
	DataVolumeName *string `json:"dataVolumeName,omitempty"`
}

// Annotations and labels of the snapshot machinery (KubeVirt's names).
const (
	// RestoreNameAnnotation on a restored DataVolume names its restore.
	RestoreNameAnnotation = "restore.kubevirt.io/name"
	// LastRestoreUIDAnnotation on a restored VM is the uid of the last
	// restore applied to it.
	LastRestoreUIDAnnotation = "restore.kubevirt.io/lastRestoreUID"
	// SnapshotSourceNameLabel on a snapshot content names the source VM.
	SnapshotSourceNameLabel = "snapshot.kubevirt.io/source-vm-name"
	// SnapshotSourceNamespaceLabel is the source VM's namespace.
	SnapshotSourceNamespaceLabel = "snapshot.kubevirt.io/source-vm-namespace"
	// RestoreSourceVMNameLabel on a restored DataVolume names the VM the
	// snapshot was taken of (kubevirt_vmsnapshot_disks_restored_from_source
	// counts by it).
	RestoreSourceVMNameLabel = "restore.kubevirt.io/source-vm-name"
	// RestoreSourceVMNamespaceLabel is that VM's namespace.
	RestoreSourceVMNamespaceLabel = "restore.kubevirt.io/source-vm-namespace"
	// VolumeSnapshotAnnotation on a restored DataVolume names the volume
	// snapshot its data came from (virtkit's record: no VolumeSnapshot
	// objects exist).
	VolumeSnapshotAnnotation = "virtkit.io/volume-snapshot"
)

// SnapshotContentName is the name of the content of the snapshot with
// this uid (KubeVirt's vmsnapshot-content-<uid>).
func SnapshotContentName(snapshotUID string) string {
	return "vmsnapshot-content-" + snapshotUID
}

// VolumeSnapshotName is the name of the copy of one VM volume a snapshot
// takes (KubeVirt's vmsnapshot-<uid>-volume-<volume>).
func VolumeSnapshotName(snapshotUID, volume string) string {
	return "vmsnapshot-" + snapshotUID + "-volume-" + volume
}

// RestoreVolumeName is the name of a restored volume's DataVolume
// (KubeVirt's restore-<restore uid>-<volume>).
func RestoreVolumeName(restoreUID, volume string) string {
	return "restore-" + restoreUID + "-" + volume
}
