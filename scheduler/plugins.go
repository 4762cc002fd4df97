package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/virtkit/virtkit"
)

// Names of the built-in plugins, as kube-scheduler names its own.
const (
	NameNodeReady         = "NodeReady"
	NameNodeUnschedulable = "NodeUnschedulable"
	NameTaintToleration   = "TaintToleration"
	NameNodeAffinity      = "NodeAffinity"
	NameNodeResourcesFit  = "NodeResourcesFit"
	NameInterPodAffinity  = "InterPodAffinity"
	NamePodTopologySpread = "PodTopologySpread"
)

// DefaultProfile is the default scheduler's composition. Filters, in
// order: NodeReady, NodeUnschedulable, TaintToleration, NodeAffinity,
// NodeResourcesFit, NodeDevices, LaunchSecurity, InterPodAffinity. Scores, weight 1 each:
// NodeResourcesFit (least allocated), NodeAffinity and InterPodAffinity
// (preferred terms, normalised to 0..100), TaintToleration (a penalty per
// untolerated PreferNoSchedule taint). opts.HeartbeatTimeout configures
// NodeReady. Each call returns fresh slices the caller may change.
func DefaultProfile(opts Options) Profile {
	fit := &NodeResourcesFit{}
	taints := TaintToleration{}
	nodeAff := NodeAffinity{}
	vmiAff := InterPodAffinity{}
	return Profile{
		Filters: []FilterPlugin{
			NodeReady{HeartbeatTimeout: opts.HeartbeatTimeout},
			NodeUnschedulable{},
			taints,
			nodeAff,
			fit,
			NodeDevices{},
			LaunchSecurity{},
			vmiAff,
		},
		Scores: []ScorePlugin{fit, nodeAff, vmiAff, taints},
	}
}

// Static statuses: they carry no per-node data, so filters share them
// instead of allocating one per failing node.
var (
	statusNotReady         = NewStatus(Unschedulable, reasonNotReady)
	statusUnschedulable    = NewStatus(Unschedulable, reasonUnschedulable)
	statusNodeAffinity     = NewStatus(Unschedulable, reasonNodeAffinity)
	statusAffinity         = NewStatus(Unschedulable, reasonAffinity)
	statusAntiAffinity     = NewStatus(Unschedulable, reasonAntiAffinity)
	statusExistingAnti     = NewStatus(Unschedulable, reasonExistingAnti)
	statusInsufficientCPU  = NewStatus(Unschedulable, fmt.Sprintf(reasonInsufficientFmt, virtkit.ResourceCPU))
	statusInsufficientMem  = NewStatus(Unschedulable, fmt.Sprintf(reasonInsufficientFmt, virtkit.ResourceMemory))
	statusInsufficientBoth = NewStatus(Unschedulable, statusInsufficientCPU.reasons[0], statusInsufficientMem.reasons[0])
)

const defaultHeartbeatTimeout = 5 * time.Minute

// NodeReady filters out nodes whose Ready condition is not True or whose
// last heartbeat (when reported) is older than HeartbeatTimeout.
type NodeReady struct {
	// HeartbeatTimeout: zero means 5 minutes (virt-handler's timeout),
	// negative disables the heartbeat check.
	HeartbeatTimeout time.Duration
}

// Name implements Plugin.
func (NodeReady) Name() string { return NameNodeReady }

// Filter implements FilterPlugin, at the decision's time state.Now().
func (p NodeReady) Filter(_ context.Context, state *CycleState, _ *virtkit.VirtualMachineInstance, n *NodeInfo) *Status {
	if !p.Ready(n.Node, state.Now()) {
		return statusNotReady
	}
	return nil
}

// Ready reports whether the node is ready at now.
func (p NodeReady) Ready(n *virtkit.Node, now time.Time) bool {
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == virtkit.NodeReady {
			ready = c.Status == virtkit.ConditionTrue
		}
	}
	if !ready {
		return false
	}
	timeout := p.HeartbeatTimeout
	if timeout == 0 {
		timeout = defaultHeartbeatTimeout
	}
	if hb := n.Status.LastHeartbeatTime; hb != nil && timeout > 0 {
		return now.Sub(hb.Time) <= timeout
	}
	return true
}

// NodeUnschedulable filters out cordoned nodes (spec.unschedulable) unless
// the VMI tolerates node.kubernetes.io/unschedulable:NoSchedule.
type NodeUnschedulable struct{}

