package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
)

// ErrUnschedulable is wrapped by the error Schedule returns when no node
// fits; the message says why, per node.
var ErrUnschedulable = errors.New("unschedulable")

// ErrInvalidSpec is wrapped when the VMI's scheduling constraints cannot be
// evaluated (a malformed selector); the message names the field.
var ErrInvalidSpec = errors.New("invalid scheduling constraints")

// Well-known keys.
const (
	// LabelHostname is the topology key that means "the same node".
	LabelHostname = "kubernetes.io/hostname"
	// TaintNodeUnschedulable is the taint a VMI must tolerate to land on a
	// node with spec.unschedulable set.
	TaintNodeUnschedulable = "node.kubernetes.io/unschedulable"
)

// Scheduler chooses a node for a VMI.
//
// nodes are all known nodes; placed are the VMIs that may hold resources
// (see [NodesHeldBy]; others and vmi itself are ignored). Schedule must not
// modify its arguments and may be called concurrently. It returns the chosen
// node's name, or an error wrapping ErrUnschedulable when none fits (the
// caller then retries with backoff), or any other error for bad input.
type Scheduler interface {
	Schedule(ctx context.Context, vmi *virtkit.VirtualMachineInstance, nodes []virtkit.Node, placed []*virtkit.VirtualMachineInstance) (string, error)
}

// Func adapts a function to a Scheduler.
type Func func(ctx context.Context, vmi *virtkit.VirtualMachineInstance, nodes []virtkit.Node, placed []*virtkit.VirtualMachineInstance) (string, error)

// Schedule calls f.
func (f Func) Schedule(ctx context.Context, vmi *virtkit.VirtualMachineInstance, nodes []virtkit.Node, placed []*virtkit.VirtualMachineInstance) (string, error) {
	return f(ctx, vmi, nodes, placed)
}

var _ Scheduler = Func(nil)

// Options configures [New] and [NewFramework]. The zero value is the
// default.
type Options struct {
	// Clock is the time heartbeats are judged by; nil is the real clock.
	Clock clock.PassiveClock
	// HeartbeatTimeout marks a node not ready when its last heartbeat is
	// older; zero means 5 minutes (virt-handler's timeout), negative
	// disables the check.
	HeartbeatTimeout time.Duration
}

// Failure reasons, worded like kube-scheduler's.
const (
	reasonNotReady        = "node(s) were not ready"
	reasonUnschedulable   = "node(s) were unschedulable"
	reasonNodeAffinity    = "node(s) didn't match Pod's node affinity/selector"
	reasonAffinity        = "node(s) didn't match pod affinity rules"
	reasonAntiAffinity    = "node(s) didn't match pod anti-affinity rules"
	reasonExistingAnti    = "node(s) didn't satisfy existing pods anti-affinity rules"
	reasonInsufficientFmt = "Insufficient %s"
)

// UnschedulableError says why no node fits. It matches ErrUnschedulable.
type UnschedulableError struct {
	// Nodes is the number of nodes considered.
	Nodes int
	// Reasons counts nodes per failure reason.
	Reasons map[string]int
}

func (e *UnschedulableError) Error() string {
	if e.Nodes == 0 {
		return "0/0 nodes are available: no nodes registered."
	}
	parts := make([]string, 0, len(e.Reasons))
	for r, n := range e.Reasons {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	return fmt.Sprintf("0/%d nodes are available: %s.", e.Nodes, strings.Join(parts, ", "))
}

// Is makes errors.Is(err, ErrUnschedulable) true.
func (e *UnschedulableError) Is(target error) bool { return target == ErrUnschedulable }

// Tolerates reports whether any toleration matches the taint (kube rules:
// empty key with Exists matches every key; empty effect matches every
// effect; operator defaults to Equal).
func Tolerates(tols []virtkit.Toleration, t virtkit.Taint) bool {
	for _, tol := range tols {
		if tol.Effect != "" && tol.Effect != t.Effect {
			continue
		}
		switch tol.Operator {
		case virtkit.TolerationOpExists:
			if tol.Key == "" || tol.Key == t.Key {
				return true
			}
		case virtkit.TolerationOpEqual, "":
			if tol.Key == t.Key && tol.Value == t.Value {
				return true
			}
		}
	}
	return false
}

// Requests returns what vmi reserves on its node: cpu from
// resources.requests (else limits), memory from resources.requests (else
// limits, else memory.guest).
func Requests(vmi *virtkit.VirtualMachineInstance) virtkit.ResourceList {
	r := RequestsOf(vmi)
	out := virtkit.ResourceList{}
	if r.MilliCPU > 0 {
		out[virtkit.ResourceCPU] = *resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI)
	}
	if r.Memory > 0 {
		out[virtkit.ResourceMemory] = *resource.NewQuantity(r.Memory, resource.BinarySI)
	}
	return out
}

