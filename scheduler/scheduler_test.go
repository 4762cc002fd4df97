package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

type nodeOpt func(*virtkit.Node)

func mkNode(name, cpu, mem string, opts ...nodeOpt) virtkit.Node {
	hb := metav1.NewTime(now.Add(-10 * time.Second))
	n := virtkit.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status: virtkit.NodeStatus{
			Allocatable: virtkit.ResourceList{
				virtkit.ResourceCPU:    resource.MustParse(cpu),
				virtkit.ResourceMemory: resource.MustParse(mem),
			},
			Conditions:        []virtkit.Condition{{Type: virtkit.NodeReady, Status: virtkit.ConditionTrue}},
			LastHeartbeatTime: &hb,
		},
	}
	for _, o := range opts {
		o(&n)
	}
	return n
}

func withLabel(k, v string) nodeOpt { return func(n *virtkit.Node) { n.Labels[k] = v } }
func withTaint(k, v string, e virtkit.TaintEffect) nodeOpt {
	return func(n *virtkit.Node) {
		n.Spec.Taints = append(n.Spec.Taints, virtkit.Taint{Key: k, Value: v, Effect: e})
	}
}
func cordoned(n *virtkit.Node) { n.Spec.Unschedulable = true }
func notReady(n *virtkit.Node) { n.Status.Conditions[0].Status = virtkit.ConditionFalse }
func staleHeartbeat(n *virtkit.Node) {
	hb := metav1.NewTime(now.Add(-time.Hour))
	n.Status.LastHeartbeatTime = &hb
}

type vmiOpt func(*virtkit.VirtualMachineInstance)

func mkVMI(name, cpu, mem string, opts ...vmiOpt) *virtkit.VirtualMachineInstance {
	v := &virtkit.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{}},
	}
	v.Spec.Domain.Resources.Requests = virtkit.ResourceList{}
	if cpu != "" {
		v.Spec.Domain.Resources.Requests[virtkit.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		v.Spec.Domain.Resources.Requests[virtkit.ResourceMemory] = resource.MustParse(mem)
	}
	for _, o := range opts {
		o(v)
	}
	return v
}

func on(node string) vmiOpt {
	return func(v *virtkit.VirtualMachineInstance) {
		v.Status.NodeName = node
		v.Status.Phase = virtkit.Running
	}
}
func phase(p virtkit.VirtualMachineInstancePhase) vmiOpt {
	return func(v *virtkit.VirtualMachineInstance) { v.Status.Phase = p }
}
func label(k, val string) vmiOpt {
	return func(v *virtkit.VirtualMachineInstance) { v.Labels[k] = val }
}
func nodeSelector(k, val string) vmiOpt {
	return func(v *virtkit.VirtualMachineInstance) { v.Spec.NodeSelector = map[string]string{k: val} }
}
func tolerate(t virtkit.Toleration) vmiOpt {
	return func(v *virtkit.VirtualMachineInstance) { v.Spec.Tolerations = append(v.Spec.Tolerations, t) }
}
func affinity(a *virtkit.Affinity) vmiOpt {
	return func(v *virtkit.VirtualMachineInstance) { v.Spec.Affinity = a }
}

func requiredNode(exprs ...virtkit.NodeSelectorRequirement) *virtkit.Affinity {
	return &virtkit.Affinity{NodeAffinity: &virtkit.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &virtkit.NodeSelector{
			NodeSelectorTerms: []virtkit.NodeSelectorTerm{{MatchExpressions: exprs}},
		},
	}}
}

func vmiTermFor(key, val, topology string) virtkit.PodAffinityTerm {
	return virtkit.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{key: val}},
		TopologyKey:   topology,
	}
}

func list(vs ...*virtkit.VirtualMachineInstance) []*virtkit.VirtualMachineInstance { return vs }

// scheduleCase is one placement decision; TestSchedule runs them through
// Default.Schedule and TestPlacementsDecideAlike through Placements.
type scheduleCase struct {
	name    string
	vmi     *virtkit.VirtualMachineInstance
	nodes   []virtkit.Node
	placed  []*virtkit.VirtualMachineInstance
	want    string
	wantErr string // exact message when unschedulable
}

