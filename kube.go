package virtkit

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The types in this file mirror the k8s.io/api/core/v1 types KubeVirt embeds
// (scheduling constraints, resources, probes). They keep the Kubernetes JSON
// names and list markers so KubeVirt manifests decode and merge unchanged,
// and hold only the fields virtkit models.

// ResourceName is the name of a resource: "cpu" or "memory".
type ResourceName string

// Resources virtkit accounts for.
const (
	ResourceCPU    ResourceName = "cpu"
	ResourceMemory ResourceName = "memory"
)

// ResourceList maps a resource name to a quantity.
type ResourceList map[ResourceName]resource.Quantity

// ConditionStatus is True, False or Unknown.
type ConditionStatus string

// Condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// PullPolicy says when a container image is pulled.
type PullPolicy string

// Pull policies.
const (
	PullAlways       PullPolicy = "Always"
	PullNever        PullPolicy = "Never"
	PullIfNotPresent PullPolicy = "IfNotPresent"
)

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// Name is the object's name.
	Name string `json:"name,omitempty"`
}

// Affinity groups node affinity and pod (anti-)affinity constraints. In
// virtkit "pods" are VMIs: pod affinity terms select VMIs by label.
type Affinity struct {
	// NodeAffinity places the VMI by node labels.
	NodeAffinity *NodeAffinity `json:"nodeAffinity,omitempty"`
	// PodAffinity places the VMI near VMIs with matching labels.
	PodAffinity *PodAffinity `json:"podAffinity,omitempty"`
	// PodAntiAffinity keeps the VMI away from VMIs with matching labels.
	PodAntiAffinity *PodAntiAffinity `json:"podAntiAffinity,omitempty"`
}

