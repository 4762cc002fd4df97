package virtkit

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true

// VirtualMachineInstanceReplicaSet (VMIRS) keeps N VMIs from one template
// running: kubevirt.io/v1, namespaced.
type VirtualMachineInstanceReplicaSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              VirtualMachineInstanceReplicaSetSpec   `json:"spec"`
	Status            VirtualMachineInstanceReplicaSetStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// VirtualMachineInstanceReplicaSetList is a list of replica sets.
type VirtualMachineInstanceReplicaSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VirtualMachineInstanceReplicaSet `json:"items"`
}

// VirtualMachineInstanceReplicaSetSpec is the desired replica count and the
// VMI template.
type VirtualMachineInstanceReplicaSetSpec struct {
	// Replicas defaults to 1.
	Replicas *int32                              `json:"replicas,omitempty"`
	Selector *metav1.LabelSelector               `json:"selector"`
	Template *VirtualMachineInstanceTemplateSpec `json:"template"`
	Paused   bool                                `json:"paused,omitempty"`
}

// VirtualMachineInstanceReplicaSetStatus is the observed replica count.
type VirtualMachineInstanceReplicaSetStatus struct {
	Replicas      int32       `json:"replicas,omitempty"`
	ReadyReplicas int32       `json:"readyReplicas,omitempty"`
	Conditions    []Condition `json:"conditions,omitempty"`
	LabelSelector string      `json:"labelSelector,omitempty"`
}
