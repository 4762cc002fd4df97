package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
)

// Code is the outcome a plugin reports.
type Code int

// Plugin outcomes.
const (
	// Success: the node passes (a nil *Status is Success too).
	Success Code = iota
	// Unschedulable: the node does not fit this VMI; the reasons are
	// counted in the [UnschedulableError] and the VMI is retried later.
	Unschedulable
	// Error: the decision cannot be made (bad input, an internal failure);
	// Schedule returns the status's error at once.
	Error
)

// Status is what a plugin reports. The nil *Status means Success, so a
// plugin that passes returns nil.
type Status struct {
	code    Code
	reasons []string
	err     error
}

// NewStatus returns a status with a code and, for Unschedulable, the
// reasons worded like kube-scheduler's ("node(s) had untolerated taint
// {k: v}"); nodes failing for the same reason are counted together.
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{code: code, reasons: reasons}
}

// AsStatus wraps err in an Error status (nil for a nil err).
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, err: err}
}

// Code returns the status's code; Success for nil.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// IsSuccess reports whether the status is Success.
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// Reasons returns the reasons an Unschedulable status gives.
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	return s.reasons
}

// AsError returns the status as an error: nil for Success, the wrapped
// error for an Error status, else an error wrapping [ErrUnschedulable].
func (s *Status) AsError() error {
	switch {
	case s.IsSuccess():
		return nil
	case s.err != nil:
		return s.err
	case s.code == Error:
		return fmt.Errorf("scheduler: %s", strings.Join(s.reasons, ", "))
	default:
		return fmt.Errorf("%w: %s", ErrUnschedulable, strings.Join(s.reasons, ", "))
	}
}

// Plugin is a named scheduling step. Names are unique within a profile.
type Plugin interface {
	Name() string
}

// PreFilterPlugin is an optional extension of a filter or score plugin:
// PreFilter runs once per decision, before any Filter, to compute what the
// plugin needs for every node (and to reject a bad spec with an Error).
// An Unschedulable status marks every node unschedulable for its reasons.
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance) *Status
}

// FilterPlugin decides whether the VMI may run on one node. Filters run
// in the profile's order; the first that fails names the node's reason.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance, node *NodeInfo) *Status
}

// ScorePlugin rates a node that passed every filter; higher is better.
// The framework sums each plugin's (normalised) score times its weight and
// picks the highest total, ties going to the lexically smallest node name.
// Scores are float64 (kube-scheduler uses integers) so that the built-in
// plugins keep their resolution.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance, node *NodeInfo) (float64, *Status)
}

// ScoreNormalizer is an optional extension of a ScorePlugin: after every
// feasible node is scored, NormalizeScores may rewrite the plugin's scores
// (for instance to 0..100 with [NormalizeMinMax]).
type ScoreNormalizer interface {
	NormalizeScores(ctx context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance, scores []NodeScore) *Status
}

// NodeScore is one node's score from one plugin.
type NodeScore struct {
	Name  string
	Score float64
}

// NormalizeMinMax maps scores linearly onto 0..100 (the lowest to 0, the
// highest to 100); all equal become 0.
func NormalizeMinMax(scores []NodeScore) {
	if len(scores) == 0 {
		return
	}
	lo, hi := scores[0].Score, scores[0].Score
	for _, s := range scores {
		lo, hi = min(lo, s.Score), max(hi, s.Score)
	}
	for i := range scores {
		if hi == lo {
			scores[i].Score = 0
		} else {
			scores[i].Score = 100 * (scores[i].Score - lo) / (hi - lo)
		}
	}
}

// Resources are cpu (millicores) and memory (bytes).
type Resources struct {
	MilliCPU int64
	Memory   int64
}

func (r *Resources) add(o Resources) {
	r.MilliCPU += o.MilliCPU
	r.Memory += o.Memory
}

func (r *Resources) sub(o Resources) {
	r.MilliCPU -= o.MilliCPU
	r.Memory -= o.Memory
}

// NodeInfo is a node as the plugins see it during one decision.
type NodeInfo struct {
	// Node is the node object; plugins must not modify it.
	Node *virtkit.Node
	// Allocatable is status.allocatable (else status.capacity).
	Allocatable Resources
	// Requested sums the requests of the VMIs holding the node (including
	// migration targets), without the VMI being placed.
	Requested Resources
	// RequestedDevices sums the host device resources (see
	// [DeviceRequests]) of the same VMIs; nil when they ask for none.
	// Plugins must not modify it.
	RequestedDevices map[virtkit.ResourceName]int64
}

