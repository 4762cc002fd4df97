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
	"k8s.io/apimachinery/pkg/types"
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

// Options configures [Default]. The zero value is the default.
type Options struct {
	// Clock is the time heartbeats are judged by; nil is the real clock.
	Clock clock.PassiveClock
	// Now overrides Clock's reading when set.
	//
	// Deprecated: set Clock.
	Now func() time.Time
	// HeartbeatTimeout marks a node not ready when its last heartbeat is
	// older; zero means 5 minutes (virt-handler's timeout), negative
	// disables the check.
	HeartbeatTimeout time.Duration
}

// Default is the built-in filter-and-score scheduler. Schedule keeps no
// state between calls and is safe for concurrent use; [Default.NewPlacements]
// returns an incremental placement state for callers that see every change
// of every VMI (the VMI controller does), so a decision costs O(nodes), not
// O(placed VMIs).
type Default struct {
	now              func() time.Time
	heartbeatTimeout time.Duration
}

var _ Scheduler = (*Default)(nil)

// New returns the default scheduler.
func New(opts Options) *Default {
	d := &Default{now: opts.Now, heartbeatTimeout: opts.HeartbeatTimeout}
	if d.now == nil && opts.Clock != nil {
		d.now = opts.Clock.Now
	}
	if d.now == nil {
		d.now = time.Now
	}
	if d.heartbeatTimeout == 0 {
		d.heartbeatTimeout = 5 * time.Minute
	}
	return d
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

// nodeInfo is what scheduling needs from a node.
type nodeInfo struct {
	name          string
	labels        map[string]string
	taints        []virtkit.Taint
	unschedulable bool
	ready         bool
	allocatable   virtkit.ResourceList
}

// Schedule implements Scheduler. It builds a placement state from placed
// (O(placed)) and decides; see [Placements] for the incremental form.
func (d *Default) Schedule(ctx context.Context, vmi *virtkit.VirtualMachineInstance, nodes []virtkit.Node, placed []*virtkit.VirtualMachineInstance) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if vmi == nil {
		return "", fmt.Errorf("%w: vmi: required", ErrInvalidSpec)
	}
	st := d.scanState(placed, types.NamespacedName{Namespace: vmi.Namespace, Name: vmi.Name})
	return d.decide(vmi, nodes, st)
}

// decide filters and scores the nodes for vmi against the placement state
// st (which must not hold vmi itself); st's lock, if shared, must be held.
func (d *Default) decide(vmi *virtkit.VirtualMachineInstance, nodes []virtkit.Node, st *Placements) (string, error) {
	infos := make([]nodeInfo, 0, len(nodes))
	byName := make(map[string]*nodeInfo, len(nodes))
	now := d.now()
	for i := range nodes {
		infos = append(infos, d.info(&nodes[i], now))
	}
	for i := range infos {
		byName[infos[i].name] = &infos[i]
	}

	c, err := compile(vmi)
	if err != nil {
		return "", err
	}
	inter := st.interVMI(c, byName)
	want := requestsOf(vmi)

	reasons := map[string]int{}
	type candidate struct {
		node                    *nodeInfo
		base, nodeAff, vmiAff   float64
		preferNoSchedulePenalty float64
	}
	var feasible []candidate
	for i := range infos {
		n := &infos[i]
		used := st.usage[n.name]
		rs := d.filter(c, n, want, used, inter)
		if len(rs) > 0 {
			for _, r := range rs {
				reasons[r]++
			}
			continue
		}
		feasible = append(feasible, candidate{
			node:                    n,
			base:                    leastAllocated(n.allocatable, used, want),
			nodeAff:                 c.preferredNodeScore(n),
			vmiAff:                  inter.preferredScore(n),
			preferNoSchedulePenalty: preferNoSchedulePenalty(c.vmi, n),
		})
	}
	if len(feasible) == 0 {
		return "", &UnschedulableError{Nodes: len(nodes), Reasons: reasons}
	}
	normalize := func(get func(*candidate) *float64) {
		lo, hi := *get(&feasible[0]), *get(&feasible[0])
		for i := range feasible {
			v := *get(&feasible[i])
			lo, hi = min(lo, v), max(hi, v)
		}
		for i := range feasible {
			p := get(&feasible[i])
			if hi == lo {
				*p = 0
			} else {
				*p = 100 * (*p - lo) / (hi - lo)
			}
		}
	}
	normalize(func(c *candidate) *float64 { return &c.nodeAff })
	normalize(func(c *candidate) *float64 { return &c.vmiAff })
	best, bestScore := "", 0.0
	for _, f := range feasible {
		score := f.base + f.nodeAff + f.vmiAff - f.preferNoSchedulePenalty
		if best == "" || score > bestScore || (score == bestScore && f.node.name < best) {
			best, bestScore = f.node.name, score
		}
	}
	return best, nil
}

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

