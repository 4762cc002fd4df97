package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// virtualOutcome is everything a virtual-time scenario decides: where each
// VMI ran, its phase, and how the migration went, with its timing read
// from the virtual clock.
type virtualOutcome struct {
	Placements      map[string]string // VMI -> node before the migration
	Phases          map[string]virtkit.VirtualMachineInstancePhase
	AllRunningAfter time.Duration // virtual time from apply to every VMI Running
	MigratedVMI     string
	Source, Target  string
	MigrationPhase  virtkit.VirtualMachineInstanceMigrationPhase
	MigrationTook   time.Duration // virtual time from the migration's create to its final phase
	NodeAfter       string        // the migrated VMI's node at the end
	MigrationState  string        // status.migrationState (JSON, uids blanked)
	End             time.Time     // the virtual clock at the end
}

var virtualStart = time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)

// runVirtualScenario runs vms VMs on two simulated hosts on virtual time,
// live-migrates one of them and reports the outcome.
func runVirtualScenario(ctx context.Context, vms, workers int) (virtualOutcome, error) {
	var out virtualOutcome
	clk := sim.NewVirtualClock(virtualStart)
	network := sim.NewNetwork()
	var hosts []*sim.Host
	c, err := cluster.New(cluster.Options{
		Clock:   clk,
		Nodes:   2,
		Workers: workers,
		NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
			h := sim.New(sim.Options{Name: name, Clock: clk, CPUs: 4 * vms, MemoryBytes: uint64(vms) << 30})
			for _, other := range hosts {
				if err := network.Connect(h, other, sim.Link{Bandwidth: 125_000_000}); err != nil {
					return nil, err
				}
			}
			hosts = append(hosts, h)
			return h, nil
		},
		NodeAgent: node.Options{Workers: workers},
	})
	if err != nil {
		return out, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	defer func() { cancel(); <-done }()
	if err := c.Settle(ctx); err != nil {
		return out, err
	}

	objs := make([]virtkit.Object, 0, vms)
	for i := range vms {
		objs = append(objs, virtualVM(fmt.Sprintf("vm-%03d", i)))
	}
	if err := c.Apply(ctx, objs...); err != nil {
		return out, err
	}
	applied := clk.Now()
	vmis, err := advanceUntil(ctx, c, time.Minute, func() (bool, []virtkit.VirtualMachineInstance, error) {
		var l virtkit.VirtualMachineInstanceList
		if err := c.Store().List(ctx, &l, store.ListOptions{Namespace: "vt"}); err != nil {
			return false, nil, err
		}
		running := 0
		for _, v := range l.Items {
			if v.Status.Phase == virtkit.Running {
				running++
			}
		}
		return running == vms, l.Items, nil
	})
	if err != nil {
		return out, fmt.Errorf("waiting for %d VMIs to run: %w", vms, err)
	}
	out.AllRunningAfter = clk.Since(applied)
	out.Placements = map[string]string{}
	out.Phases = map[string]virtkit.VirtualMachineInstancePhase{}
	for _, v := range vmis {
		out.Placements[v.Name] = v.Status.NodeName
		out.Phases[v.Name] = v.Status.Phase
	}

	// Migrate one guest that keeps writing memory while it moves.
	out.MigratedVMI = "vm-007"
	out.Source = out.Placements[out.MigratedVMI]
	h, _ := c.Node(out.Source).Hypervisor.(*sim.Host)
	if err := h.SetWorkload(node.DomainName("vt", out.MigratedVMI), sim.Workload{
		DirtyRate: 40 << 20, WorkingSet: 128 << 20, Shape: sim.ShapeUniform, CPUUsage: 0.5,
	}); err != nil {
		return out, err
	}
	mig, err := actions.Migrate(ctx, c.Store(), store.Key{Namespace: "vt", Name: out.MigratedVMI}, actions.MigrateOptions{})
	if err != nil {
		return out, err
	}
	began := clk.Now()
	final, err := advanceUntil(ctx, c, 10*time.Minute, func() (bool, *virtkit.VirtualMachineInstanceMigration, error) {
		m := &virtkit.VirtualMachineInstanceMigration{}
		if err := c.Store().Get(ctx, store.KeyOf(mig), m); err != nil {
			return false, nil, err
		}
		return m.IsFinal(), m, nil
	})
	if err != nil {
		return out, fmt.Errorf("waiting for the migration: %w", err)
	}
	out.MigrationTook = clk.Since(began)
	out.MigrationPhase = final.Status.Phase
	// Let the VMI catch up with the migration's end.
	if err := c.Advance(ctx, 5*time.Second); err != nil {
		return out, err
	}
	vmi := &virtkit.VirtualMachineInstance{}
	if err := c.Store().Get(ctx, store.Key{Namespace: "vt", Name: out.MigratedVMI}, vmi); err != nil {
		return out, err
	}
	out.NodeAfter = vmi.Status.NodeName
	if ms := vmi.Status.MigrationState; ms != nil {
		ms = ms.DeepCopy()
		ms.MigrationUID, ms.TargetPod, ms.SourcePod = "", "", ""
		b, err := json.Marshal(ms)
		if err != nil {
			return out, err
		}
		out.MigrationState = string(b)
		out.Target = ms.TargetNode
	}
	out.End = clk.Now()
	return out, nil
}

