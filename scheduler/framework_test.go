package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
)

// filterFunc and scoreFunc are test plugins.
type filterFunc struct {
	name string
	fn   func(*NodeInfo) *Status
}

func (f filterFunc) Name() string { return f.name }
func (f filterFunc) Filter(_ context.Context, _ *CycleState, _ *virtkit.VirtualMachineInstance, n *NodeInfo) *Status {
	return f.fn(n)
}

type scoreFunc struct {
	name string
	fn   func(*NodeInfo) float64
}

func (s scoreFunc) Name() string { return s.name }
func (s scoreFunc) Score(_ context.Context, _ *CycleState, _ *virtkit.VirtualMachineInstance, n *NodeInfo) (float64, *Status) {
	return s.fn(n), nil
}

type preFilterFunc struct {
	filterFunc
	pre func(*CycleState) *Status
}

func (p preFilterFunc) PreFilter(_ context.Context, s *CycleState, _ *virtkit.VirtualMachineInstance) *Status {
	return p.pre(s)
}

func TestNewFrameworkRejectsBadProfiles(t *testing.T) {
	pass := filterFunc{"Pass", func(*NodeInfo) *Status { return nil }}
	zero := scoreFunc{"Zero", func(*NodeInfo) float64 { return 0 }}
	tests := []struct {
		name    string
		profile Profile
		want    string
	}{
		{"nil filter", Profile{Filters: []FilterPlugin{pass, nil}}, "filters[1]: nil plugin"},
		{"nil score", Profile{Scores: []ScorePlugin{nil}}, "scores[0]: nil plugin"},
		{"duplicate filter", Profile{Filters: []FilterPlugin{pass, pass}}, `filters[1]: duplicate plugin "Pass"`},
		{"duplicate score", Profile{Scores: []ScorePlugin{zero, zero}}, `scores[1]: duplicate plugin "Zero"`},
		{"negative weight", Profile{Scores: []ScorePlugin{zero}, Weights: map[string]float64{"Zero": -1}}, `weights["Zero"]: must not be negative`},
		{"weight of nothing", Profile{Scores: []ScorePlugin{zero}, Weights: map[string]float64{"Typo": 2}}, `weights["Typo"]: no score plugin of that name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewFramework(tt.profile, Options{})
			require.ErrorIs(t, err, ErrInvalidProfile)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	_, err := NewFramework(DefaultProfile(Options{}), Options{})
	require.NoError(t, err)
}

func TestFrameworkComposesUserPlugins(t *testing.T) {
	nodes := []virtkit.Node{
		mkNode("n1", "4", "8Gi"),
		mkNode("n2", "4", "8Gi", withLabel("gpu", "true")),
		mkNode("n3", "4", "8Gi", withLabel("gpu", "true"), cordoned),
		mkNode("n4", "4", "8Gi", withLabel("gpu", "true")),
	}
	gpuOnly := filterFunc{"GPU", func(n *NodeInfo) *Status {
		if n.Node.Labels["gpu"] != "true" {
			return NewStatus(Unschedulable, "node(s) had no GPU")
		}
		return nil
	}}
	preferN4 := NewScore("PreferN4", func(_ context.Context, _ *CycleState, _ *virtkit.VirtualMachineInstance, n *NodeInfo) (float64, *Status) {
		if n.Name() == "n4" {
			return 1000, nil
		}
		return 0, nil
	})
	broken := filterFunc{"Broken", func(*NodeInfo) *Status { return AsStatus(errors.New("backend down")) }}
	rejectAll := preFilterFunc{filterFunc: filterFunc{"RejectAll", func(*NodeInfo) *Status { return nil }},
		pre: func(*CycleState) *Status { return NewStatus(Unschedulable, "quota exhausted") }}

	tests := []struct {
		name    string
		profile func() Profile
		want    string
		wantErr string
	}{
		{"default", func() Profile { return DefaultProfile(Options{}) }, "n1", ""},
		{"user filter after the defaults", func() Profile {
			p := DefaultProfile(Options{})
			p.Filters = append(p.Filters, gpuOnly)
			return p
		}, "n2", ""},
		{"user filter reasons counted with the defaults'", func() Profile {
			p := DefaultProfile(Options{})
			p.Filters = append(p.Filters, gpuOnly, filterFunc{"NotN2N4", func(n *NodeInfo) *Status {
				if n.Name() != "n3" {
					return NewStatus(Unschedulable, "node(s) were not n3")
				}
				return nil
			}})
			return p
		}, "", "0/4 nodes are available: 1 node(s) had no GPU, 1 node(s) were unschedulable, 2 node(s) were not n3."},
		{"user score", func() Profile {
			p := DefaultProfile(Options{})
			p.Scores = append(p.Scores, preferN4)
			return p
		}, "n4", ""},
		{"without a default filter", func() Profile {
			p := DefaultProfile(Options{}).WithoutFilter(NameNodeUnschedulable)
			p.Filters = append(p.Filters, gpuOnly)
			p.Scores = []ScorePlugin{scoreFunc{"PreferN3", func(n *NodeInfo) float64 {
				if n.Name() == "n3" {
					return 1
				}
				return 0
			}}}
			return p
		}, "n3", ""},
		{"an error status stops the decision", func() Profile {
			return Profile{Filters: []FilterPlugin{broken}}
		}, "", "backend down"},
		{"an unschedulable prefilter rejects every node", func() Profile {
			return Profile{Filters: []FilterPlugin{rejectAll}}
		}, "", "0/4 nodes are available: 4 quota exhausted."},
		{"no plugins: the smallest name", func() Profile { return Profile{} }, "n1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewFramework(tt.profile(), Options{Clock: testingclock.NewFakePassiveClock(now)})
			require.NoError(t, err)
			got, err := f.Schedule(context.Background(), mkVMI("a", "1", "1Gi"), nodes, nil)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestProfileWithoutCopies(t *testing.T) {
	p := DefaultProfile(Options{})
	q := p.WithoutScore(NameNodeResourcesFit).WithoutFilter(NameNodeReady, NameTaintToleration)
	names := func(ps []FilterPlugin) (out []string) {
		for _, x := range ps {
			out = append(out, x.Name())
		}
		return out
	}
	assert.Equal(t, []string{NameNodeReady, NameNodeUnschedulable, NameTaintToleration, NameNodeAffinity, NameNodeResourcesFit, NameNodeDevices, NameLaunchSecurity, NameInterPodAffinity}, names(p.Filters), "the original is untouched")
	assert.Equal(t, []string{NameNodeUnschedulable, NameNodeAffinity, NameNodeResourcesFit, NameNodeDevices, NameLaunchSecurity, NameInterPodAffinity}, names(q.Filters))
	require.Len(t, q.Scores, 3)
	assert.Len(t, p.Scores, 4)
}

func TestNodeResourcesFitStrategy(t *testing.T) {
	nodes := []virtkit.Node{mkNode("n1", "4", "8Gi"), mkNode("n2", "4", "8Gi")}
	placed := list(mkVMI("p", "2", "4Gi", on("n2")))
	tests := []struct {
		strategy Strategy
		want     string
	}{{LeastAllocated, "n1"}, {MostAllocated, "n2"}}
	for _, tt := range tests {
		fit := &NodeResourcesFit{Strategy: tt.strategy}
		f, err := NewFramework(Profile{Filters: []FilterPlugin{fit}, Scores: []ScorePlugin{fit}}, Options{})
		require.NoError(t, err)
		got, err := f.Schedule(context.Background(), mkVMI("a", "1", "1Gi"), nodes, placed)
		require.NoError(t, err)
		assert.Equal(t, tt.want, got)
	}
}

// A user's scheduler may call the built-in steps on its own.
func TestPluginsReusableOutsideTheFramework(t *testing.T) {
	ready := NodeReady{HeartbeatTimeout: time.Minute}
	fresh, stale := mkNode("a", "1", "1Gi"), mkNode("b", "1", "1Gi", staleHeartbeat)
	assert.True(t, ready.Ready(&fresh, now))
	assert.False(t, ready.Ready(&stale, now))
	assert.True(t, NodeReady{HeartbeatTimeout: -1}.Ready(&stale, now), "a negative timeout disables the heartbeat check")

	state := &CycleState{}
	vmi := mkVMI("v", "1", "1Gi", nodeSelector("zone", "a"))
	zoneA := mkNode("z", "4", "8Gi", withLabel("zone", "a"))
	assert.True(t, NodeAffinity{}.Filter(context.Background(), state, vmi, &NodeInfo{Node: &zoneA}).IsSuccess())
	assert.Equal(t, []string{reasonNodeAffinity}, NodeAffinity{}.Filter(context.Background(), state, vmi, &NodeInfo{Node: &fresh}).Reasons())
	assert.True(t, InterPodAffinity{}.Filter(context.Background(), state, vmi, &NodeInfo{Node: &fresh}).IsSuccess(), "no placement state: nothing placed")
	assert.True(t, Tolerates([]virtkit.Toleration{{Operator: virtkit.TolerationOpExists}}, virtkit.Taint{Key: "x", Effect: virtkit.TaintEffectNoExecute}))
}

func TestCycleStateEachPlaced(t *testing.T) {
	var seen []string
	probe := preFilterFunc{filterFunc: filterFunc{"Probe", func(*NodeInfo) *Status { return nil }}, pre: func(s *CycleState) *Status {
		sel := labels.SelectorFromSet(labels.Set{"app": "db"})
		s.EachPlaced([]string{"default"}, sel, func(v PlacedVMI) bool {
			seen = append(seen, v.Name+"@"+v.Nodes[0])
			return true
		})
		return nil
	}}
	f, err := NewFramework(Profile{Filters: []FilterPlugin{probe}}, Options{})
	require.NoError(t, err)
	other := mkVMI("o", "1", "1Gi", label("app", "db"), on("n1"))
	other.Namespace = "other"
	placed := list(mkVMI("db1", "1", "1Gi", label("app", "db"), on("n1")), mkVMI("web", "1", "1Gi", label("app", "web"), on("n1")), other)
	_, err = f.Schedule(context.Background(), mkVMI("a", "1", "1Gi"), []virtkit.Node{mkNode("n1", "4", "8Gi")}, placed)
	require.NoError(t, err)
	assert.Equal(t, []string{"db1@n1"}, seen)

	seen = nil
	p := f.NewPlacements()
	for _, v := range placed {
		p.Observe(v)
	}
	_, err = p.Schedule(context.Background(), mkVMI("a", "1", "1Gi"), []virtkit.Node{mkNode("n1", "4", "8Gi")})
	require.NoError(t, err)
	assert.Equal(t, []string{"db1@n1"}, seen, "the incremental state answers alike")
}

func TestPodTopologySpread(t *testing.T) {
	nodes := []virtkit.Node{
		mkNode("a1", "8", "16Gi", withLabel("zone", "a")),
		mkNode("a2", "8", "16Gi", withLabel("zone", "a")),
		mkNode("b1", "8", "16Gi", withLabel("zone", "b")),
		mkNode("c1", "8", "16Gi", withLabel("zone", "c"), withLabel("pool", "slow")),
		mkNode("x1", "8", "16Gi"),
	}
	web := func(name, node string) *virtkit.VirtualMachineInstance {
		return mkVMI(name, "1", "1Gi", label("app", "web"), on(node))
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	tests := []struct {
		name    string
		c       TopologySpreadConstraint
		vmi     *virtkit.VirtualMachineInstance
		placed  []*virtkit.VirtualMachineInstance
		cordon  string
		want    string
		wantErr string
	}{
		{
			name: "skew 1 keeps the crowded zones out", c: TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone", LabelSelector: sel},
			vmi: mkVMI("new", "1", "1Gi", label("app", "web")), placed: list(web("w1", "a1"), web("w2", "b1")),
			want: "c1",
		},
		{
			name: "the nil selector means the VMI's own labels", c: TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone"},
			vmi: mkVMI("new", "1", "1Gi", label("app", "web")), placed: list(web("w1", "a1"), web("w2", "c1")),
			want: "b1",
		},
		{
			name: "other namespaces and labels do not count", c: TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone", LabelSelector: sel},
			vmi: mkVMI("new", "1", "1Gi", label("app", "web")),
			placed: list(web("w1", "b1"), web("w2", "c1"), mkVMI("db", "1", "1Gi", label("app", "db"), on("a1")), func() *virtkit.VirtualMachineInstance {
				v := web("w3", "a2")
				v.Namespace = "other"
				return v
			}()),
			want: "a1",
		},
		{
			name: "node affinity narrows the eligible domains", c: TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone", LabelSelector: sel},
			vmi:    mkVMI("new", "1", "1Gi", label("app", "web"), affinity(requiredNode(virtkit.NodeSelectorRequirement{Key: "pool", Operator: virtkit.NodeSelectorOpDoesNotExist}))),
			placed: list(web("w1", "a1"), web("w2", "c1"), web("w3", "c1")),
			want:   "b1",
		},
		{
			name: "nothing fits", c: TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone", LabelSelector: sel},
			vmi: mkVMI("new", "1", "1Gi", label("app", "web")), placed: list(web("w1", "a1"), web("w2", "b1")), cordon: "c1",
			wantErr: "0/5 nodes are available: 1 node(s) didn't match pod topology spread constraints (missing required label), 1 node(s) were unschedulable, 3 node(s) didn't match pod topology spread constraints.",
		},
		{
			name: "schedule anyway prefers the emptiest domain", c: TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: ScheduleAnyway, LabelSelector: sel},
			vmi: mkVMI("new", "1", "1Gi", label("app", "web")), placed: list(web("w1", "a1"), web("w2", "a2"), web("w3", "b1"), web("w4", "b1"), web("w5", "x1"), web("w6", "x1")),
			want: "c1",
		},
		{
			name: "bad skew", c: TopologySpreadConstraint{TopologyKey: "zone"},
			vmi: mkVMI("new", "1", "1Gi"), wantErr: "PodTopologySpread.constraints[0].maxSkew: must be at least 1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spread := &PodTopologySpread{Constraints: []TopologySpreadConstraint{tt.c}}
			p := DefaultProfile(Options{})
			p.Filters = append(p.Filters, spread)
			p.Scores = append(p.Scores, spread)
			p.Weights = map[string]float64{NamePodTopologySpread: 10}
			f, err := NewFramework(p, Options{Clock: testingclock.NewFakePassiveClock(now)})
			require.NoError(t, err)
			nodes := append([]virtkit.Node(nil), nodes...)
			for i := range nodes {
				if nodes[i].Name == tt.cordon {
					nodes[i].Spec.Unschedulable = true
				}
			}
			got, err := f.Schedule(context.Background(), tt.vmi, nodes, tt.placed)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