// filter returns the node's failure reasons; none means it fits.
func (d *Default) filter(c *compiled, n *nodeInfo, want, used requests, inter *interVMI) []string {
	if !n.ready {
		return []string{reasonNotReady}
	}
	if n.unschedulable && !tolerates(c.vmi.Spec.Tolerations, virtkit.Taint{Key: TaintNodeUnschedulable, Effect: virtkit.TaintEffectNoSchedule}) {
		return []string{reasonUnschedulable}
	}
	for _, t := range n.taints {
		if t.Effect != virtkit.TaintEffectNoSchedule && t.Effect != virtkit.TaintEffectNoExecute {
			continue
		}
		if !tolerates(c.vmi.Spec.Tolerations, t) {
			return []string{fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value)}
		}
	}
	if !c.matchesNode(n) {
		return []string{reasonNodeAffinity}
	}
	var short []string
	if want.milliCPU > 0 && used.milliCPU+want.milliCPU > quantity(n.allocatable, virtkit.ResourceCPU, true) {
		short = append(short, fmt.Sprintf(reasonInsufficientFmt, virtkit.ResourceCPU))
	}
	if want.memory > 0 && used.memory+want.memory > quantity(n.allocatable, virtkit.ResourceMemory, false) {
		short = append(short, fmt.Sprintf(reasonInsufficientFmt, virtkit.ResourceMemory))
	}
	if len(short) > 0 {
		return short
	}
	if r := inter.check(c, n); r != "" {
		return []string{r}
	}
	return nil
}

