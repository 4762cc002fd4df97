package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

// scaleBudgetFile records, per store backend, the most store writes and
// reconciles one VM may cost from its create to its VMI Running (and the
// VM's status catching up). The figures are counts, not times: a loaded
// machine changes how events coalesce, never what the protocol writes, so
// the budget cannot flake under load. Lower a figure when a change makes
// the path cheaper; raise one only with the reason in the commit.
const scaleBudgetFile = "testdata/scale-budget.json"

// scaleBudget is one backend's budget, per VM.
type scaleBudget struct {
	// VMs and Nodes are the fleet the budget is measured on.
	VMs, Nodes int
	// Writes are the VM and VMI writes per VM by kind and call
	// (Creates, Updates, StatusUpdates, UpdatesWithStatus, Deletes), the
	// user's VM create included. Total bounds their sum.
	Writes map[string]map[string]float64
	Total  float64
	// Reconciles per VM by controller ("node" sums the node agents);
	// ReconcilesTotal bounds every controller's and agent's sum. The
	// node-health, eviction and migration controllers reconcile on the
	// agents' heartbeats (one per node per 10 s), not per VM: their
	// budgets allow minutes of heartbeats. Writes are bounded by what the
	// protocol writes (8: the VM's copy of AgentConnected may be a write of
	// its own), not by the 7 a run usually counts, so that how fast the
	// guest agent connects cannot fail the test.
	Reconciles      map[string]float64
	ReconcilesTotal float64
	// Conflicts bounds writes refused as stale, per VM.
	Conflicts float64
}

func loadScaleBudget(t *testing.T, backend string) scaleBudget {
	t.Helper()
	data, err := os.ReadFile(filepath.FromSlash(scaleBudgetFile))
	require.NoError(t, err)
	var all map[string]scaleBudget
	require.NoError(t, json.Unmarshal(data, &all))
	b, ok := all[backend]
	require.True(t, ok, "%s has no budget for %q", scaleBudgetFile, backend)
	return b
}

// budgetRun is what one create-to-Running run counted.
type budgetRun struct {
	writes     map[string]cluster.WriteCounts
	reconciles map[string]uint64
}

// runBudgetFleet runs a cluster of simulated hosts on st, creates b.VMs VMs
// (runStrategy Always), waits for every VMI to run and for VM and VMI
// writes to stop, and returns the counts. The node agents' timed status
// refresh is an hour away, so every reconcile counted comes from an event.
func runBudgetFleet(t *testing.T, st store.Store, b scaleBudget) budgetRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	counting := cluster.NewCountingStore(st)
	perHost := b.VMs/b.Nodes + 1
	c, err := cluster.New(cluster.Options{
		Store: counting, Nodes: b.Nodes, Workers: 4,
		NodeAgent: node.Options{Workers: 4, StatusInterval: time.Hour, HeartbeatInterval: 10 * time.Second},
		NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
			return sim.New(sim.Options{Name: name, CPUs: max(8, perHost), MemoryBytes: uint64(max(8, perHost)) * 128 << 20}), nil
		},
	})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(runCtx) }()
	defer func() { stop(); <-done }()
	require.NoError(t, c.WaitNodesReady(ctx))

	names := make([]string, b.VMs)
	for i := range names {
		names[i] = fmt.Sprintf("vm-%04d", i)
	}
	_, _, err = cluster.MeasureCreateToRunning(ctx, counting, names, 8, func(ctx context.Context, name string) error {
		return c.Apply(ctx, cluster.ScaleVM(name))
	})
	require.NoError(t, err)
	// The VM controller copies the VMIs' status after they run: count up
	// to the moment VM and VMI writes stop.
	vmWrites := func() uint64 {
		w := counting.Counts()
		return w[virtkit.KindVirtualMachine].Writes() + w[virtkit.KindVirtualMachineInstance].Writes()
	}
	last := vmWrites()
	for quiet := 0; quiet < 4; {
		select {
		case <-ctx.Done():
			t.Fatalf("VM and VMI writes never stopped: %v", ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
		if now := vmWrites(); now != last {
			last, quiet = now, 0
			continue
		}
		quiet++
	}
	run := budgetRun{writes: counting.Counts(), reconciles: map[string]uint64{}}
	for _, ctrl := range c.Controllers() {
		st := ctrl.Stats()
		run.reconciles[st.Name] += st.Reconciles
	}
	for _, n := range c.Nodes() {
		run.reconciles["node"] += n.Agent.Controller().Stats().Reconciles
	}
	return run
}

// checkBudget fails for every count over its budget and logs them all, so
// one run shows where a regression is.
func checkBudget(t *testing.T, b scaleBudget, r budgetRun) {
	t.Helper()
	per := func(n uint64) float64 { return float64(n) / float64(b.VMs) }
	var report []string
	over := func(what string, got, budget float64) {
		mark := ""
		if got > budget {
			mark = "  OVER BUDGET"
			t.Errorf("%s: %.3f per VM exceeds the recorded budget of %.3f (%s)", what, got, budget, scaleBudgetFile)
		}
		report = append(report, fmt.Sprintf("%-48s %7.3f  budget %6.3f%s", what, got, budget, mark))
	}
	var total, conflicts uint64
	for _, kind := range []string{virtkit.KindVirtualMachine, virtkit.KindVirtualMachineInstance} {
		w := r.writes[kind]
		total += w.Writes()
		conflicts += w.Conflicts
		calls := map[string]uint64{"Creates": w.Creates, "Updates": w.Updates, "StatusUpdates": w.StatusUpdates,
			"UpdatesWithStatus": w.UpdatesWithStatus, "Deletes": w.Deletes}
		for _, call := range []string{"Creates", "Updates", "StatusUpdates", "UpdatesWithStatus", "Deletes"} {
			over(kind+" "+call, per(calls[call]), b.Writes[kind][call])
		}
	}
	over("VM and VMI writes", per(total), b.Total)
	over("conflicting writes", per(conflicts), b.Conflicts)
	var sum uint64
	names := make([]string, 0, len(r.reconciles))
	for name, n := range r.reconciles {
		sum += n
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		budget, ok := b.Reconciles[name]
		if !ok {
			// Controllers off the create-to-Running path (snapshots,
			// exports...) may not reconcile at all.
			budget = 0
		}
		over("reconciles "+name, per(r.reconciles[name]), budget)
	}
	over("reconciles, all controllers and agents", per(sum), b.ReconcilesTotal)
	t.Logf("%d VMs on %d hosts, per VM:\n%s", b.VMs, b.Nodes, strings.Join(report, "\n"))
}

// The create-to-Running path's store writes and reconciles per VM stay
// within the budget recorded in testdata/scale-budget.json, on the memory
// store.
func TestScaleCountBudgetMemory(t *testing.T) {
	b := loadScaleBudget(t, "memory")
	st, err := store.NewMemoryWithOptions(store.Options{})
	require.NoError(t, err)
	checkBudget(t, b, runBudgetFleet(t, st, b))
}

// The same budget on a real (embedded) etcd: every write is an etcd
// transaction, every watch an etcd watch, so the etcd store's own write
// paths (one transaction for metadata and status, updates without a read)
// are held to it too.
func TestScaleCountBudgetEtcd(t *testing.T) {
	b := loadScaleBudget(t, "etcd")
	endpoints := etcdtest.StartServer(t)
	st, err := etcd.New(context.Background(), etcd.Options{Endpoints: endpoints, Prefix: "/budget"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	checkBudget(t, b, runBudgetFleet(t, st, b))
}
