package virtkit

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true

// VirtualMachineInstanceReplicaSet (VMIRS) keeps N VMIs from one template
// running: kubevirt.io/v1, namespaced.
type VirtualMachineInstanceReplicaSet struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels, annotations and
	// the other fields every object has.
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the desired number of VMIs and their template.
	Spec VirtualMachineInstanceReplicaSetSpec `json:"spec"`
	// Status is the observed state, written by the replica set controller.
	Status VirtualMachineInstanceReplicaSetStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// VirtualMachineInstanceReplicaSetList is a list of replica sets.
type VirtualMachineInstanceReplicaSetList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the replica sets.
	Items []VirtualMachineInstanceReplicaSet `json:"items"`
}

// VirtualMachineInstanceReplicaSetSpec is the desired replica count and the
// VMI template.
type VirtualMachineInstanceReplicaSetSpec struct {
	// Replicas is the number of VMIs to keep; 1 by default.
	Replicas *int32 `json:"replicas,omitempty"`
	// Selector matches the labels of the VMIs the replica set owns; it must
	// match the template's labels.
	Selector *metav1.LabelSelector `json:"selector"`
	// Template is the VMI each replica is created from.
	Template *VirtualMachineInstanceTemplateSpec `json:"template"`
	// Paused stops the controller from creating or deleting VMIs.
	Paused bool `json:"paused,omitempty"`
}

// VirtualMachineInstanceReplicaSetStatus is the observed replica count.
type VirtualMachineInstanceReplicaSetStatus struct {
	// Replicas is the number of VMIs the replica set currently owns.
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the number of owned VMIs that are ready.
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Conditions are the replica set's current conditions.
	Conditions []Condition `json:"conditions,omitempty"`
	// LabelSelector is the selector in string form, for the scale subresource.
	LabelSelector string `json:"labelSelector,omitempty"`
}
