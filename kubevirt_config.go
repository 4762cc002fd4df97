package virtkit

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// KindKubeVirt is the kind of KubeVirt's installation object, which
// holds the cluster's configuration.
const KindKubeVirt = "KubeVirt"

// The name and namespace of the KubeVirt object a cluster reads its
// configuration from, as KubeVirt's operator installs it.
const (
	DefaultKubeVirtNamespace = "kubevirt"
	DefaultKubeVirtName      = "kubevirt"
)

var (
	_ Object     = (*KubeVirt)(nil)
	_ ObjectList = (*KubeVirtList)(nil)
)

// KubeVirt is a cluster's KubeVirt installation (kubevirt.io/v1,
// namespaced): its spec.configuration is the cluster's configuration
// (feature gates, memory overcommit, eviction strategy, migrations, VM
// rollout strategy). virtkit reads the one named kubevirt in namespace
// kubevirt.
//
// +kubebuilder:object:root=true
type KubeVirt struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels, annotations and
	// the other fields every object has.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec holds the cluster's configuration.
	Spec KubeVirtSpec `json:"spec"`
	// Status is the installation's state.
	Status KubeVirtStatus `json:"status,omitempty"`
}

// KubeVirtList is a list of KubeVirt objects.
//
// +kubebuilder:object:root=true
type KubeVirtList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the KubeVirt objects.
	Items []KubeVirt `json:"items"`
}

// KubeVirtSpec is a KubeVirt object's spec. Of KubeVirt's fields virtkit
// models the configuration; the operator's own (image registry and tag,
// workload placement, certificate rotation, uninstall strategy) configure
// an installer virtkit does not have and are refused when decoded.
type KubeVirtSpec struct {
	// Configuration is the cluster's configuration.
	Configuration KubeVirtConfiguration `json:"configuration,omitempty"`
}

// KubeVirtConfiguration is the part of KubeVirt's spec.configuration
// virtkit honours.
type KubeVirtConfiguration struct {
	// DeveloperConfiguration holds the feature gates, memory overcommit and
	// the node selectors of every VMI.
	DeveloperConfiguration *DeveloperConfiguration `json:"developerConfiguration,omitempty"`
	// EvictionStrategy is the eviction strategy of VMIs that set none.
	EvictionStrategy *EvictionStrategy `json:"evictionStrategy,omitempty"`
	// MigrationConfiguration is the cluster's migration defaults, which
	// MigrationPolicies override.
	MigrationConfiguration *MigrationConfiguration `json:"migrations,omitempty"`
	// VMRolloutStrategy is how changes of a running VM's CPU, memory and
	// other live-updatable fields reach its VMI: Stage (the default, at
	// the next restart) or LiveUpdate.
	VMRolloutStrategy *VMRolloutStrategy `json:"vmRolloutStrategy,omitempty"`
	// PermittedHostDevices are the host devices VMIs may be given: node
	// agents advertise the ones their host has as node resources, the
	// scheduler places a VMI only where the devices it names are free.
	PermittedHostDevices *PermittedHostDevices `json:"permittedHostDevices,omitempty"`
	// NetworkConfiguration holds the network binding plugins interfaces
	// may name.
	NetworkConfiguration *NetworkConfiguration `json:"network,omitempty"`
}

// DeveloperConfiguration is KubeVirt's developerConfiguration subset.
type DeveloperConfiguration struct {
	// FeatureGates are the feature gates enabled on top of the default
	// ones.
	// +listType=set
	FeatureGates []string `json:"featureGates,omitempty"`
	// DisabledFeatureGates are default-enabled (beta) feature gates turned
	// off; a generally available gate cannot be turned off.
	// +listType=set
	DisabledFeatureGates []string `json:"disabledFeatureGates,omitempty"`
	// MemoryOvercommit is how many percent of a VMI's memory request its
	// guest gets (100, the default): a VMI that sets no memory request is
	// given one of memory.guest × 100 / memoryOvercommit when it is
	// created, and the scheduler places it by that request.
	MemoryOvercommit int `json:"memoryOvercommit,omitempty"`
	// NodeSelectors are added to the node selector every VMI (and every
	// migration target) is placed with, under the VMI's own (which wins for
	// a key both name), as KubeVirt adds them to the pod's; the stored
	// VMI's spec.nodeSelector is not changed.
	NodeSelectors map[string]string `json:"nodeSelectors,omitempty"`
}

// VMRolloutStrategy is how live-updatable changes of a VM reach its VMI.
type VMRolloutStrategy string

// VM rollout strategies.
const (
	VMRolloutStrategyStage      VMRolloutStrategy = "Stage"
	VMRolloutStrategyLiveUpdate VMRolloutStrategy = "LiveUpdate"
)