// Name is the node's name.
func (n *NodeInfo) Name() string { return n.Node.Name }

// CycleState is the scratch space of one scheduling decision, shared by
// the plugins: what the framework knows (the nodes, the decision's time,
// the VMIs already placed) and what plugins write for their own later
// steps (Read, Write). It is not safe for concurrent use.
type CycleState struct {
	now    time.Time
	nodes  []NodeInfo
	byName map[string]*NodeInfo
	placed *Placements
	data   map[string]any

	// Built-in plugins' data, typed to spare a map lookup per node.
	vmi      *virtkit.VirtualMachineInstance
	compiled *compiled
	nodePart bool // compiled holds the node-affinity part
	podPart  bool // compiled holds the VMI-affinity part
	inter    *interVMI
	want     Resources
	wantFor  *virtkit.VirtualMachineInstance
}

// Now is the decision's time, read once from the framework's clock.
func (s *CycleState) Now() time.Time { return s.now }

// Nodes returns every node of the decision (feasible or not).
func (s *CycleState) Nodes() []NodeInfo { return s.nodes }

// Node returns the node of that name, or nil.
func (s *CycleState) Node(name string) *NodeInfo { return s.byName[name] }

// Read returns what a plugin wrote under key.
func (s *CycleState) Read(key string) (any, bool) {
	v, ok := s.data[key]
	return v, ok
}

// Write stores v under key for later steps of the same decision; plugins
// use their own name as key prefix.
func (s *CycleState) Write(key string, v any) {
	if s.data == nil {
		s.data = map[string]any{}
	}
	s.data[key] = v
}

// PlacedVMI is a VMI that holds node resources, as the placement state
// keeps it.
type PlacedVMI struct {
	Namespace, Name string
	// Labels must not be modified.
	Labels map[string]string
	// Nodes are the node and a migration target ("" when absent).
	Nodes    [2]string
	Requests Resources
}

// EachPlaced calls fn for every VMI holding node resources (the VMI being
// placed excluded) in namespaces (nil: all) whose labels sel matches,
// until fn returns false. It uses the placement state's label index, so a
// selector with an In, = or Exists requirement visits only the VMIs that
// can match.
func (s *CycleState) EachPlaced(namespaces []string, sel labels.Selector, fn func(PlacedVMI) bool) {
	if s.placed == nil || sel == nil {
		return
	}
	t := vmiTerm{selector: sel}
	if namespaces != nil {
		t.namespaces = make(map[string]bool, len(namespaces))
		for _, n := range namespaces {
			t.namespaces[n] = true
		}
	}
	s.placed.selected(t, func(pl *placement) bool {
		return fn(PlacedVMI{Namespace: pl.key.Namespace, Name: pl.key.Name, Labels: pl.labels, Nodes: pl.nodes, Requests: pl.req})
	})
}

// Profile is a composition of plugins. Filters run in order; Scores are
// summed with Weights (by plugin name; missing or zero means 1) and run
// only when more than one node passes the filters. A plugin in either list
// that implements [PreFilterPlugin] has PreFilter run once per decision
// (and per plugin name), in the order first met, Filters before Scores.
//
// Plugins are shared by concurrent decisions, so they must be safe for
// concurrent use (keep per-decision data in the [CycleState]). Under
// [Placements] they run while the placement state is locked: a plugin
// must not call back into that Placements.
type Profile struct {
	Filters []FilterPlugin
	Scores  []ScorePlugin
	Weights map[string]float64
}

// WithoutFilter returns a copy of p without the filter plugins named.
func (p Profile) WithoutFilter(names ...string) Profile {
	out := p.clone()
	out.Filters = out.Filters[:0]
	for _, f := range p.Filters {
		if !contains(names, f.Name()) {
			out.Filters = append(out.Filters, f)
		}
	}
	return out
}

// WithoutScore returns a copy of p without the score plugins named.
func (p Profile) WithoutScore(names ...string) Profile {
	out := p.clone()
	out.Scores = out.Scores[:0]
	for _, s := range p.Scores {
		if !contains(names, s.Name()) {
			out.Scores = append(out.Scores, s)
		}
	}
	return out
}

