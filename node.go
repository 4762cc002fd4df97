package virtkit

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true

// Node is a host that runs VMIs: virtkit.io/v1alpha1, cluster-scoped. It is
// virtkit's own kind (KubeVirt uses Kubernetes nodes); its agent keeps the
// status and heartbeat current. Labels live in metadata.labels.
type Node struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels, annotations and
	// the other fields every object has.
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the node's scheduling configuration.
	Spec NodeSpec `json:"spec,omitempty"`
	// Status is the node's observed state, written by its agent.
	Status NodeStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// NodeList is a list of nodes.
type NodeList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the nodes.
	Items []Node `json:"items"`
}

// NodeSpec is what an operator sets on a node.
type NodeSpec struct {
	// Unschedulable keeps new VMIs (and migration targets) off the node.
	Unschedulable bool `json:"unschedulable,omitempty"`
	// Taints keep VMIs that do not tolerate them off the node.
	// +listType=atomic
	Taints []Taint `json:"taints,omitempty"`
}

// NodeStatus is what the node's agent reports.
type NodeStatus struct {
	// Capacity is the node's total CPU and memory.
	Capacity ResourceList `json:"capacity,omitempty"`
	// Allocatable is the part of the capacity VMIs may request.
	Allocatable ResourceList `json:"allocatable,omitempty"`
	// Conditions are the node's current conditions, such as Ready.
	Conditions []Condition `json:"conditions,omitempty"`
	// LastHeartbeatTime is when the node's agent last reported.
	LastHeartbeatTime *metav1.Time `json:"lastHeartbeatTime,omitempty"`
	// Hypervisor names the backend, e.g. "sim" or "libvirt qemu:///system".
	Hypervisor string `json:"hypervisor,omitempty"`
	// HostUUID is the host's hardware UUID.
	HostUUID string `json:"hostUUID,omitempty"`
}

// Node condition types and reasons.
const (
	NodeReady ConditionType = "Ready"

	NodeReasonAgentReady            = "AgentReady"
	NodeReasonHeartbeatTimeout      = "HeartbeatTimeout"
	NodeReasonHypervisorUnreachable = "HypervisorUnreachable"
	NodeReasonAgentStopped          = "AgentStopped"
)