// KubeVirtPhase is the phase of a KubeVirt installation.
type KubeVirtPhase string

// KubeVirt phases.
const (
	KubeVirtPhaseDeploying KubeVirtPhase = "Deploying"
	KubeVirtPhaseDeployed  KubeVirtPhase = "Deployed"
)

// KubeVirtStatus is a KubeVirt installation's state.
type KubeVirtStatus struct {
	// Phase is Deploying or Deployed.
	Phase KubeVirtPhase `json:"phase,omitempty"`
	// Conditions are the installation's conditions (Available,
	// Progressing, Degraded).
	// +listType=atomic
	Conditions []KubeVirtCondition `json:"conditions,omitempty"`
}

// KubeVirtCondition is one condition of a KubeVirt installation.
type KubeVirtCondition struct {
	// Type is the condition's type, e.g. Available.
	Type string `json:"type"`
	// Status is True, False or Unknown.
	Status ConditionStatus `json:"status"`
	// LastProbeTime is when the condition was last checked.
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`
	// LastTransitionTime is when the status last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is a machine-readable reason for the status.
	Reason string `json:"reason,omitempty"`
	// Message is a human-readable message about the status.
	Message string `json:"message,omitempty"`
}

// DefaultKubeVirt returns the KubeVirt object a cluster without one
// behaves as, KubeVirt's defaults: named kubevirt in namespace kubevirt,
// with no feature gate beyond the default-enabled ones.
func DefaultKubeVirt() *KubeVirt {
	kv := &KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: DefaultKubeVirtName, Namespace: DefaultKubeVirtNamespace}}
	kv.APIVersion, kv.Kind = SchemeGroupVersion.String(), KindKubeVirt
	return kv
}

// FeatureGates returns the configuration's feature gates.
func (c *KubeVirtConfiguration) FeatureGates() FeatureGates {
	if c == nil || c.DeveloperConfiguration == nil {
		return FeatureGates{}
	}
	d := c.DeveloperConfiguration
	return FeatureGates{Enabled: slices.Clone(d.FeatureGates), Disabled: slices.Clone(d.DisabledFeatureGates)}
}

func validateKubeVirt(kv *KubeVirt) field.ErrorList {
	errs := validateObjectMeta(&kv.ObjectMeta, true, field.NewPath("metadata"))
	cp := field.NewPath("spec", "configuration")
	c := &kv.Spec.Configuration
	if d := c.DeveloperConfiguration; d != nil {
		dp := cp.Child("developerConfiguration")
		if d.MemoryOvercommit < 0 {
			errs = append(errs, field.Invalid(dp.Child("memoryOvercommit"), d.MemoryOvercommit, "must not be negative"))
		}
		for _, k := range sortedKeys(d.NodeSelectors) {
			errs = append(errs, validateLabelPair(k, d.NodeSelectors[k], dp.Child("nodeSelectors").Key(k))...)
		}
		// Deprecated and discontinued gates are accepted, as KubeVirt
		// accepts them with a warning: a deprecated gate is on anyway, a
		// discontinued one off.
	}
	if es := c.EvictionStrategy; es != nil {
		valid := []EvictionStrategy{EvictionStrategyNone, EvictionStrategyLiveMigrate, EvictionStrategyLiveMigrateIfPossible, EvictionStrategyExternal}
		if !slices.Contains(valid, *es) {
			errs = append(errs, field.NotSupported(cp.Child("evictionStrategy"), *es, valid))
		}
	}
	if m := c.MigrationConfiguration; m != nil {
		if v := m.VirtkitMaxCompletionTimeoutPerGiB; v != nil && *v < 0 {
			errs = append(errs, field.Invalid(cp.Child("migrations", "virtkitMaxCompletionTimeoutPerGiB"), *v, "must not be negative (0 turns the completion extension off)"))
		}
	}
	if p := c.PermittedHostDevices; p != nil {
		errs = append(errs, validatePermittedHostDevices(p, cp.Child("permittedHostDevices"))...)
	}
	if rs := c.VMRolloutStrategy; rs != nil {
		valid := []VMRolloutStrategy{VMRolloutStrategyStage, VMRolloutStrategyLiveUpdate}
		if !slices.Contains(valid, *rs) {
			errs = append(errs, field.NotSupported(cp.Child("vmRolloutStrategy"), *rs, valid))
		}
	}
	return errs
}

// ClusterEvictionStrategy is the cluster-wide eviction strategy this
// configuration sets, the one VMIs without spec.evictionStrategy are
// evicted by: its evictionStrategy, or None when it names none.
func (c *KubeVirtConfiguration) ClusterEvictionStrategy() EvictionStrategy {
	if c != nil && c.EvictionStrategy != nil && *c.EvictionStrategy != "" {
		return *c.EvictionStrategy
	}
	return EvictionStrategyNone
}