func (p Profile) clone() Profile {
	out := Profile{
		Filters: append([]FilterPlugin(nil), p.Filters...),
		Scores:  append([]ScorePlugin(nil), p.Scores...),
	}
	if p.Weights != nil {
		out.Weights = make(map[string]float64, len(p.Weights))
		for k, v := range p.Weights {
			out.Weights[k] = v
		}
	}
	return out
}

func contains(names []string, n string) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}

// ErrInvalidProfile is wrapped when NewFramework is given a profile it
// cannot run.
var ErrInvalidProfile = errors.New("invalid scheduler profile")

// Framework runs a [Profile]: the default scheduler is the framework over
// [DefaultProfile]. Schedule keeps no state between calls and is safe for
// concurrent use; [Framework.NewPlacements] returns an incremental
// placement state for callers that see every change of every VMI (the VMI
// controller does), so a decision costs O(nodes), not O(placed VMIs).
type Framework struct {
	now        func() time.Time
	preFilters []PreFilterPlugin
	filters    []FilterPlugin
	scores     []ScorePlugin
	weights    []float64
}

// Default is the framework; the name is kept for existing callers.
type Default = Framework

var _ Scheduler = (*Framework)(nil)

// NewFramework returns a framework running p, with opts.Clock as its clock
// (opts.HeartbeatTimeout only matters to [DefaultProfile]). A nil plugin,
// two plugins of one name in one list, or a negative weight is an error
// wrapping ErrInvalidProfile.
func NewFramework(p Profile, opts Options) (*Framework, error) {
	f := &Framework{now: time.Now}
	if opts.Clock != nil {
		f.now = opts.Clock.Now
	}
	seenPre := map[string]bool{}
	addPre := func(pl Plugin) {
		if pf, ok := pl.(PreFilterPlugin); ok && !seenPre[pl.Name()] {
			seenPre[pl.Name()] = true
			f.preFilters = append(f.preFilters, pf)
		}
	}
	seen := map[string]bool{}
	for i, pl := range p.Filters {
		if pl == nil {
			return nil, fmt.Errorf("%w: filters[%d]: nil plugin", ErrInvalidProfile, i)
		}
		if seen[pl.Name()] {
			return nil, fmt.Errorf("%w: filters[%d]: duplicate plugin %q", ErrInvalidProfile, i, pl.Name())
		}
		seen[pl.Name()] = true
		addPre(pl)
		f.filters = append(f.filters, pl)
	}
	seen = map[string]bool{}
	for i, pl := range p.Scores {
		if pl == nil {
			return nil, fmt.Errorf("%w: scores[%d]: nil plugin", ErrInvalidProfile, i)
		}
		if seen[pl.Name()] {
			return nil, fmt.Errorf("%w: scores[%d]: duplicate plugin %q", ErrInvalidProfile, i, pl.Name())
		}
		seen[pl.Name()] = true
		w := p.Weights[pl.Name()]
		if w < 0 {
			return nil, fmt.Errorf("%w: weights[%q]: must not be negative, got %v", ErrInvalidProfile, pl.Name(), w)
		}
		if w == 0 {
			w = 1
		}
		addPre(pl)
		f.scores = append(f.scores, pl)
		f.weights = append(f.weights, w)
	}
	for name := range p.Weights {
		if !seen[name] {
			return nil, fmt.Errorf("%w: weights[%q]: no score plugin of that name", ErrInvalidProfile, name)
		}
	}
	return f, nil
}

// New returns the default scheduler: the framework over DefaultProfile.
func New(opts Options) *Framework {
	f, err := NewFramework(DefaultProfile(opts), opts)
	if err != nil {
		panic(err) // the default profile is valid by construction
	}
	return f
}

// Schedule implements Scheduler. It builds a placement state from placed
// (O(placed)) and decides; see [Placements] for the incremental form.
func (f *Framework) Schedule(ctx context.Context, vmi *virtkit.VirtualMachineInstance, nodes []virtkit.Node, placed []*virtkit.VirtualMachineInstance) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if vmi == nil {
		return "", fmt.Errorf("%w: vmi: required", ErrInvalidSpec)
	}
	st := f.scanState(placed, types.NamespacedName{Namespace: vmi.Namespace, Name: vmi.Name})
	return f.decide(ctx, vmi, nodes, st)
}