// Name implements Plugin.
func (NodeUnschedulable) Name() string { return NameNodeUnschedulable }

// Filter implements FilterPlugin.
func (NodeUnschedulable) Filter(_ context.Context, _ *CycleState, vmi *virtkit.VirtualMachineInstance, n *NodeInfo) *Status {
	if n.Node.Spec.Unschedulable && !Tolerates(vmi.Spec.Tolerations, virtkit.Taint{Key: TaintNodeUnschedulable, Effect: virtkit.TaintEffectNoSchedule}) {
		return statusUnschedulable
	}
	return nil
}

// TaintToleration filters out nodes with a NoSchedule or NoExecute taint
// the VMI does not tolerate, and scores -50 per untolerated
// PreferNoSchedule taint.
type TaintToleration struct{}

// Name implements Plugin.
func (TaintToleration) Name() string { return NameTaintToleration }

// Filter implements FilterPlugin.
func (TaintToleration) Filter(_ context.Context, _ *CycleState, vmi *virtkit.VirtualMachineInstance, n *NodeInfo) *Status {
	for _, t := range n.Node.Spec.Taints {
		if t.Effect != virtkit.TaintEffectNoSchedule && t.Effect != virtkit.TaintEffectNoExecute {
			continue
		}
		if !Tolerates(vmi.Spec.Tolerations, t) {
			return NewStatus(Unschedulable, fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value))
		}
	}
	return nil
}

// Score implements ScorePlugin.
func (TaintToleration) Score(_ context.Context, _ *CycleState, vmi *virtkit.VirtualMachineInstance, n *NodeInfo) (float64, *Status) {
	penalty := 0.0
	for _, t := range n.Node.Spec.Taints {
		if t.Effect == virtkit.TaintEffectPreferNoSchedule && !Tolerates(vmi.Spec.Tolerations, t) {
			penalty += 50
		}
	}
	return -penalty, nil
}

// NodeAffinity filters on spec.nodeSelector and the required node
// affinity terms, and scores the summed weights of the preferred terms a
// node matches, normalised to 0..100 across the feasible nodes.
type NodeAffinity struct{}

// Name implements Plugin.
func (NodeAffinity) Name() string { return NameNodeAffinity }

// PreFilter implements PreFilterPlugin: it compiles the selectors once and
// rejects a malformed one with an error wrapping ErrInvalidSpec.
func (NodeAffinity) PreFilter(_ context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance) *Status {
	_, err := state.nodeTerms(vmi)
	return AsStatus(err)
}

// Filter implements FilterPlugin.
func (NodeAffinity) Filter(_ context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance, n *NodeInfo) *Status {
	c, err := state.nodeTerms(vmi)
	if err != nil {
		return AsStatus(err)
	}
	if !c.matchesNode(n) {
		return statusNodeAffinity
	}
	return nil
}

// Score implements ScorePlugin.
func (NodeAffinity) Score(_ context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance, n *NodeInfo) (float64, *Status) {
	c, err := state.nodeTerms(vmi)
	if err != nil {
		return 0, AsStatus(err)
	}
	return c.preferredNodeScore(n), nil
}

// NormalizeScores implements ScoreNormalizer (min-max to 0..100).
func (NodeAffinity) NormalizeScores(_ context.Context, _ *CycleState, _ *virtkit.VirtualMachineInstance, scores []NodeScore) *Status {
	NormalizeMinMax(scores)
	return nil
}

// Strategy is how NodeResourcesFit scores a node.
type Strategy int

// Scoring strategies.
const (
	// LeastAllocated prefers the node with the most room left (spreading).
	LeastAllocated Strategy = iota
	// MostAllocated prefers the fullest node that fits (bin packing).
	MostAllocated
)

// NodeResourcesFit filters out nodes whose allocatable cpu or memory,
// minus the requests already there, cannot hold the VMI's requests, and
// scores 0..100 by Strategy over cpu and memory after placement (the mean
// of the two).
type NodeResourcesFit struct {
	Strategy Strategy
}

// Name implements Plugin.
func (*NodeResourcesFit) Name() string { return NameNodeResourcesFit }

