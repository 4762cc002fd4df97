package virtkit

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true

// MigrationPolicy overrides migration settings for the VMIs it selects:
// migrations.kubevirt.io/v1alpha1, cluster-scoped.
type MigrationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              MigrationPolicySpec   `json:"spec"`
	Status            MigrationPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// MigrationPolicyList is a list of migration policies.
type MigrationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// +listType=atomic
	Items []MigrationPolicy `json:"items"`
}

// MigrationPolicySpec selects VMIs and sets the fields it overrides; nil
// fields keep the cluster configuration.
type MigrationPolicySpec struct {
	Selectors               *Selectors         `json:"selectors"`
	AllowAutoConverge       *bool              `json:"allowAutoConverge,omitempty"`
	BandwidthPerMigration   *resource.Quantity `json:"bandwidthPerMigration,omitempty"`
	CompletionTimeoutPerGiB *int64             `json:"completionTimeoutPerGiB,omitempty"`
	AllowPostCopy           *bool              `json:"allowPostCopy,omitempty"`
	AllowWorkloadDisruption *bool              `json:"allowWorkloadDisruption,omitempty"`
	// MaxDowntimeMs is 1..2000000.
	MaxDowntimeMs *uint64 `json:"maxDowntimeMs,omitempty"`
}

// LabelSelectorMap is a plain label map: every key must be present with an
// equal value (not a metav1.LabelSelector).
type LabelSelectorMap map[string]string

// Selectors picks VMIs by their labels and their namespace's labels.
type Selectors struct {
	NamespaceSelector              LabelSelectorMap `json:"namespaceSelector,omitempty"`
	VirtualMachineInstanceSelector LabelSelectorMap `json:"virtualMachineInstanceSelector,omitempty"`
}

// MigrationPolicyStatus is empty, as in KubeVirt.
type MigrationPolicyStatus struct{}
