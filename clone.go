package virtkit

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CloneGroupName is the API group of KubeVirt's VirtualMachineClone kind.
const CloneGroupName = "clone.kubevirt.io"

// CloneSchemeGroupVersion is the group version of VirtualMachineClone.
var CloneSchemeGroupVersion = schema.GroupVersion{Group: CloneGroupName, Version: "v1beta1"}

// KindVirtualMachineClone is the kind name of VirtualMachineClone.
const KindVirtualMachineClone = "VirtualMachineClone"

var (
	_ Object     = (*VirtualMachineClone)(nil)
	_ ObjectList = (*VirtualMachineCloneList)(nil)
)

// VirtualMachineClone (clone.kubevirt.io/v1beta1) copies a VirtualMachine,
// or the VM a VirtualMachineSnapshot holds, into a new VirtualMachine with
// its own identity (MAC addresses, firmware UUID, SMBIOS serial) and copies
// of its disks. A VM source is snapshotted first; the copy is a restore of
// that snapshot into the target.
//
// +kubebuilder:object:root=true
type VirtualMachineClone struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels and annotations.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the source and target and the changes to make.
	Spec VirtualMachineCloneSpec `json:"spec"`
	// Status is the clone's progress.
	Status VirtualMachineCloneStatus `json:"status,omitempty"`
}

// VirtualMachineCloneList is a list of VirtualMachineClones.
//
// +kubebuilder:object:root=true
type VirtualMachineCloneList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the clones.
	Items []VirtualMachineClone `json:"items"`
}

// VirtualMachineCloneSpec is what to clone into what.
type VirtualMachineCloneSpec struct {
	// Source is the VirtualMachine (apiGroup kubevirt.io) or the
	// VirtualMachineSnapshot (apiGroup snapshot.kubevirt.io) to clone.
	Source *TypedLocalObjectReference `json:"source"`
	// Target is the VirtualMachine to create (apiGroup kubevirt.io); an
	// empty name, or no target, gives <source>-clone-<5 characters>.
	Target *TypedLocalObjectReference `json:"target,omitempty"`
	// AnnotationFilters choose the source's annotations the target gets:
	// a key, or a key prefix ending in '*' ('*' alone matches every key);
	// a filter starting with '!' excludes the keys it matches (exclusions
	// win). Unset copies every annotation.
	// +listType=atomic
	AnnotationFilters []string `json:"annotationFilters,omitempty"`
	// LabelFilters choose the source's labels the target gets, as
	// AnnotationFilters do annotations.
	// +listType=atomic
	LabelFilters []string `json:"labelFilters,omitempty"`
	// Template filters the labels and annotations of the VM's
	// spec.template.metadata.
	Template VirtualMachineCloneTemplateFilters `json:"template,omitempty"`
	// NewMacAddresses maps interface names to the MAC address the
	// target's interface gets; an interface not named gets none (its
	// host assigns one), so no MAC is copied.
	NewMacAddresses map[string]string `json:"newMacAddresses,omitempty"`
	// NewSMBiosSerial is the target's SMBIOS serial; unset gives it a new
	// one (the clone's uid), never the source's.
	NewSMBiosSerial *string `json:"newSMBiosSerial,omitempty"`
	// Patches are JSON patch operations, one per string, applied in order
	// to the target VM after the clone's own changes; they may touch only
	// its spec, labels and annotations.
	// +listType=atomic
	Patches []string `json:"patches,omitempty"`
	// VolumeNamePolicy says how the target's volumes are named; only
	// RandomizeNames (the default: restore-<restore uid>-<volume>) is
	// supported, as in KubeVirt.
	VolumeNamePolicy *VolumeRestorePolicy `json:"volumeNamePolicy,omitempty"`
}

// VirtualMachineCloneTemplateFilters filter the VM template's labels and
// annotations.
type VirtualMachineCloneTemplateFilters struct {
	// AnnotationFilters filter spec.template.metadata.annotations.
	// +listType=atomic
	AnnotationFilters []string `json:"annotationFilters,omitempty"`
	// LabelFilters filter spec.template.metadata.labels.
	// +listType=atomic
	LabelFilters []string `json:"labelFilters,omitempty"`
}

// VirtualMachineClonePhase is a clone's phase.
type VirtualMachineClonePhase string

// Clone phases (KubeVirt's names).
const (
	ClonePhaseUnset         VirtualMachineClonePhase = ""
	CloneSnapshotInProgress VirtualMachineClonePhase = "SnapshotInProgress"
	CloneCreatingTargetVM   VirtualMachineClonePhase = "CreatingTargetVM"
	CloneRestoreInProgress  VirtualMachineClonePhase = "RestoreInProgress"
	CloneSucceeded          VirtualMachineClonePhase = "Succeeded"
	CloneFailed             VirtualMachineClonePhase = "Failed"
	ClonePhaseUnknown       VirtualMachineClonePhase = "Unknown"
)

// VirtualMachineCloneStatus is a clone's progress.
type VirtualMachineCloneStatus struct {
	// SnapshotName names the snapshot being restored (the one the clone
	// took of a VM source, deleted once the clone is done, or the
	// snapshot source).
	SnapshotName *string `json:"snapshotName,omitempty"`
	// RestoreName names the restore making the target.
	RestoreName *string `json:"restoreName,omitempty"`
	// Conditions are Ready and Progressing.
	// +listType=atomic
	Conditions []Condition `json:"conditions,omitempty"`
	// Phase is SnapshotInProgress, RestoreInProgress, CreatingTargetVM,
	// Succeeded, Failed or Unknown.
	Phase VirtualMachineClonePhase `json:"phase,omitempty"`
	// CreationTime is when the clone started.
	CreationTime *metav1.Time `json:"creationTime,omitempty"`
	// TargetName is the target VM's name.
	TargetName *string `json:"targetName,omitempty"`
}