// RequestsOf is Requests in millicores and bytes.
func RequestsOf(vmi *virtkit.VirtualMachineInstance) Resources {
	res := vmi.Spec.Domain.Resources
	var r Resources
	if q, ok := res.Requests[virtkit.ResourceCPU]; ok {
		r.MilliCPU = q.MilliValue()
	} else if q, ok := res.Limits[virtkit.ResourceCPU]; ok {
		r.MilliCPU = q.MilliValue()
	}
	if q, ok := res.Requests[virtkit.ResourceMemory]; ok {
		r.Memory = q.Value()
	} else if q, ok := res.Limits[virtkit.ResourceMemory]; ok {
		r.Memory = q.Value()
	} else if m := vmi.Spec.Domain.Memory; m != nil && m.Guest != nil {
		r.Memory = m.Guest.Value()
	}
	return r
}

// quantity returns a resource of a list in millicores (cpu) or bytes.
func quantity(l virtkit.ResourceList, name virtkit.ResourceName, milli bool) int64 {
	q, ok := l[name]
	if !ok {
		return 0
	}
	if milli {
		return q.MilliValue()
	}
	return q.Value()
}

// compiled holds the VMI's selectors parsed once per Schedule call.
type compiled struct {
	vmi          *virtkit.VirtualMachineInstance
	nodeSelector labels.Selector
	required     []nodeTerm // any must match; nil = no constraint
	preferred    []weightedNodeTerm
	affinity     []vmiTerm
	anti         []vmiTerm
	prefAffinity []weightedVMITerm
	prefAnti     []weightedVMITerm
}

type nodeTerm struct {
	labels labels.Selector
	fields []virtkit.NodeSelectorRequirement // only metadata.name
}

type weightedNodeTerm struct {
	weight int32
	term   nodeTerm
}

type vmiTerm struct {
	selector    labels.Selector
	namespaces  map[string]bool // nil = all namespaces
	topologyKey string
}

type weightedVMITerm struct {
	weight int32
	term   vmiTerm
}

// compileNode compiles spec.nodeSelector and the node affinity into c.
func compileNode(c *compiled) error {
	vmi := c.vmi
	c.nodeSelector = labels.SelectorFromSet(vmi.Spec.NodeSelector)
	aff := vmi.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil {
		return nil
	}
	base := "spec.affinity"
	na := aff.NodeAffinity
	if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
		path := base + ".nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
		c.required = []nodeTerm{}
		for i, t := range req.NodeSelectorTerms {
			nt, err := compileNodeTerm(t, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return err
			}
			c.required = append(c.required, nt)
		}
	}
	for i, p := range na.PreferredDuringSchedulingIgnoredDuringExecution {
		nt, err := compileNodeTerm(p.Preference, fmt.Sprintf("%s.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[%d].preference", base, i))
		if err != nil {
			return err
		}
		c.preferred = append(c.preferred, weightedNodeTerm{weight: p.Weight, term: nt})
	}
	return nil
}