// decide runs the profile for vmi against the placement state st (which
// must not hold vmi itself); st's lock, if shared, must be held.
func (f *Framework) decide(ctx context.Context, vmi *virtkit.VirtualMachineInstance, nodes []virtkit.Node, st *Placements) (string, error) {
	state := &CycleState{now: f.now(), nodes: make([]NodeInfo, len(nodes)), byName: make(map[string]*NodeInfo, len(nodes)), placed: st, vmi: vmi}
	for i := range nodes {
		n := &nodes[i]
		state.nodes[i] = NodeInfo{Node: n, Allocatable: allocatableOf(n), Requested: st.usage[n.Name], RequestedDevices: st.devices[n.Name]}
	}
	for i := range state.nodes {
		state.byName[nodes[i].Name] = &state.nodes[i]
	}
	for _, pf := range f.preFilters {
		s := pf.PreFilter(ctx, state, vmi)
		switch s.Code() {
		case Success:
		case Unschedulable:
			reasons := map[string]int{}
			for _, r := range s.Reasons() {
				reasons[r] += len(nodes)
			}
			return "", &UnschedulableError{Nodes: len(nodes), Reasons: reasons}
		default:
			return "", s.AsError()
		}
	}

	var reasons map[string]int
	// One buffer: the feasible nodes' totals, then one plugin's scores.
	buf := make([]NodeScore, 2*len(nodes))
	feasible := buf[:0:len(nodes)]
	feasibleInfo := make([]*NodeInfo, 0, len(nodes))
	for i := range state.nodes {
		n := &state.nodes[i]
		var failed *Status
		for _, fp := range f.filters {
			if s := fp.Filter(ctx, state, vmi, n); !s.IsSuccess() {
				failed = s
				break
			}
		}
		switch failed.Code() {
		case Success:
			feasible = append(feasible, NodeScore{Name: n.Node.Name})
			feasibleInfo = append(feasibleInfo, n)
		case Unschedulable:
			if reasons == nil {
				reasons = map[string]int{}
			}
			for _, r := range failed.Reasons() {
				reasons[r]++
			}
		default:
			return "", failed.AsError()
		}
	}
	if len(feasible) == 0 {
		return "", &UnschedulableError{Nodes: len(nodes), Reasons: reasons}
	}
	if len(f.scores) > 0 && len(feasible) > 1 {
		scratch := buf[len(nodes) : len(nodes)+len(feasible)]
		for pi, sp := range f.scores {
			for i, n := range feasibleInfo {
				v, s := sp.Score(ctx, state, vmi, n)
				if !s.IsSuccess() {
					return "", fmt.Errorf("score plugin %s: %w", sp.Name(), s.AsError())
				}
				scratch[i] = NodeScore{Name: n.Node.Name, Score: v}
			}
			if norm, ok := sp.(ScoreNormalizer); ok {
				if s := norm.NormalizeScores(ctx, state, vmi, scratch); !s.IsSuccess() {
					return "", fmt.Errorf("score plugin %s: %w", sp.Name(), s.AsError())
				}
			}
			for i := range feasible {
				feasible[i].Score += f.weights[pi] * scratch[i].Score
			}
		}
	}
	best := feasible[0]
	for _, c := range feasible[1:] {
		if c.Score > best.Score || (c.Score == best.Score && c.Name < best.Name) {
			best = c
		}
	}
	return best.Name, nil
}

// NewFilter adapts a function to a FilterPlugin called name.
func NewFilter(name string, fn func(ctx context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance, node *NodeInfo) *Status) FilterPlugin {
	return filterFn{name: name, fn: fn}
}

// NewScore adapts a function to a ScorePlugin called name.
func NewScore(name string, fn func(ctx context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance, node *NodeInfo) (float64, *Status)) ScorePlugin {
	return scoreFn{name: name, fn: fn}
}

type filterFn struct {
	name string
	fn   func(context.Context, *CycleState, *virtkit.VirtualMachineInstance, *NodeInfo) *Status
}

func (f filterFn) Name() string { return f.name }

func (f filterFn) Filter(ctx context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance, node *NodeInfo) *Status {
	return f.fn(ctx, state, vmi, node)
}

type scoreFn struct {
	name string
	fn   func(context.Context, *CycleState, *virtkit.VirtualMachineInstance, *NodeInfo) (float64, *Status)
}

func (f scoreFn) Name() string { return f.name }

func (f scoreFn) Score(ctx context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance, node *NodeInfo) (float64, *Status) {
	return f.fn(ctx, state, vmi, node)
}
