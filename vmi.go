package virtkit

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +kubebuilder:object:root=true

// VirtualMachineInstance (VMI) is one running (or about to run) guest:
// kubevirt.io/v1, namespaced.
type VirtualMachineInstance struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels, annotations and
	// the other fields every object has.
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the guest's specification. Users may not change it after
	// creation.
	Spec VirtualMachineInstanceSpec `json:"spec"`
	// Status is the guest's observed state, written by the controllers and the
	// node agent.
	Status VirtualMachineInstanceStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// VirtualMachineInstanceList is a list of VMIs.
type VirtualMachineInstanceList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the VMIs.
	Items []VirtualMachineInstance `json:"items"`
}

// EvictionStrategy says what happens to a VMI when its node is drained.
type EvictionStrategy string

// Eviction strategies.
const (
	EvictionStrategyNone                  EvictionStrategy = "None"
	EvictionStrategyLiveMigrate           EvictionStrategy = "LiveMigrate"
	EvictionStrategyLiveMigrateIfPossible EvictionStrategy = "LiveMigrateIfPossible"
	EvictionStrategyExternal              EvictionStrategy = "External"
)

// StartStrategy is how the domain starts; only Paused exists.
type StartStrategy string

// StartStrategyPaused starts the domain paused.
const StartStrategyPaused StartStrategy = "Paused"

// VirtualMachineInstanceSpec is the desired guest.
type VirtualMachineInstanceSpec struct {
	// PriorityClassName names the priority class of the VMI.
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// Domain is the virtual hardware: CPU, memory, firmware, features and
	// devices.
	Domain DomainSpec `json:"domain"`
	// NodeSelector is a set of labels a node must all carry to run the VMI.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Affinity constrains and ranks the nodes the VMI may run on.
	Affinity *Affinity `json:"affinity,omitempty"`
	// SchedulerName names the scheduler that places the VMI; empty means the
	// default one.
	SchedulerName string `json:"schedulerName,omitempty"`
	// Tolerations let the VMI run on nodes with matching taints.
	Tolerations []Toleration `json:"tolerations,omitempty"`
	// EvictionStrategy is what happens to the VMI when its node is drained:
	// None, LiveMigrate, LiveMigrateIfPossible or External.
	EvictionStrategy *EvictionStrategy `json:"evictionStrategy,omitempty"`
	// StartStrategy Paused starts the guest paused.
	StartStrategy *StartStrategy `json:"startStrategy,omitempty"`
	// TerminationGracePeriodSeconds is how long the guest may take to shut
	// down before it is powered off.
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// Volumes are the sources of the VMI's disks and filesystems, each matched
	// to a disk or filesystem by name.
	Volumes []Volume `json:"volumes,omitempty"`
	// LivenessProbe restarts (fails) the VMI when the guest stops answering.
	LivenessProbe *Probe `json:"livenessProbe,omitempty"`
	// ReadinessProbe decides when the VMI is ready.
	ReadinessProbe *Probe `json:"readinessProbe,omitempty"`
	// Hostname is the guest's host name; it defaults to the VMI's name.
	Hostname string `json:"hostname,omitempty"`
	// Subdomain, with the hostname, gives the guest a fully qualified domain
	// name.
	Subdomain string `json:"subdomain,omitempty"`
	// Networks are the networks the guest's interfaces attach to, each matched
	// to an interface by name.
	Networks []Network `json:"networks,omitempty"`
	// DNSConfig adds name servers, search domains and resolver options to the
	// guest's DNS configuration.
	DNSConfig *PodDNSConfig `json:"dnsConfig,omitempty"`
	// DNSPolicy selects how the guest's DNS is configured.
	DNSPolicy DNSPolicy `json:"dnsPolicy,omitempty"`
	// Architecture is amd64, arm64 or s390x; defaulted to amd64.
	Architecture string `json:"architecture,omitempty"`
}

// Probe checks guest health (liveness) or readiness.
type Probe struct {
	Handler `json:",inline"`
	// InitialDelaySeconds is how long after the guest starts the first probe
	// runs.
	InitialDelaySeconds int32 `json:"initialDelaySeconds,omitempty"`
	// TimeoutSeconds is how long one probe may take.
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
	// PeriodSeconds is the time between two probes.
	PeriodSeconds int32 `json:"periodSeconds,omitempty"`
	// SuccessThreshold is how many probes in a row must succeed after a
	// failure.
	SuccessThreshold int32 `json:"successThreshold,omitempty"`
	// FailureThreshold is how many probes in a row must fail before the probe
	// counts as failed.
	FailureThreshold int32 `json:"failureThreshold,omitempty"`
}

// Handler is the probe mechanism; exactly one must be set.
type Handler struct {
	// Exec runs a command in the guest through the guest agent.
	Exec *ExecAction `json:"exec,omitempty"`
	// HTTPGet sends an HTTP GET request to the guest.
	HTTPGet *HTTPGetAction `json:"httpGet,omitempty"`
	// TCPSocket opens a TCP connection to the guest.
	TCPSocket *TCPSocketAction `json:"tcpSocket,omitempty"`
	// GuestAgentPing checks that the guest agent answers.
	GuestAgentPing *GuestAgentPing `json:"guestAgentPing,omitempty"`
}