func scheduleCases() []scheduleCase {
	threeNodes := []virtkit.Node{
		mkNode("n1", "4", "8Gi"),
		mkNode("n2", "4", "8Gi"),
		mkNode("n3", "4", "8Gi"),
	}
	return []scheduleCase{
		{
			name:  "empty nodes tie broken by name",
			vmi:   mkVMI("a", "1", "1Gi"),
			nodes: threeNodes,
			want:  "n1",
		},
		{
			name:   "least allocated wins",
			vmi:    mkVMI("a", "1", "1Gi"),
			nodes:  threeNodes,
			placed: list(mkVMI("x", "2", "4Gi", on("n1")), mkVMI("y", "1", "1Gi", on("n2"))),
			want:   "n3",
		},
		{
			name:   "final VMIs release their resources",
			vmi:    mkVMI("a", "3", "6Gi"),
			nodes:  []virtkit.Node{mkNode("n1", "4", "8Gi")},
			placed: list(mkVMI("x", "2", "4Gi", on("n1"), phase(virtkit.Succeeded))),
			want:   "n1",
		},
		{
			name:    "insufficient memory everywhere",
			vmi:     mkVMI("a", "1", "16Gi"),
			nodes:   threeNodes,
			wantErr: "0/3 nodes are available: 3 Insufficient memory.",
		},
		{
			name:    "insufficient cpu and memory are both reported",
			vmi:     mkVMI("a", "8", "16Gi"),
			nodes:   []virtkit.Node{mkNode("n1", "4", "8Gi")},
			wantErr: "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory.",
		},
		{
			name:   "placed VMIs use up a node",
			vmi:    mkVMI("a", "1", "4Gi"),
			nodes:  []virtkit.Node{mkNode("n1", "4", "8Gi"), mkNode("n2", "1", "4Gi")},
			placed: list(mkVMI("x", "1", "6Gi", on("n1"))),
			want:   "n2",
		},
		{
			name:  "migration target holds resources",
			vmi:   mkVMI("a", "1", "6Gi"),
			nodes: []virtkit.Node{mkNode("n1", "4", "8Gi"), mkNode("n2", "4", "8Gi")},
			placed: list(mkVMI("x", "1", "6Gi", on("n1"), func(v *virtkit.VirtualMachineInstance) {
				v.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{TargetNode: "n2"}
			})),
			wantErr: "0/2 nodes are available: 2 Insufficient memory.",
		},
		{
			name: "mixed reasons are counted and sorted",
			vmi:  mkVMI("a", "1", "4Gi"),
			nodes: []virtkit.Node{
				mkNode("n1", "4", "2Gi"),
				mkNode("n2", "4", "8Gi", withTaint("kubevirt.io/drain", "", virtkit.TaintEffectNoSchedule)),
				mkNode("n3", "4", "8Gi", withTaint("kubevirt.io/drain", "", virtkit.TaintEffectNoSchedule)),
			},
			wantErr: "0/3 nodes are available: 1 Insufficient memory, 2 node(s) had untolerated taint {kubevirt.io/drain: }.",
		},
		{
			name:    "not ready and stale heartbeat",
			vmi:     mkVMI("a", "1", "1Gi"),
			nodes:   []virtkit.Node{mkNode("n1", "4", "8Gi", notReady), mkNode("n2", "4", "8Gi", staleHeartbeat)},
			wantErr: "0/2 nodes are available: 2 node(s) were not ready.",
		},
		{
			name:    "cordoned node",
			vmi:     mkVMI("a", "1", "1Gi"),
			nodes:   []virtkit.Node{mkNode("n1", "4", "8Gi", cordoned)},
			wantErr: "0/1 nodes are available: 1 node(s) were unschedulable.",
		},
		{
			name: "cordoned node tolerated",
			vmi: mkVMI("a", "1", "1Gi", tolerate(virtkit.Toleration{
				Key: TaintNodeUnschedulable, Operator: virtkit.TolerationOpExists, Effect: virtkit.TaintEffectNoSchedule,
			})),
			nodes: []virtkit.Node{mkNode("n1", "4", "8Gi", cordoned)},
			want:  "n1",
		},
		{
			name: "NoExecute taint tolerated by key and value",
			vmi: mkVMI("a", "1", "1Gi", tolerate(virtkit.Toleration{
				Key: "dedicated", Operator: virtkit.TolerationOpEqual, Value: "vms",
			})),
			nodes: []virtkit.Node{mkNode("n1", "4", "8Gi", withTaint("dedicated", "vms", virtkit.TaintEffectNoExecute))},
			want:  "n1",
		},
		{
			name: "toleration with wrong value",
			vmi: mkVMI("a", "1", "1Gi", tolerate(virtkit.Toleration{
				Key: "dedicated", Value: "db",
			})),
			nodes:   []virtkit.Node{mkNode("n1", "4", "8Gi", withTaint("dedicated", "vms", virtkit.TaintEffectNoSchedule))},
			wantErr: "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: vms}.",
		},
		{
			name:  "tolerate everything",
			vmi:   mkVMI("a", "1", "1Gi", tolerate(virtkit.Toleration{Operator: virtkit.TolerationOpExists})),
			nodes: []virtkit.Node{mkNode("n1", "4", "8Gi", withTaint("a", "b", virtkit.TaintEffectNoSchedule))},
			want:  "n1",
		},
		{
			name:  "PreferNoSchedule only lowers the score",
			vmi:   mkVMI("a", "1", "1Gi"),
			nodes: []virtkit.Node{mkNode("n1", "4", "8Gi", withTaint("spot", "", virtkit.TaintEffectPreferNoSchedule)), mkNode("n2", "2", "4Gi")},
			want:  "n2",
		},
		{
			name:  "nodeSelector",
			vmi:   mkVMI("a", "1", "1Gi", nodeSelector("disk", "ssd")),
			nodes: []virtkit.Node{mkNode("n1", "4", "8Gi"), mkNode("n2", "4", "8Gi", withLabel("disk", "ssd"))},
			want:  "n2",
		},
		{
			name:    "nodeSelector matches nothing",
			vmi:     mkVMI("a", "1", "1Gi", nodeSelector("disk", "ssd")),
			nodes:   threeNodes,
			wantErr: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
		},
		{
			name: "required node affinity NotIn",
			vmi: mkVMI("a", "1", "1Gi", affinity(requiredNode(virtkit.NodeSelectorRequirement{
				Key: LabelHostname, Operator: virtkit.NodeSelectorOpNotIn, Values: []string{"n1"},
			}))),
			nodes: []virtkit.Node{mkNode("n1", "4", "8Gi", withLabel(LabelHostname, "n1")), mkNode("n2", "4", "8Gi", withLabel(LabelHostname, "n2"))},
			want:  "n2",
		},
		{
			name: "required node affinity matchFields metadata.name",
			vmi: mkVMI("a", "1", "1Gi", affinity(&virtkit.Affinity{NodeAffinity: &virtkit.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &virtkit.NodeSelector{NodeSelectorTerms: []virtkit.NodeSelectorTerm{
					{MatchFields: []virtkit.NodeSelectorRequirement{{Key: "metadata.name", Operator: virtkit.NodeSelectorOpIn, Values: []string{"n3"}}}},
				}},
			}})),
			nodes: threeNodes,
			want:  "n3",
		},
		{
			name: "required node affinity Gt",
			vmi: mkVMI("a", "1", "1Gi", affinity(requiredNode(virtkit.NodeSelectorRequirement{
				Key: "cores", Operator: virtkit.NodeSelectorOpGt, Values: []string{"16"},
			}))),
			nodes: []virtkit.Node{mkNode("n1", "4", "8Gi", withLabel("cores", "8")), mkNode("n2", "4", "8Gi", withLabel("cores", "32"))},
			want:  "n2",
		},
		{
			name: "preferred node affinity beats emptier node",
			vmi: mkVMI("a", "1", "1Gi", affinity(&virtkit.Affinity{NodeAffinity: &virtkit.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []virtkit.PreferredSchedulingTerm{{
					Weight:     50,
					Preference: virtkit.NodeSelectorTerm{MatchExpressions: []virtkit.NodeSelectorRequirement{{Key: "zone", Operator: virtkit.NodeSelectorOpIn, Values: []string{"b"}}}},
				}},
			}})),
			nodes:  []virtkit.Node{mkNode("n1", "4", "8Gi", withLabel("zone", "a")), mkNode("n2", "4", "8Gi", withLabel("zone", "b"))},
			placed: list(mkVMI("x", "1", "2Gi", on("n2"))),
			want:   "n2",
		},
		{
			name: "required anti-affinity on hostname spreads",
			vmi: mkVMI("a", "1", "1Gi", label("app", "db"), affinity(&virtkit.Affinity{PodAntiAffinity: &virtkit.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []virtkit.PodAffinityTerm{vmiTermFor("app", "db", LabelHostname)},
			}})),
			nodes:  threeNodes,
			placed: list(mkVMI("x", "1", "1Gi", label("app", "db"), on("n1")), mkVMI("y", "1", "1Gi", label("app", "db"), on("n2"))),
			want:   "n3",
		},
		{
			name: "required anti-affinity exhausted",
			vmi: mkVMI("a", "1", "1Gi", label("app", "db"), affinity(&virtkit.Affinity{PodAntiAffinity: &virtkit.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []virtkit.PodAffinityTerm{vmiTermFor("app", "db", LabelHostname)},
			}})),
			nodes:   []virtkit.Node{mkNode("n1", "4", "8Gi")},
			placed:  list(mkVMI("x", "1", "1Gi", label("app", "db"), on("n1"))),
			wantErr: "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules.",
		},
		{
			name: "anti-affinity in another namespace does not count",
			vmi: mkVMI("a", "1", "1Gi", affinity(&virtkit.Affinity{PodAntiAffinity: &virtkit.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []virtkit.PodAffinityTerm{vmiTermFor("app", "db", LabelHostname)},
			}})),
			nodes: []virtkit.Node{mkNode("n1", "4", "8Gi")},
			placed: list(mkVMI("x", "1", "1Gi", label("app", "db"), on("n1"), func(v *virtkit.VirtualMachineInstance) {
				v.Namespace = "other"
			})),
			want: "n1",
		},
		{
			name: "existing VMI's anti-affinity repels (symmetry)",
			vmi:  mkVMI("a", "1", "1Gi", label("app", "web")),
			nodes: []virtkit.Node{
				mkNode("n1", "8", "16Gi"),
				mkNode("n2", "4", "8Gi"),
			},
			placed: list(mkVMI("x", "1", "1Gi", on("n1"), affinity(&virtkit.Affinity{PodAntiAffinity: &virtkit.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []virtkit.PodAffinityTerm{vmiTermFor("app", "web", LabelHostname)},
			}})), mkVMI("y", "2", "4Gi", on("n2"))),
			want: "n2",
		},
		{
			name: "required affinity by zone label",
			vmi: mkVMI("a", "1", "1Gi", affinity(&virtkit.Affinity{PodAffinity: &virtkit.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []virtkit.PodAffinityTerm{vmiTermFor("app", "cache", "zone")},
			}})),
			nodes: []virtkit.Node{
				mkNode("n1", "4", "8Gi", withLabel("zone", "a")),
				mkNode("n2", "4", "8Gi", withLabel("zone", "b")),
				mkNode("n3", "4", "8Gi", withLabel("zone", "b")),
			},
			placed: list(mkVMI("x", "3", "6Gi", label("app", "cache"), on("n2"))),
			want:   "n3",
		},
		{
			name: "required affinity with no matching VMI anywhere",
			vmi: mkVMI("a", "1", "1Gi", affinity(&virtkit.Affinity{PodAffinity: &virtkit.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []virtkit.PodAffinityTerm{vmiTermFor("app", "cache", LabelHostname)},
			}})),
			nodes:   threeNodes,
			wantErr: "0/3 nodes are available: 3 node(s) didn't match pod affinity rules.",
		},
		{
			name: "first VMI of a self-selecting group may go anywhere",
			vmi: mkVMI("a", "1", "1Gi", label("app", "cache"), affinity(&virtkit.Affinity{PodAffinity: &virtkit.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []virtkit.PodAffinityTerm{vmiTermFor("app", "cache", LabelHostname)},
			}})),
			nodes: threeNodes,
			want:  "n1",
		},
		{
			name: "preferred affinity pulls towards a peer",
			vmi: mkVMI("a", "1", "1Gi", affinity(&virtkit.Affinity{PodAffinity: &virtkit.PodAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []virtkit.WeightedPodAffinityTerm{{
					Weight: 100, PodAffinityTerm: vmiTermFor("app", "cache", LabelHostname),
				}},
			}})),
			nodes:  threeNodes,
			placed: list(mkVMI("x", "1", "2Gi", label("app", "cache"), on("n3"))),
			want:   "n3",
		},
		{
			name: "preferred anti-affinity pushes away",
			vmi: mkVMI("a", "1", "1Gi", affinity(&virtkit.Affinity{PodAntiAffinity: &virtkit.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []virtkit.WeightedPodAffinityTerm{{
					Weight: 100, PodAffinityTerm: vmiTermFor("app", "db", LabelHostname),
				}},
			}})),
			nodes:  []virtkit.Node{mkNode("n1", "16", "64Gi"), mkNode("n2", "4", "8Gi")},
			placed: list(mkVMI("x", "1", "1Gi", label("app", "db"), on("n1"))),
			want:   "n2",
		},
		{
			name:    "no nodes",
			vmi:     mkVMI("a", "1", "1Gi"),
			wantErr: "0/0 nodes are available: no nodes registered.",
		},
		{
			name:   "the VMI itself in placed is ignored",
			vmi:    mkVMI("a", "3", "6Gi"),
			nodes:  []virtkit.Node{mkNode("n1", "4", "8Gi")},
			placed: list(mkVMI("a", "3", "6Gi", on("n1"))),
			want:   "n1",
		},
	}
}