// compileVMIAffinity compiles the VMI (pod) affinity and anti-affinity
// into c.
func compileVMIAffinity(c *compiled) error {
	vmi := c.vmi
	aff := vmi.Spec.Affinity
	if aff == nil {
		return nil
	}
	base := "spec.affinity"
	var err error
	if pa := aff.PodAffinity; pa != nil {
		path := base + ".podAffinity"
		if c.affinity, err = compileVMITerms(vmi, pa.RequiredDuringSchedulingIgnoredDuringExecution, path+".requiredDuringSchedulingIgnoredDuringExecution"); err != nil {
			return err
		}
		if c.prefAffinity, err = compileWeighted(vmi, pa.PreferredDuringSchedulingIgnoredDuringExecution, path+".preferredDuringSchedulingIgnoredDuringExecution"); err != nil {
			return err
		}
	}
	if pa := aff.PodAntiAffinity; pa != nil {
		path := base + ".podAntiAffinity"
		if c.anti, err = compileVMITerms(vmi, pa.RequiredDuringSchedulingIgnoredDuringExecution, path+".requiredDuringSchedulingIgnoredDuringExecution"); err != nil {
			return err
		}
		if c.prefAnti, err = compileWeighted(vmi, pa.PreferredDuringSchedulingIgnoredDuringExecution, path+".preferredDuringSchedulingIgnoredDuringExecution"); err != nil {
			return err
		}
	}
	return nil
}

var nodeOps = map[virtkit.NodeSelectorOperator]selection.Operator{
	virtkit.NodeSelectorOpIn:           selection.In,
	virtkit.NodeSelectorOpNotIn:        selection.NotIn,
	virtkit.NodeSelectorOpExists:       selection.Exists,
	virtkit.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	virtkit.NodeSelectorOpGt:           selection.GreaterThan,
	virtkit.NodeSelectorOpLt:           selection.LessThan,
}

func compileNodeTerm(t virtkit.NodeSelectorTerm, path string) (nodeTerm, error) {
	sel := labels.NewSelector()
	for i, e := range t.MatchExpressions {
		op, ok := nodeOps[e.Operator]
		if !ok {
			return nodeTerm{}, fmt.Errorf("%w: %s.matchExpressions[%d].operator: unsupported value %q", ErrInvalidSpec, path, i, e.Operator)
		}
		req, err := labels.NewRequirement(e.Key, op, e.Values)
		if err != nil {
			return nodeTerm{}, fmt.Errorf("%w: %s.matchExpressions[%d]: %w", ErrInvalidSpec, path, i, err)
		}
		sel = sel.Add(*req)
	}
	for i, f := range t.MatchFields {
		if f.Key != "metadata.name" {
			return nodeTerm{}, fmt.Errorf("%w: %s.matchFields[%d].key: only metadata.name is supported, got %q", ErrInvalidSpec, path, i, f.Key)
		}
		if f.Operator != virtkit.NodeSelectorOpIn && f.Operator != virtkit.NodeSelectorOpNotIn {
			return nodeTerm{}, fmt.Errorf("%w: %s.matchFields[%d].operator: must be In or NotIn, got %q", ErrInvalidSpec, path, i, f.Operator)
		}
	}
	return nodeTerm{labels: sel, fields: t.MatchFields}, nil
}

func (t nodeTerm) matches(n *NodeInfo) bool {
	// An empty term matches nothing (kube semantics).
	if t.labels.Empty() && len(t.fields) == 0 {
		return false
	}
	if !t.labels.Matches(labels.Set(n.Node.Labels)) {
		return false
	}
	for _, f := range t.fields {
		in := false
		for _, v := range f.Values {
			if v == n.Node.Name {
				in = true
			}
		}
		if in != (f.Operator == virtkit.NodeSelectorOpIn) {
			return false
		}
	}
	return true
}

func (c *compiled) matchesNode(n *NodeInfo) bool {
	if !c.nodeSelector.Matches(labels.Set(n.Node.Labels)) {
		return false
	}
	if c.required == nil {
		return true
	}
	for _, t := range c.required {
		if t.matches(n) {
			return true
		}
	}
	return false
}

func (c *compiled) preferredNodeScore(n *NodeInfo) float64 {
	s := 0.0
	for _, p := range c.preferred {
		if p.term.matches(n) {
			s += float64(p.weight)
		}
	}
	return s
}

func compileVMITerms(vmi *virtkit.VirtualMachineInstance, terms []virtkit.PodAffinityTerm, path string) ([]vmiTerm, error) {
	var out []vmiTerm
	for i, t := range terms {
		vt, err := compileVMITerm(vmi.Namespace, t, fmt.Sprintf("%s[%d]", path, i))
		if err != nil {
			return nil, err
		}
		out = append(out, vt)
	}
	return out, nil
}

