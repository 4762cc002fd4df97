package scheduler

import (
	"context"
	"fmt"
	"math"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
)

// WhenUnsatisfiable says what a spread constraint does when it cannot be
// met.
type WhenUnsatisfiable string

// Spread constraint actions, as kube-scheduler spells them.
const (
	// DoNotSchedule makes the constraint a filter.
	DoNotSchedule WhenUnsatisfiable = "DoNotSchedule"
	// ScheduleAnyway makes it a score: nodes in less crowded domains win.
	ScheduleAnyway WhenUnsatisfiable = "ScheduleAnyway"
)

// TopologySpreadConstraint spreads the VMIs a selector matches across the
// domains of a topology key.
type TopologySpreadConstraint struct {
	// MaxSkew is the largest difference allowed between the number of
	// matching VMIs in the node's domain (the new VMI included) and the
	// least populated eligible domain; at least 1.
	MaxSkew int32
	// TopologyKey is a node label (kubernetes.io/hostname defaults to the
	// node name); nodes without it are not eligible.
	TopologyKey string
	// WhenUnsatisfiable: DoNotSchedule (the zero value) or ScheduleAnyway.
	WhenUnsatisfiable WhenUnsatisfiable
	// LabelSelector selects the VMIs counted, in the new VMI's namespace;
	// nil selects the VMIs carrying every label the new VMI carries.
	LabelSelector *metav1.LabelSelector
}

// PodTopologySpread is kube-scheduler's topology spread for VMIs, with the
// constraints given to the plugin (like kube-scheduler's default
// constraints) since the VMI spec carries none. It is not in
// [DefaultProfile]; add it to a profile's Filters and Scores. Eligible
// domains are those of the nodes that carry the key and pass the VMI's
// node selector and required node affinity.
type PodTopologySpread struct {
	Constraints []TopologySpreadConstraint
}

// Name implements Plugin.
func (*PodTopologySpread) Name() string { return NamePodTopologySpread }

const (
	reasonSpread        = "node(s) didn't match pod topology spread constraints"
	reasonSpreadMissing = "node(s) didn't match pod topology spread constraints (missing required label)"
	spreadStateKey      = NamePodTopologySpread + "/counts"
)

var (
	statusSpread        = NewStatus(Unschedulable, reasonSpread)
	statusSpreadMissing = NewStatus(Unschedulable, reasonSpreadMissing)
)

// spreadCounts is one constraint's view of a decision.
type spreadCounts struct {
	c         TopologySpreadConstraint
	selector  labels.Selector
	selfMatch int
	counts    map[string]int // matching VMIs per eligible domain
	min       int
}

// PreFilter implements PreFilterPlugin: it checks the constraints and
// counts the matching VMIs per eligible domain once.
func (p *PodTopologySpread) PreFilter(_ context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance) *Status {
	nt, err := state.nodeTerms(vmi)
	if err != nil {
		return AsStatus(err)
	}
	out := make([]spreadCounts, 0, len(p.Constraints))
	for i, c := range p.Constraints {
		path := fmt.Sprintf("%s.constraints[%d]", NamePodTopologySpread, i)
		if c.MaxSkew < 1 {
			return AsStatus(fmt.Errorf("%w: %s.maxSkew: must be at least 1, got %d", ErrInvalidProfile, path, c.MaxSkew))
		}
		if c.TopologyKey == "" {
			return AsStatus(fmt.Errorf("%w: %s.topologyKey: required", ErrInvalidProfile, path))
		}
		if c.WhenUnsatisfiable != "" && c.WhenUnsatisfiable != DoNotSchedule && c.WhenUnsatisfiable != ScheduleAnyway {
			return AsStatus(fmt.Errorf("%w: %s.whenUnsatisfiable: unsupported value %q", ErrInvalidProfile, path, c.WhenUnsatisfiable))
		}
		sc := spreadCounts{c: c, counts: map[string]int{}}
		if c.LabelSelector == nil {
			sc.selector = labels.SelectorFromSet(vmi.Labels)
		} else if sc.selector, err = metav1.LabelSelectorAsSelector(c.LabelSelector); err != nil {
			return AsStatus(fmt.Errorf("%w: %s.labelSelector: %w", ErrInvalidProfile, path, err))
		}
		if sc.selector.Matches(labels.Set(vmi.Labels)) {
			sc.selfMatch = 1
		}
		nodes := state.Nodes()
		for i := range nodes {
			if d, ok := domain(&nodes[i], c.TopologyKey); ok && nt.matchesNode(&nodes[i]) {
				sc.counts[d] += 0
			}
		}
		state.EachPlaced([]string{vmi.Namespace}, sc.selector, func(v PlacedVMI) bool {
			for _, name := range v.Nodes {
				if n := state.Node(name); n != nil {
					if d, ok := domain(n, c.TopologyKey); ok {
						if _, eligible := sc.counts[d]; eligible {
							sc.counts[d]++
						}
					}
				}
			}
			return true
		})
		sc.min = math.MaxInt
		for _, n := range sc.counts {
			sc.min = min(sc.min, n)
		}
		if sc.min == math.MaxInt {
			sc.min = 0
		}
		out = append(out, sc)
	}
	state.Write(spreadStateKey, out)
	return nil
}

func (p *PodTopologySpread) counts(ctx context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance) ([]spreadCounts, *Status) {
	if v, ok := state.Read(spreadStateKey); ok {
		return v.([]spreadCounts), nil
	}
	if s := p.PreFilter(ctx, state, vmi); !s.IsSuccess() {
		return nil, s
	}
	v, _ := state.Read(spreadStateKey)
	return v.([]spreadCounts), nil
}

// Filter implements FilterPlugin for the DoNotSchedule constraints.
func (p *PodTopologySpread) Filter(ctx context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance, n *NodeInfo) *Status {
	all, s := p.counts(ctx, state, vmi)
	if s != nil {
		return s
	}
	for _, sc := range all {
		if sc.c.WhenUnsatisfiable == ScheduleAnyway {
			continue
		}
		d, ok := domain(n, sc.c.TopologyKey)
		if !ok {
			return statusSpreadMissing
		}
		if sc.counts[d]+sc.selfMatch-sc.min > int(sc.c.MaxSkew) {
			return statusSpread
		}
	}
	return nil
}

// Score implements ScorePlugin for the ScheduleAnyway constraints: minus
// the matching VMIs in the node's domains, normalised so the least crowded
// node scores 100.
func (p *PodTopologySpread) Score(ctx context.Context, state *CycleState, vmi *virtkit.VirtualMachineInstance, n *NodeInfo) (float64, *Status) {
	all, s := p.counts(ctx, state, vmi)
	if s != nil {
		return 0, s
	}
	score := 0.0
	for _, sc := range all {
		if sc.c.WhenUnsatisfiable != ScheduleAnyway {
			continue
		}
		if d, ok := domain(n, sc.c.TopologyKey); ok {
			score -= float64(sc.counts[d])
		}
	}
	return score, nil
}

// NormalizeScores implements ScoreNormalizer (min-max to 0..100).
func (*PodTopologySpread) NormalizeScores(_ context.Context, _ *CycleState, _ *virtkit.VirtualMachineInstance, scores []NodeScore) *Status {
	NormalizeMinMax(scores)
	return nil
}