func TestSchedule(t *testing.T) {
	s := New(Options{Clock: testingclock.NewFakePassiveClock(now)})
	for _, tt := range scheduleCases() {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Schedule(context.Background(), tt.vmi, tt.nodes, tt.placed)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrUnschedulable)
				assert.Equal(t, tt.wantErr, err.Error())
				var ue *UnschedulableError
				require.True(t, errors.As(err, &ue))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestScheduleInvalidSpec(t *testing.T) {
	tests := []struct {
		name string
		aff  *virtkit.Affinity
		path string
	}{
		{
			name: "bad operator",
			aff:  requiredNode(virtkit.NodeSelectorRequirement{Key: "a", Operator: "Near"}),
			path: "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator",
		},
		{
			name: "In without values",
			aff:  requiredNode(virtkit.NodeSelectorRequirement{Key: "a", Operator: virtkit.NodeSelectorOpIn}),
			path: "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]",
		},
		{
			name: "missing topology key",
			aff: &virtkit.Affinity{PodAntiAffinity: &virtkit.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []virtkit.PodAffinityTerm{{LabelSelector: &metav1.LabelSelector{}}},
			}},
			path: "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
		},
		{
			name: "namespace selector with labels",
			aff: &virtkit.Affinity{PodAffinity: &virtkit.PodAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []virtkit.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: virtkit.PodAffinityTerm{
					TopologyKey: LabelHostname, NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
				}}},
			}},
			path: "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.namespaceSelector",
		},
	}
	s := New(Options{Clock: testingclock.NewFakePassiveClock(now)})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Schedule(context.Background(), mkVMI("a", "1", "1Gi", affinity(tt.aff)), []virtkit.Node{mkNode("n1", "4", "8Gi")}, nil)
			require.ErrorIs(t, err, ErrInvalidSpec)
			assert.Contains(t, err.Error(), tt.path+":")
		})
	}
}

func TestScheduleHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := New(Options{}).Schedule(ctx, mkVMI("a", "1", "1Gi"), []virtkit.Node{mkNode("n1", "4", "8Gi")}, nil)
	require.ErrorIs(t, err, context.Canceled)
}

func TestRequests(t *testing.T) {
	guest := resource.MustParse("2Gi")
	tests := []struct {
		name     string
		res      virtkit.ResourceRequirements
		memory   *virtkit.Memory
		cpu, mem string
	}{
		{"requests", virtkit.ResourceRequirements{Requests: virtkit.ResourceList{virtkit.ResourceCPU: resource.MustParse("500m"), virtkit.ResourceMemory: resource.MustParse("1Gi")}}, nil, "500m", "1Gi"},
		{"limits only", virtkit.ResourceRequirements{Limits: virtkit.ResourceList{virtkit.ResourceCPU: resource.MustParse("2"), virtkit.ResourceMemory: resource.MustParse("3Gi")}}, nil, "2", "3Gi"},
		{"memory.guest", virtkit.ResourceRequirements{}, &virtkit.Memory{Guest: &guest}, "", "2Gi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &virtkit.VirtualMachineInstance{}
			v.Spec.Domain.Resources = tt.res
			v.Spec.Domain.Memory = tt.memory
			got := Requests(v)
			if tt.cpu == "" {
				assert.NotContains(t, got, virtkit.ResourceCPU)
			} else {
				q := got[virtkit.ResourceCPU]
				assert.Zero(t, q.Cmp(resource.MustParse(tt.cpu)), "cpu %s", q.String())
			}
			q := got[virtkit.ResourceMemory]
			assert.Zero(t, q.Cmp(resource.MustParse(tt.mem)), "memory %s", q.String())
		})
	}
}