// GuestAgentPing probes by sending guest-ping to the guest agent.
type GuestAgentPing struct{}

// IsFinal reports whether the VMI has stopped for good (Succeeded or Failed).
func (vmi *VirtualMachineInstance) IsFinal() bool {
	return vmi.Status.Phase.IsFinal()
}

// IsUnprocessed reports whether no controller has acted on the VMI yet.
func (vmi *VirtualMachineInstance) IsUnprocessed() bool {
	return vmi.Status.Phase == VmPhaseUnset || vmi.Status.Phase == Pending
}

// IsScheduling reports whether the VMI is being placed.
func (vmi *VirtualMachineInstance) IsScheduling() bool { return vmi.Status.Phase == Scheduling }

// IsScheduled reports whether the VMI has a node but no running domain yet.
func (vmi *VirtualMachineInstance) IsScheduled() bool { return vmi.Status.Phase == Scheduled }

// IsRunning reports whether the VMI's domain runs (paused counts as running).
func (vmi *VirtualMachineInstance) IsRunning() bool { return vmi.Status.Phase == Running }

// IsMarkedForEviction reports whether the VMI's node is being drained.
func (vmi *VirtualMachineInstance) IsMarkedForEviction() bool {
	return vmi.Status.EvacuationNodeName != ""
}

// IsMigratable reports whether the VMI's LiveMigratable condition is True.
func (vmi *VirtualMachineInstance) IsMigratable() bool {
	return IsConditionTrue(vmi.Status.Conditions, VirtualMachineInstanceIsMigratable)
}

// IsPaused reports whether the VMI's Paused condition is True.
func (vmi *VirtualMachineInstance) IsPaused() bool {
	return IsConditionTrue(vmi.Status.Conditions, VirtualMachineInstancePaused)
}

// IsReady reports whether the VMI's Ready condition is True.
func (vmi *VirtualMachineInstance) IsReady() bool {
	return IsConditionTrue(vmi.Status.Conditions, VirtualMachineInstanceReady)
}

// ShouldStartPaused reports whether spec.startStrategy is Paused.
func (vmi *VirtualMachineInstance) ShouldStartPaused() bool {
	return vmi.Spec.StartStrategy != nil && *vmi.Spec.StartStrategy == StartStrategyPaused
}

// IsMigrating reports whether a migration has started (startTimestamp at or
// before now) and not ended.
func (vmi *VirtualMachineInstance) IsMigrating(now metav1.Time) bool {
	ms := vmi.Status.MigrationState
	return ms != nil && ms.StartTimestamp != nil && !ms.StartTimestamp.After(now.Time) && ms.EndTimestamp == nil
}

// WantsToHaveQOSGuaranteed reports whether requests equal limits for both
// cpu and memory (a resource with only a limit counts as equal), with a
// non-zero cpu.
func (vmi *VirtualMachineInstance) WantsToHaveQOSGuaranteed() bool {
	res := vmi.Spec.Domain.Resources
	equal := func(name ResourceName) bool {
		limit, ok := res.Limits[name]
		if !ok || limit.IsZero() {
			return false
		}
		req, ok := res.Requests[name]
		return !ok || req.Cmp(limit) == 0
	}
	return equal(ResourceCPU) && equal(ResourceMemory)
}

// SetPhase moves the VMI to phase and records the transition time; it
// reports whether the phase changed.
func (vmi *VirtualMachineInstance) SetPhase(phase VirtualMachineInstancePhase, now metav1.Time) bool {
	if vmi.Status.Phase == phase {
		return false
	}
	vmi.Status.Phase = phase
	vmi.Status.PhaseTransitionTimestamps = append(vmi.Status.PhaseTransitionTimestamps,
		VirtualMachineInstancePhaseTransitionTimestamp{Phase: phase, PhaseTransitionTimestamp: now})
	return true
}

// HasReachedPhase reports whether the VMI ever entered phase, according to
// its phaseTransitionTimestamps.
func (vmi *VirtualMachineInstance) HasReachedPhase(phase VirtualMachineInstancePhase) bool {
	for _, t := range vmi.Status.PhaseTransitionTimestamps {
		if t.Phase == phase {
			return true
		}
	}
	return false
}

// SetActivePod records that the domain identified by uid runs on node and
// reports whether status changed.
func (vmi *VirtualMachineInstance) SetActivePod(uid types.UID, node string) bool {
	if cur, ok := vmi.Status.ActivePods[uid]; ok && cur == node {
		return false
	}
	if vmi.Status.ActivePods == nil {
		vmi.Status.ActivePods = map[types.UID]string{}
	}
	vmi.Status.ActivePods[uid] = node
	return true
}

// RemoveActivePod forgets the domain identified by uid and reports whether
// it was recorded.
func (vmi *VirtualMachineInstance) RemoveActivePod(uid types.UID) bool {
	if _, ok := vmi.Status.ActivePods[uid]; !ok {
		return false
	}
	delete(vmi.Status.ActivePods, uid)
	if len(vmi.Status.ActivePods) == 0 {
		vmi.Status.ActivePods = nil
	}
	return true
}

// ActiveNodes returns the distinct nodes in status.activePods, sorted.
func (vmi *VirtualMachineInstance) ActiveNodes() []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range vmi.Status.ActivePods {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