// Filter implements FilterPlugin.
func (*NodeResourcesFit) Filter(_ context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance, n *NodeInfo) *Status {
	want := state.requests(vmi)
	cpu := want.MilliCPU > 0 && n.Requested.MilliCPU+want.MilliCPU > n.Allocatable.MilliCPU
	mem := want.Memory > 0 && n.Requested.Memory+want.Memory > n.Allocatable.Memory
	switch {
	case cpu && mem:
		return statusInsufficientBoth
	case cpu:
		return statusInsufficientCPU
	case mem:
		return statusInsufficientMem
	}
	return nil
}

// Score implements ScorePlugin.
func (p *NodeResourcesFit) Score(_ context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance, n *NodeInfo) (float64, *Status) {
	want := state.requests(vmi)
	free := func(capacity, req int64) float64 {
		if capacity <= 0 {
			return 0
		}
		return 100 * float64(capacity-req) / float64(capacity)
	}
	least := (free(n.Allocatable.MilliCPU, n.Requested.MilliCPU+want.MilliCPU) +
		free(n.Allocatable.Memory, n.Requested.Memory+want.Memory)) / 2
	if p.Strategy == MostAllocated {
		return 100 - least, nil
	}
	return least, nil
}

// InterPodAffinity is kube-scheduler's inter-pod affinity for VMIs: it
// filters on the VMI's required affinity and anti-affinity to other VMIs
// (by label, per topology domain) and on the required anti-affinity of the
// VMIs already placed (symmetry), and scores the preferred terms, normalised
// to 0..100 across the feasible nodes.
type InterPodAffinity struct{}

// Name implements Plugin.
func (InterPodAffinity) Name() string { return NameInterPodAffinity }

// PreFilter implements PreFilterPlugin: it compiles the terms once and
// computes the topology domains the placed VMIs occupy.
func (InterPodAffinity) PreFilter(_ context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance) *Status {
	_, _, err := state.vmiTerms(vmi)
	return AsStatus(err)
}

// Filter implements FilterPlugin.
func (InterPodAffinity) Filter(_ context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance, n *NodeInfo) *Status {
	c, iv, err := state.vmiTerms(vmi)
	if err != nil {
		return AsStatus(err)
	}
	switch iv.check(c, n) {
	case "":
		return nil
	case reasonAffinity:
		return statusAffinity
	case reasonAntiAffinity:
		return statusAntiAffinity
	default:
		return statusExistingAnti
	}
}

// Score implements ScorePlugin.
func (InterPodAffinity) Score(_ context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance, n *NodeInfo) (float64, *Status) {
	_, iv, err := state.vmiTerms(vmi)
	if err != nil {
		return 0, AsStatus(err)
	}
	return iv.preferredScore(n), nil
}

// NormalizeScores implements ScoreNormalizer (min-max to 0..100).
func (InterPodAffinity) NormalizeScores(_ context.Context, _ *CycleState, _ *virtkit.VirtualMachineInstance, scores []NodeScore) *Status {
	NormalizeMinMax(scores)
	return nil
}

// compiledFor returns the decision's compiled constraints of vmi.
func (s *CycleState) compiledFor(vmi *virtkit.VirtualMachineInstance) *compiled {
	if s.compiled == nil || s.compiled.vmi != vmi {
		s.compiled = &compiled{vmi: vmi}
		s.nodePart, s.podPart, s.inter = false, false, nil
	}
	return s.compiled
}

// nodeTerms compiles the node selector and node affinity once.
func (s *CycleState) nodeTerms(vmi *virtkit.VirtualMachineInstance) (*compiled, error) {
	c := s.compiledFor(vmi)
	if !s.nodePart {
		if err := compileNode(c); err != nil {
			return nil, err
		}
		s.nodePart = true
	}
	return c, nil
}

// vmiTerms compiles the VMI affinity once and computes its view of the
// placed VMIs.
func (s *CycleState) vmiTerms(vmi *virtkit.VirtualMachineInstance) (*compiled, *interVMI, error) {
	c := s.compiledFor(vmi)
	if !s.podPart {
		if err := compileVMIAffinity(c); err != nil {
			return nil, nil, err
		}
		s.podPart = true
	}
	if s.inter == nil {
		if s.placed == nil {
			s.placed = &Placements{}
		}
		s.inter = s.placed.interVMI(c, s.byName)
	}
	return c, s.inter, nil
}

// requests returns the VMI's requests, computed once per decision.
func (s *CycleState) requests(vmi *virtkit.VirtualMachineInstance) Resources {
	if s.wantFor != vmi {
		s.want, s.wantFor = RequestsOf(vmi), vmi
	}
	return s.want
}