func TestNodesHeldBy(t *testing.T) {
	tests := []struct {
		name string
		vmi  *virtkit.VirtualMachineInstance
		want []string
	}{
		{"pending", mkVMI("a", "", ""), nil},
		{"running", mkVMI("a", "", "", on("n1")), []string{"n1"}},
		{"final", mkVMI("a", "", "", on("n1"), phase(virtkit.Failed)), nil},
		{"migrating", mkVMI("a", "", "", on("n1"), func(v *virtkit.VirtualMachineInstance) {
			v.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{TargetNode: "n2"}
		}), []string{"n1", "n2"}},
		{"migration done", mkVMI("a", "", "", on("n2"), func(v *virtkit.VirtualMachineInstance) {
			v.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{TargetNode: "n2", SourceNode: "n1", Completed: true}
		}), []string{"n2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, NodesHeldBy(tt.vmi))
		})
	}
}

// benchFleet is placedCount VMIs spread over four big nodes.
func benchFleet(placedCount int) ([]virtkit.Node, []*virtkit.VirtualMachineInstance) {
	nodes := []virtkit.Node{mkNode("n1", "1000", "1000Gi"), mkNode("n2", "1000", "1000Gi"), mkNode("n3", "1000", "1000Gi"), mkNode("n4", "1000", "1000Gi")}
	var placed []*virtkit.VirtualMachineInstance
	for i := range placedCount {
		p := mkVMI(fmt.Sprintf("p%d", i), "10m", "10Mi", label("app", "x"), on(fmt.Sprintf("n%d", i%4+1)))
		p.UID = types.UID(fmt.Sprintf("uid-%d", i))
		p.ResourceVersion = "1"
		placed = append(placed, p)
	}
	return nodes, placed
}