func compileWeighted(vmi *virtkit.VirtualMachineInstance, terms []virtkit.WeightedPodAffinityTerm, path string) ([]weightedVMITerm, error) {
	var out []weightedVMITerm
	for i, t := range terms {
		vt, err := compileVMITerm(vmi.Namespace, t.PodAffinityTerm, fmt.Sprintf("%s[%d].podAffinityTerm", path, i))
		if err != nil {
			return nil, err
		}
		out = append(out, weightedVMITerm{weight: t.Weight, term: vt})
	}
	return out, nil
}

func compileVMITerm(ns string, t virtkit.PodAffinityTerm, path string) (vmiTerm, error) {
	if t.TopologyKey == "" {
		return vmiTerm{}, fmt.Errorf("%w: %s.topologyKey: required", ErrInvalidSpec, path)
	}
	sel := labels.Nothing()
	if t.LabelSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
		if err != nil {
			return vmiTerm{}, fmt.Errorf("%w: %s.labelSelector: %w", ErrInvalidSpec, path, err)
		}
		sel = s
	}
	vt := vmiTerm{selector: sel, topologyKey: t.TopologyKey}
	switch {
	case t.NamespaceSelector != nil && len(t.NamespaceSelector.MatchLabels) == 0 && len(t.NamespaceSelector.MatchExpressions) == 0:
		// An empty namespace selector selects every namespace.
	case t.NamespaceSelector != nil:
		// virtkit has no Namespace objects whose labels could be matched.
		return vmiTerm{}, fmt.Errorf("%w: %s.namespaceSelector: only the empty selector (all namespaces) is supported", ErrInvalidSpec, path)
	default:
		vt.namespaces = map[string]bool{}
		for _, n := range t.Namespaces {
			vt.namespaces[n] = true
		}
		if len(vt.namespaces) == 0 {
			vt.namespaces[ns] = true
		}
	}
	return vt, nil
}

// selects reports whether the term selects the VMI.
func (t vmiTerm) selects(v *virtkit.VirtualMachineInstance) bool {
	return t.selectsLabels(v.Namespace, v.Labels)
}

// selectsLabels reports whether the term selects a VMI of that namespace
// with those labels.
func (t vmiTerm) selectsLabels(namespace string, l map[string]string) bool {
	if t.namespaces != nil && !t.namespaces[namespace] {
		return false
	}
	return t.selector.Matches(labels.Set(l))
}

// domain returns the node's value for a topology key.
func domain(n *NodeInfo, key string) (string, bool) {
	if v, ok := n.Node.Labels[key]; ok {
		return v, true
	}
	if key == LabelHostname {
		return n.Node.Name, true
	}
	return "", false
}

// allocatableOf is status.allocatable, falling back to status.capacity,
// in millicores and bytes.
func allocatableOf(n *virtkit.Node) Resources {
	l := n.Status.Allocatable
	if len(l) == 0 {
		l = n.Status.Capacity
	}
	return Resources{MilliCPU: quantity(l, virtkit.ResourceCPU, true), Memory: quantity(l, virtkit.ResourceMemory, false)}
}

// NodesHeldBy returns the nodes on which vmi holds resources: its node
// while it is not final, plus the target node of a migration in flight.
func NodesHeldBy(vmi *virtkit.VirtualMachineInstance) []string {
	var out []string
	n1, n2 := heldNodes(vmi)
	if n1 != "" {
		out = append(out, n1)
	}
	if n2 != "" {
		out = append(out, n2)
	}
	return out
}

// heldNodes is NodesHeldBy without allocating: the node and the migration
// target, each "" when absent.
func heldNodes(vmi *virtkit.VirtualMachineInstance) (node, target string) {
	if vmi.Status.Phase == virtkit.Succeeded || vmi.Status.Phase == virtkit.Failed {
		return "", ""
	}
	node = vmi.Status.NodeName
	if ms := vmi.Status.MigrationState; ms != nil && !ms.Completed && !ms.Failed &&
		ms.TargetNode != "" && ms.TargetNode != node {
		target = ms.TargetNode
	}
	return node, target
}

// HoldsNode reports whether vmi holds resources on some node.
func HoldsNode(vmi *virtkit.VirtualMachineInstance) bool {
	n1, n2 := heldNodes(vmi)
	return n1 != "" || n2 != ""
}