// tolerates reports whether any toleration matches the taint (kube rules:
// empty key with Exists matches every key; empty effect matches every
// effect; operator defaults to Equal).
func tolerates(tols []virtkit.Toleration, t virtkit.Taint) bool {
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

func preferNoSchedulePenalty(vmi *virtkit.VirtualMachineInstance, n *nodeInfo) float64 {
	penalty := 0.0
	for _, t := range n.taints {
		if t.Effect == virtkit.TaintEffectPreferNoSchedule && !tolerates(vmi.Spec.Tolerations, t) {
			penalty += 50
		}
	}
	return penalty
}

// requests are a VMI's cpu (millicores) and memory (bytes) requests.
type requests struct {
	milliCPU, memory int64
}

func (r *requests) add(o requests) {
	r.milliCPU += o.milliCPU
	r.memory += o.memory
}

func (r *requests) sub(o requests) {
	r.milliCPU -= o.milliCPU
	r.memory -= o.memory
}

// Requests returns what vmi reserves on its node: cpu from
// resources.requests (else limits), memory from resources.requests (else
// limits, else memory.guest).
func Requests(vmi *virtkit.VirtualMachineInstance) virtkit.ResourceList {
	r := requestsOf(vmi)
	out := virtkit.ResourceList{}
	if r.milliCPU > 0 {
		out[virtkit.ResourceCPU] = *resource.NewMilliQuantity(r.milliCPU, resource.DecimalSI)
	}
	if r.memory > 0 {
		out[virtkit.ResourceMemory] = *resource.NewQuantity(r.memory, resource.BinarySI)
	}
	return out
}

func requestsOf(vmi *virtkit.VirtualMachineInstance) requests {
	res := vmi.Spec.Domain.Resources
	var r requests
	if q, ok := res.Requests[virtkit.ResourceCPU]; ok {
		r.milliCPU = q.MilliValue()
	} else if q, ok := res.Limits[virtkit.ResourceCPU]; ok {
		r.milliCPU = q.MilliValue()
	}
	if q, ok := res.Requests[virtkit.ResourceMemory]; ok {
		r.memory = q.Value()
	} else if q, ok := res.Limits[virtkit.ResourceMemory]; ok {
		r.memory = q.Value()
	} else if m := vmi.Spec.Domain.Memory; m != nil && m.Guest != nil {
		r.memory = m.Guest.Value()
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

// leastAllocated scores 0..100: the mean free fraction of cpu and memory
// after placing want.
func leastAllocated(alloc virtkit.ResourceList, used, want requests) float64 {
	score := func(capacity, req int64) float64 {
		if capacity <= 0 {
			return 0
		}
		return 100 * float64(capacity-req) / float64(capacity)
	}
	return (score(quantity(alloc, virtkit.ResourceCPU, true), used.milliCPU+want.milliCPU) +
		score(quantity(alloc, virtkit.ResourceMemory, false), used.memory+want.memory)) / 2
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

func compile(vmi *virtkit.VirtualMachineInstance) (*compiled, error) {
	c := &compiled{vmi: vmi, nodeSelector: labels.SelectorFromSet(vmi.Spec.NodeSelector)}
	aff := vmi.Spec.Affinity
	if aff == nil {
		return c, nil
	}
	base := "spec.affinity"
	if na := aff.NodeAffinity; na != nil {
		if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			path := base + ".nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
			c.required = []nodeTerm{}
			for i, t := range req.NodeSelectorTerms {
				nt, err := compileNodeTerm(t, fmt.Sprintf("%s[%d]", path, i))
				if err != nil {
					return nil, err
				}
				c.required = append(c.required, nt)
			}
		}
		for i, p := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			nt, err := compileNodeTerm(p.Preference, fmt.Sprintf("%s.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[%d].preference", base, i))
			if err != nil {
				return nil, err
			}
			c.preferred = append(c.preferred, weightedNodeTerm{weight: p.Weight, term: nt})
		}
	}
	var err error
	if pa := aff.PodAffinity; pa != nil {
		path := base + ".podAffinity"
		if c.affinity, err = compileVMITerms(vmi, pa.RequiredDuringSchedulingIgnoredDuringExecution, path+".requiredDuringSchedulingIgnoredDuringExecution"); err != nil {
			return nil, err
		}
		if c.prefAffinity, err = compileWeighted(vmi, pa.PreferredDuringSchedulingIgnoredDuringExecution, path+".preferredDuringSchedulingIgnoredDuringExecution"); err != nil {
			return nil, err
		}
	}
	if pa := aff.PodAntiAffinity; pa != nil {
		path := base + ".podAntiAffinity"
		if c.anti, err = compileVMITerms(vmi, pa.RequiredDuringSchedulingIgnoredDuringExecution, path+".requiredDuringSchedulingIgnoredDuringExecution"); err != nil {
			return nil, err
		}
		if c.prefAnti, err = compileWeighted(vmi, pa.PreferredDuringSchedulingIgnoredDuringExecution, path+".preferredDuringSchedulingIgnoredDuringExecution"); err != nil {
			return nil, err
		}
	}
	return c, nil
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

func (t nodeTerm) matches(n *nodeInfo) bool {
	// An empty term matches nothing (kube semantics).
	if t.labels.Empty() && len(t.fields) == 0 {
		return false
	}
	if !t.labels.Matches(labels.Set(n.labels)) {
		return false
	}
	for _, f := range t.fields {
		in := false
		for _, v := range f.Values {
			if v == n.name {
				in = true
			}
		}
		if in != (f.Operator == virtkit.NodeSelectorOpIn) {
			return false
		}
	}
	return true
}

func (c *compiled) matchesNode(n *nodeInfo) bool {
	if !c.nodeSelector.Matches(labels.Set(n.labels)) {
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

func (c *compiled) preferredNodeScore(n *nodeInfo) float64 {
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
func domain(n *nodeInfo, key string) (string, bool) {
	if v, ok := n.labels[key]; ok {
		return v, true
	}
	if key == LabelHostname {
		return n.name, true
	}
	return "", false
}

// info extracts what scheduling needs from a Node.
func (d *Default) info(n *virtkit.Node, now time.Time) nodeInfo {
	return nodeInfo{
		name:          n.Name,
		labels:        n.Labels,
		taints:        n.Spec.Taints,
		unschedulable: n.Spec.Unschedulable,
		ready:         d.nodeReady(n, now),
		allocatable:   allocatable(n),
	}
}

// allocatable is status.allocatable, falling back to status.capacity.
func allocatable(n *virtkit.Node) virtkit.ResourceList {
	if len(n.Status.Allocatable) > 0 {
		return n.Status.Allocatable
	}
	return n.Status.Capacity
}

// nodeReady: condition Ready=True, and a heartbeat (when reported) no older
// than the timeout.
func (d *Default) nodeReady(n *virtkit.Node, now time.Time) bool {
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == virtkit.NodeReady {
			ready = c.Status == virtkit.ConditionTrue
		}
	}
	if !ready {
		return false
	}
	if hb := n.Status.LastHeartbeatTime; hb != nil && d.heartbeatTimeout > 0 {
		return now.Sub(hb.Time) <= d.heartbeatTimeout
	}
	return true
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
