package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
)

// Every decision of the table decides the same through the incremental
// state fed with the same VMIs.
func TestPlacementsDecideAlike(t *testing.T) {
	s := New(Options{Clock: testingclock.NewFakePassiveClock(now)})
	for _, tt := range scheduleCases() {
		t.Run(tt.name, func(t *testing.T) {
			p := s.NewPlacements()
			for _, v := range tt.placed {
				if v != nil && (v.Namespace != tt.vmi.Namespace || v.Name != tt.vmi.Name) {
					p.Observe(v)
				}
			}
			got, err := p.Schedule(context.Background(), tt.vmi, tt.nodes)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrUnschedulable)
				assert.Equal(t, tt.wantErr, err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.False(t, p.Current(tt.vmi), "the decision is recorded on the node, which the unplaced VMI does not say")
			placed := tt.vmi.DeepCopy()
			placed.Status.NodeName, placed.Status.Phase = got, virtkit.Scheduled
			assert.True(t, p.Current(placed))
		})
	}
}

// After any sequence of observations, forgets, migrations and relabels, the
// incremental state decides exactly as a fresh Schedule over the VMIs it
// should hold.
func TestPlacementsIncrementalEqualsFresh(t *testing.T) {
	s := New(Options{Clock: testingclock.NewFakePassiveClock(now)})
	nodes := []virtkit.Node{
		mkNode("n1", "8", "16Gi", withLabel("zone", "a")),
		mkNode("n2", "8", "16Gi", withLabel("zone", "a")),
		mkNode("n3", "8", "16Gi", withLabel("zone", "b")),
		mkNode("n4", "8", "16Gi", withLabel("zone", "c")),
	}
	anti := &virtkit.Affinity{PodAntiAffinity: &virtkit.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []virtkit.PodAffinityTerm{vmiTermFor("app", "db", "zone")},
	}}
	prefer := &virtkit.Affinity{PodAffinity: &virtkit.PodAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []virtkit.WeightedPodAffinityTerm{{Weight: 10, PodAffinityTerm: vmiTermFor("app", "web", LabelHostname)}},
	}}
	required := &virtkit.Affinity{PodAffinity: &virtkit.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []virtkit.PodAffinityTerm{vmiTermFor("app", "cache", "zone")},
	}}
	rng := rand.New(rand.NewPCG(1, 2))
	p := s.NewPlacements()
	truth := map[string]*virtkit.VirtualMachineInstance{}
	apps := []string{"db", "web", "cache", "batch"}
	for step := range 800 {
		name := fmt.Sprintf("v%d", rng.IntN(60))
		switch op := rng.IntN(10); {
		case op < 6: // (re)place, relabel, finish
			v := mkVMI(name, fmt.Sprintf("%dm", 100+rng.IntN(900)), fmt.Sprintf("%dMi", 64+rng.IntN(2000)),
				label("app", apps[rng.IntN(len(apps))]), on(fmt.Sprintf("n%d", 1+rng.IntN(4))))
			switch rng.IntN(4) {
			case 0:
				v.Spec.Affinity = anti
			case 1:
				v.Status.Phase = virtkit.Succeeded
			case 2:
				v.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{TargetNode: fmt.Sprintf("n%d", 1+rng.IntN(4))}
			}
			p.Observe(v)
			truth[name] = v
		case op < 8:
			p.Forget("default", name)
			delete(truth, name)
		default: // a VMI that holds nothing yet
			v := mkVMI(name, "1", "1Gi")
			p.Observe(v)
			truth[name] = v
		}
		var placed []*virtkit.VirtualMachineInstance
		for _, v := range truth {
			placed = append(placed, v)
		}
		for i, aff := range []*virtkit.Affinity{nil, anti, prefer, required} {
			probe := mkVMI(fmt.Sprintf("probe-%d", i), "2", "3Gi", label("app", apps[i]), affinity(aff))
			want, wantErr := s.Schedule(context.Background(), probe, nodes, placed)
			p.mu.Lock()
			got, gotErr := s.decide(context.Background(), probe, nodes, p)
			p.mu.Unlock()
			require.Equal(t, want, got, "step %d probe %d", step, i)
			if wantErr != nil {
				require.EqualError(t, gotErr, wantErr.Error(), "step %d probe %d", step, i)
			} else {
				require.NoError(t, gotErr, "step %d probe %d", step, i)
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	held := 0
	for _, v := range truth {
		if HoldsNode(v) {
			held++
		}
	}
	assert.Len(t, p.vmis, held)
}

// Decisions made in parallel never over-commit a node: each reserves its
// node before the next one decides.
func TestPlacementsParallelDecisionsDoNotOvercommit(t *testing.T) {
	s := New(Options{Clock: testingclock.NewFakePassiveClock(now)})
	// Room for 4 + 3 + 2 VMIs of 1 cpu / 1Gi.
	nodes := []virtkit.Node{mkNode("n1", "4", "64Gi"), mkNode("n2", "3", "64Gi"), mkNode("n3", "2", "64Gi")}
	p := s.NewPlacements()
	const vmis = 40
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		perNode = map[string]int{}
		refused int
	)
	start := make(chan struct{})
	for i := range vmis {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			node, err := p.Schedule(context.Background(), mkVMI(fmt.Sprintf("v%d", i), "1", "1Gi"), nodes)
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, ErrUnschedulable) {
				refused++
				return
			}
			assert.NoError(t, err)
			perNode[node]++
		}()
	}
	close(start)
	wg.Wait()
	assert.Equal(t, map[string]int{"n1": 4, "n2": 3, "n3": 2}, perNode)
	assert.Equal(t, vmis-9, refused)
	assert.Equal(t, 9, p.Len())
}