// BenchmarkSchedule is the stateless Schedule, which builds the state from
// the placed list every call (O(placed)).
func BenchmarkSchedule(b *testing.B) {
	for _, placedCount := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("nodes=4/placed=%d", placedCount), func(b *testing.B) {
			nodes, placed := benchFleet(placedCount)
			vmi := mkVMI("new", "1", "1Gi")
			s := New(Options{Clock: testingclock.NewFakePassiveClock(now)})
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Schedule(context.Background(), vmi, nodes, placed); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPlacementsSchedule is one decision of the incremental state (and
// the release of its reservation), for a plain VMI and for one with
// anti-affinity against a label a tenth of the fleet carries.
func BenchmarkPlacementsSchedule(b *testing.B) {
	anti := &virtkit.Affinity{PodAntiAffinity: &virtkit.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []virtkit.PodAffinityTerm{vmiTermFor("tier", "db", LabelHostname)},
	}}
	for _, placedCount := range []int{1000, 10000} {
		for _, tc := range []struct {
			name string
			vmi  *virtkit.VirtualMachineInstance
		}{
			{"plain", mkVMI("new", "1", "1Gi")},
			{"anti-affinity", mkVMI("new", "1", "1Gi", affinity(anti))},
		} {
			b.Run(fmt.Sprintf("nodes=4/placed=%d/%s", placedCount, tc.name), func(b *testing.B) {
				nodes, placed := benchFleet(placedCount)
				s := New(Options{Clock: testingclock.NewFakePassiveClock(now)})
				p := s.NewPlacements()
				for i, v := range placed {
					if i%10 == 0 {
						v.Labels["tier"] = "db"
					}
					p.Observe(v)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := p.Schedule(context.Background(), tc.vmi, nodes); err != nil {
						b.Fatal(err)
					}
					p.Forget(tc.vmi.Namespace, tc.vmi.Name)
				}
			})
		}
	}
}