// NodeAffinity restricts (required) and ranks (preferred) nodes.
type NodeAffinity struct {
	// RequiredDuringSchedulingIgnoredDuringExecution is what a node must match
	// for the VMI to be placed there; later label changes do not move the VMI.
	RequiredDuringSchedulingIgnoredDuringExecution *NodeSelector `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	// PreferredDuringSchedulingIgnoredDuringExecution ranks the nodes that
	// match: each matching term adds its weight.
	// +listType=atomic
	PreferredDuringSchedulingIgnoredDuringExecution []PreferredSchedulingTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// NodeSelector is a disjunction of terms: a node matches if any term matches.
type NodeSelector struct {
	// NodeSelectorTerms are alternatives: a node matches if it matches any of
	// them.
	// +listType=atomic
	NodeSelectorTerms []NodeSelectorTerm `json:"nodeSelectorTerms"`
}

// NodeSelectorTerm is a conjunction of requirements.
type NodeSelectorTerm struct {
	// MatchExpressions are requirements on the node's labels, all of which
	// must hold.
	// +listType=atomic
	MatchExpressions []NodeSelectorRequirement `json:"matchExpressions,omitempty"`
	// MatchFields are requirements on the node's fields (metadata.name), all
	// of which must hold.
	// +listType=atomic
	MatchFields []NodeSelectorRequirement `json:"matchFields,omitempty"`
}

// NodeSelectorOperator relates a label key to values.
type NodeSelectorOperator string

// Node selector operators.
const (
	NodeSelectorOpIn           NodeSelectorOperator = "In"
	NodeSelectorOpNotIn        NodeSelectorOperator = "NotIn"
	NodeSelectorOpExists       NodeSelectorOperator = "Exists"
	NodeSelectorOpDoesNotExist NodeSelectorOperator = "DoesNotExist"
	NodeSelectorOpGt           NodeSelectorOperator = "Gt"
	NodeSelectorOpLt           NodeSelectorOperator = "Lt"
)

// NodeSelectorRequirement is one key/operator/values expression.
type NodeSelectorRequirement struct {
	// Key is the label key (or field) the requirement applies to.
	Key string `json:"key"`
	// Operator relates the key to the values: In, NotIn, Exists, DoesNotExist,
	// Gt or Lt.
	Operator NodeSelectorOperator `json:"operator"`
	// Values are the values of In and NotIn, or the single integer of Gt and
	// Lt; empty for Exists and DoesNotExist.
	// +listType=atomic
	Values []string `json:"values,omitempty"`
}

// PreferredSchedulingTerm weights a node selector term (1-100).
type PreferredSchedulingTerm struct {
	// Weight, 1 to 100, is added to the score of a node that matches the
	// preference.
	Weight int32 `json:"weight"`
	// Preference is the term a node should match.
	Preference NodeSelectorTerm `json:"preference"`
}

// PodAffinity attracts a VMI to nodes (topology domains) running VMIs that
// match a label selector.
type PodAffinity struct {
	// RequiredDuringSchedulingIgnoredDuringExecution are terms the VMI's node
	// must satisfy when it is placed.
	// +listType=atomic
	RequiredDuringSchedulingIgnoredDuringExecution []PodAffinityTerm `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	// PreferredDuringSchedulingIgnoredDuringExecution are weighted terms that
	// rank the candidate nodes.
	// +listType=atomic
	PreferredDuringSchedulingIgnoredDuringExecution []WeightedPodAffinityTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// PodAntiAffinity repels a VMI from topology domains running matching VMIs.
type PodAntiAffinity struct {
	// RequiredDuringSchedulingIgnoredDuringExecution are terms the VMI's node
	// must not satisfy when it is placed.
	// +listType=atomic
	RequiredDuringSchedulingIgnoredDuringExecution []PodAffinityTerm `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	// PreferredDuringSchedulingIgnoredDuringExecution are weighted terms that
	// lower the rank of the nodes satisfying them.
	// +listType=atomic
	PreferredDuringSchedulingIgnoredDuringExecution []WeightedPodAffinityTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// PodAffinityTerm selects VMIs by label within a topology domain
// (topologyKey is a node label key, e.g. kubernetes.io/hostname).
type PodAffinityTerm struct {
	// LabelSelector selects the VMIs the term is about.
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// Namespaces are where the selected VMIs are looked for; the VMI's own
	// namespace when empty and no namespaceSelector is given.
	// +listType=atomic
	Namespaces []string `json:"namespaces,omitempty"`
	// TopologyKey is the node label whose value defines a topology domain,
	// such as kubernetes.io/hostname.
	TopologyKey string `json:"topologyKey"`
	// NamespaceSelector selects, by label, further namespaces where VMIs are
	// looked for.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

// WeightedPodAffinityTerm weights a pod affinity term (1-100).
type WeightedPodAffinityTerm struct {
	// Weight, 1 to 100, is added to or taken from the score of a node
	// satisfying the term.
	Weight int32 `json:"weight"`
	// PodAffinityTerm is the term.
	PodAffinityTerm PodAffinityTerm `json:"podAffinityTerm"`
}

// TaintEffect is what a taint does to VMIs that do not tolerate it.
type TaintEffect string

// Taint effects.
const (
	TaintEffectNoSchedule       TaintEffect = "NoSchedule"
	TaintEffectPreferNoSchedule TaintEffect = "PreferNoSchedule"
	TaintEffectNoExecute        TaintEffect = "NoExecute"
)

// Taint marks a node so that only tolerating VMIs go there.
type Taint struct {
	// Key is the taint's key.
	Key string `json:"key"`
	// Value is the taint's value.
	Value string `json:"value,omitempty"`
	// Effect is what the taint does to VMIs that do not tolerate it:
	// NoSchedule, PreferNoSchedule or NoExecute.
	Effect TaintEffect `json:"effect"`
	// TimeAdded is when a NoExecute taint was added.
	TimeAdded *metav1.Time `json:"timeAdded,omitempty"`
}

// TolerationOperator is Exists or Equal.
type TolerationOperator string

// Toleration operators.
const (
	TolerationOpExists TolerationOperator = "Exists"
	TolerationOpEqual  TolerationOperator = "Equal"
)

// Toleration lets a VMI land on a node with a matching taint.
type Toleration struct {
	// Key is the taint key the toleration matches; empty with operator Exists
	// matches every taint.
	Key string `json:"key,omitempty"`
	// Operator is Exists or Equal; Equal by default.
	Operator TolerationOperator `json:"operator,omitempty"`
	// Value is the taint value matched by Equal.
	Value string `json:"value,omitempty"`
	// Effect is the taint effect matched; empty matches all effects.
	Effect TaintEffect `json:"effect,omitempty"`
	// TolerationSeconds is how long a VMI stays on a node after a matching
	// NoExecute taint appears; unset means forever.
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// ExecAction runs a command inside the guest (through the guest agent).
type ExecAction struct {
	// Command is the command line run in the guest; it is not run in a shell.
	// +listType=atomic
	Command []string `json:"command,omitempty"`
}

// HTTPHeader is one header of an HTTP probe.
type HTTPHeader struct {
	// Name is the header's name.
	Name string `json:"name"`
	// Value is the header's value.
	Value string `json:"value"`
}

// HTTPGetAction probes an HTTP endpoint of the guest.
type HTTPGetAction struct {
	// Path is the path requested.
	Path string `json:"path,omitempty"`
	// Port is the port number or name to connect to.
	Port intstr.IntOrString `json:"port"`
	// Host is the host to connect to; the guest's IP address by default.
	Host string `json:"host,omitempty"`
	// Scheme is HTTP or HTTPS; HTTP by default.
	Scheme string `json:"scheme,omitempty"`
	// HTTPHeaders are extra request headers.
	// +listType=atomic
	HTTPHeaders []HTTPHeader `json:"httpHeaders,omitempty"`
}

// TCPSocketAction probes a TCP port of the guest.
type TCPSocketAction struct {
	// Port is the port number or name to connect to.
	Port intstr.IntOrString `json:"port"`
	// Host is the host to connect to; the guest's IP address by default.
	Host string `json:"host,omitempty"`
}

// PodDNSConfig is extra DNS configuration for the guest.
type PodDNSConfig struct {
	// Nameservers are name server addresses added to the guest's
	// configuration.
	// +listType=atomic
	Nameservers []string `json:"nameservers,omitempty"`
	// Searches are DNS search domains added to the guest's configuration.
	// +listType=atomic
	Searches []string `json:"searches,omitempty"`
	// Options are resolver options, merged with those the DNS policy gives.
	// +listType=atomic
	Options []PodDNSConfigOption `json:"options,omitempty"`
}

// PodDNSConfigOption is one resolver option.
type PodDNSConfigOption struct {
	// Name is the option's name.
	Name string `json:"name,omitempty"`
	// Value is the option's value, if it takes one.
	Value *string `json:"value,omitempty"`
}

// DNSPolicy selects how the guest's DNS is configured.
type DNSPolicy string

// DNS policies.
const (
	DNSClusterFirstWithHostNet DNSPolicy = "ClusterFirstWithHostNet"
	DNSClusterFirst            DNSPolicy = "ClusterFirst"
	DNSDefault                 DNSPolicy = "Default"
	DNSNone                    DNSPolicy = "None"
)

// PodQOSClass is the Kubernetes QoS class KubeVirt copies into VMI status.
type PodQOSClass string

// QoS classes.
const (
	PodQOSGuaranteed PodQOSClass = "Guaranteed"
	PodQOSBurstable  PodQOSClass = "Burstable"
	PodQOSBestEffort PodQOSClass = "BestEffort"
)

// PersistentVolumeAccessMode is how a volume may be mounted.
type PersistentVolumeAccessMode string

// Access modes.
const (
	ReadWriteOnce    PersistentVolumeAccessMode = "ReadWriteOnce"
	ReadOnlyMany     PersistentVolumeAccessMode = "ReadOnlyMany"
	ReadWriteMany    PersistentVolumeAccessMode = "ReadWriteMany"
	ReadWriteOncePod PersistentVolumeAccessMode = "ReadWriteOncePod"
)

// PersistentVolumeMode is Filesystem or Block.
type PersistentVolumeMode string

// Volume modes.
const (
	PersistentVolumeBlock      PersistentVolumeMode = "Block"
	PersistentVolumeFilesystem PersistentVolumeMode = "Filesystem"
)

// VolumeResourceRequirements are the storage requests of a claim.
type VolumeResourceRequirements struct {
	// Limits are the most storage the claim may use.
	Limits ResourceList `json:"limits,omitempty"`
	// Requests are the storage the claim needs.
	Requests ResourceList `json:"requests,omitempty"`
}

// PersistentVolumeClaimSpec is the claim part of a DataVolume template.
type PersistentVolumeClaimSpec struct {
	// AccessModes are how the volume may be mounted: ReadWriteOnce,
	// ReadOnlyMany, ReadWriteMany or ReadWriteOncePod.
	// +listType=atomic
	AccessModes []PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	// Selector restricts the volumes the claim may bind to, by label.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// Resources are the claim's storage request and limit.
	Resources VolumeResourceRequirements `json:"resources,omitempty"`
	// VolumeName binds the claim to this volume.
	VolumeName string `json:"volumeName,omitempty"`
	// StorageClassName names the storage class of the claim.
	StorageClassName *string `json:"storageClassName,omitempty"`
	// VolumeMode is Filesystem or Block.
	VolumeMode *PersistentVolumeMode `json:"volumeMode,omitempty"`
}