// A failed decision leaves the state as it was, and Forget releases what a
// VMI held.
func TestPlacementsForgetReleases(t *testing.T) {
	s := New(Options{Clock: testingclock.NewFakePassiveClock(now)})
	nodes := []virtkit.Node{mkNode("n1", "2", "4Gi")}
	p := s.NewPlacements()
	_, err := p.Schedule(context.Background(), mkVMI("a", "2", "1Gi"), nodes)
	require.NoError(t, err)
	_, err = p.Schedule(context.Background(), mkVMI("b", "1", "1Gi"), nodes)
	require.ErrorIs(t, err, ErrUnschedulable)
	assert.Equal(t, 1, p.Len())
	p.Forget("default", "a")
	got, err := p.Schedule(context.Background(), mkVMI("b", "1", "1Gi"), nodes)
	require.NoError(t, err)
	assert.Equal(t, "n1", got)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.Schedule(ctx, mkVMI("c", "1", "1Gi"), nodes)
	require.ErrorIs(t, err, context.Canceled)
}

func ExampleDefault_NewPlacements() {
	s := New(Options{})
	nodes := []virtkit.Node{{
		ObjectMeta: metav1.ObjectMeta{Name: "host-1"},
		Status: virtkit.NodeStatus{
			Allocatable: virtkit.ResourceList{virtkit.ResourceCPU: resource.MustParse("2"), virtkit.ResourceMemory: resource.MustParse("4Gi")},
			Conditions:  []virtkit.Condition{{Type: virtkit.NodeReady, Status: virtkit.ConditionTrue}},
		},
	}}
	p := s.NewPlacements()
	// Feed it every VMI change (a watch does); here, one running VMI.
	running := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "old"}}
	running.Spec.Domain.Resources.Requests = virtkit.ResourceList{virtkit.ResourceCPU: resource.MustParse("1")}
	running.Status.NodeName, running.Status.Phase = "host-1", virtkit.Running
	p.Observe(running)

	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "new"}}
	vmi.Spec.Domain.Resources.Requests = virtkit.ResourceList{virtkit.ResourceCPU: resource.MustParse("2")}
	_, err := p.Schedule(context.Background(), vmi, nodes)
	fmt.Println(err)
	// Output: 0/1 nodes are available: 1 Insufficient cpu.
}
