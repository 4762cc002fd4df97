package virtkit

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true

// MigrationPolicy overrides migration settings for the VMIs it selects:
// migrations.kubevirt.io/v1alpha1, cluster-scoped.
type MigrationPolicy struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels, annotations and
	// the other fields every object has.
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec selects VMIs and sets the migration parameters applied to them.
	Spec MigrationPolicySpec `json:"spec"`
	// Status is the observed state of the policy.
	Status MigrationPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// MigrationPolicyList is a list of migration policies.
type MigrationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the migration policies.
	// +listType=atomic
	Items []MigrationPolicy `json:"items"`
}

// MigrationPolicySpec selects VMIs and sets the fields it overrides; nil
// fields keep the cluster configuration.
type MigrationPolicySpec struct {
	// Selectors choose the VMIs the policy applies to, by their labels and
	// their namespace's labels.
	Selectors *Selectors `json:"selectors"`
	// AllowAutoConverge lets a migration throttle the guest's vCPUs when it
	// does not converge.
	AllowAutoConverge *bool `json:"allowAutoConverge,omitempty"`
	// BandwidthPerMigration caps the network bandwidth one migration may use.
	BandwidthPerMigration *resource.Quantity `json:"bandwidthPerMigration,omitempty"`
	// CompletionTimeoutPerGiB is how many seconds a migration may run per GiB
	// of guest memory before it is cancelled or switched to post-copy.
	CompletionTimeoutPerGiB *int64 `json:"completionTimeoutPerGiB,omitempty"`
	// AllowPostCopy lets a migration that does not converge switch to post-
	// copy.
	AllowPostCopy *bool `json:"allowPostCopy,omitempty"`
	// AllowWorkloadDisruption lets a migration pause the guest to finish when
	// it does not converge.
	AllowWorkloadDisruption *bool `json:"allowWorkloadDisruption,omitempty"`
	// MaxDowntimeMs is the longest pause of the guest, in milliseconds, the
	// final copy may take: 1 to 2000000.
	MaxDowntimeMs *uint64 `json:"maxDowntimeMs,omitempty"`
}

// LabelSelectorMap is a plain label map: every key must be present with an
// equal value (not a metav1.LabelSelector).
type LabelSelectorMap map[string]string

// Selectors picks VMIs by their labels and their namespace's labels.
type Selectors struct {
	// NamespaceSelector is a set of labels the VMI's namespace must all carry.
	NamespaceSelector LabelSelectorMap `json:"namespaceSelector,omitempty"`
	// VirtualMachineInstanceSelector is a set of labels the VMI must all
	// carry.
	VirtualMachineInstanceSelector LabelSelectorMap `json:"virtualMachineInstanceSelector,omitempty"`
}

// MigrationPolicyStatus is empty, as in KubeVirt.
type MigrationPolicyStatus struct{}