// advanceUntil advances the cluster's clock a second at a time until check
// holds, for at most limit of virtual time.
func advanceUntil[T any](ctx context.Context, c *cluster.Cluster, limit time.Duration, check func() (bool, T, error)) (T, error) {
	for waited := time.Duration(0); ; waited += time.Second {
		ok, v, err := check()
		if err != nil || ok {
			return v, err
		}
		if waited >= limit {
			return v, fmt.Errorf("not after %v of virtual time", limit)
		}
		if err := c.Advance(ctx, time.Second); err != nil {
			return v, err
		}
	}
}

func virtualVM(name string) *virtkit.VirtualMachine {
	always, no := virtkit.RunStrategyAlways, false
	mem := resource.MustParse("512Mi")
	return &virtkit.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "vt"},
		Spec: virtkit.VirtualMachineSpec{
			RunStrategy: &always,
			Template: &virtkit.VirtualMachineInstanceTemplateSpec{
				Spec: virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{
					Memory:  &virtkit.Memory{Guest: &mem},
					Devices: virtkit.Devices{AutoattachPodInterface: &no},
				}},
			},
		},
	}
}

// TestVirtualTimeScenarioRepeats runs a 100-VM cluster with a live
// migration on virtual time twice, with the default worker counts: both
// runs must decide the same placements, phases and migration, with the
// same virtual timings.
func TestVirtualTimeScenarioRepeats(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	first, err := runVirtualScenario(ctx, 100, 0)
	require.NoError(t, err)
	second, err := runVirtualScenario(ctx, 100, 0)
	require.NoError(t, err)

	assert.Len(t, first.Placements, 100)
	perNode := map[string]int{}
	for _, n := range first.Placements {
		perNode[n]++
	}
	assert.Len(t, perNode, 2, "both hosts run guests: %v", perNode)
	assert.Equal(t, virtkit.MigrationSucceeded, first.MigrationPhase)
	assert.NotEqual(t, first.Source, first.NodeAfter, "the migrated VMI moved")
	assert.Equal(t, first.Target, first.NodeAfter)
	assert.Positive(t, first.MigrationTook)
	assert.Equal(t, first, second, "a virtual-time scenario must repeat exactly")
	t.Logf("migration state: %s", first.MigrationState)
	t.Logf("100 VMIs Running after %v, migration %s -> %s took %v (virtual); clock ended at %v",
		first.AllRunningAfter, first.Source, first.Target, first.MigrationTook, first.End.Sub(virtualStart))
}

// BenchmarkVirtualTimeScenario is the wall time of one run of the
// 100-VM scenario with a migration on virtual time (start, boot, migrate,
// stop) with the default worker counts; virtual-s/op is how much virtual
// time the run covered and cpu-s/op the process CPU it took (the wall
// time on an idle machine; on a loaded one the wall time grows with the
// wait for a core).
func BenchmarkVirtualTimeScenario(b *testing.B) {
	for _, bc := range []struct {
		name    string
		workers int
	}{{"default-workers", 0}, {"workers=1", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			var virtual time.Duration
			cpu0 := cpuTime()
			for b.Loop() {
				out, err := runVirtualScenario(ctx, 100, bc.workers)
				if err != nil {
					b.Fatal(err)
				}
				if out.MigrationPhase != virtkit.MigrationSucceeded {
					b.Fatalf("migration %s", out.MigrationPhase)
				}
				virtual = out.End.Sub(virtualStart)
			}
			b.ReportMetric(virtual.Seconds(), "virtual-s/op")
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

func TestAdvanceAndSettleErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	real, err := cluster.New(cluster.Options{Nodes: 1})
	require.NoError(t, err)
	assert.ErrorIs(t, real.Advance(ctx, time.Second), cluster.ErrNotVirtual, "the real clock cannot be stepped")

	clk := sim.NewVirtualClock(virtualStart)
	c, err := cluster.New(cluster.Options{Nodes: 1, Clock: clk})
	require.NoError(t, err)
	assert.ErrorIs(t, c.Settle(ctx), cluster.ErrNotStarted)
	assert.ErrorIs(t, c.Advance(ctx, time.Second), cluster.ErrNotStarted)
	assert.Equal(t, virtualStart, clk.Now(), "time does not move for a cluster that is not running")

	// A cancelled context ends Settle while something keeps running.
	busy, stop := context.WithCancel(ctx)
	go func() {
		for busy.Err() == nil {
		}
	}()
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	assert.ErrorIs(t, c.Settle(short), context.DeadlineExceeded, "a busy goroutine keeps the process from settling")
	stop()
}
