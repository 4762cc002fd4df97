package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

const (
	vmCount = 50
	// Short liveness settings keep the test fast: heartbeats every 300 ms,
	// not ready after 4 s without one (margin for a starved process on a
	// busy CI machine), VMIs failed 2 s later, a dead leader replaced after
	// its 6 s lease. etcd's client renews a lease every third of its TTL
	// and gives it up when no renewal has been answered for a whole TTL:
	// a 2 s lease left about 1.3 s for a stall of the controller or of
	// etcd, which a 2-core machine running a CI build beside the test
	// exceeds now and then (the live leader then loses its lease and
	// exits); 6 s leaves 4 s and adds about 4 s to the failover.
	heartbeat         = "300ms"
	monitorGrace      = "4s"
	unresponsiveGrace = "2s"
	leaderTTL         = "6s"
	electionKey       = "/virtkit/leader/controller"
)

var nodeNames = []string{"node-a", "node-b", "node-c"}

func vmManifest(names ...string) string {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, `---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: %s
spec:
  runStrategy: Always
  template:
    spec:
      domain:
        memory:
          guest: 64Mi
        devices: {}
`, n)
	}
	return b.String()
}

func (c *testCluster) startController(id string) *proc {
	return c.start("controller-"+id, "controller", "--store", c.store, "--leader-id", id, "--leader-ttl", leaderTTL,
		"--node-monitor-grace", monitorGrace, "--unresponsive-grace", unresponsiveGrace)
}

func (c *testCluster) statePath(name string) string { return filepath.Join(c.dir, name+".state.json") }

func (c *testCluster) startNode(name string) *proc {
	return c.start(name, "node", "--name", name, "--store", c.store, "--hypervisor", "sim",
		"--sim-state", c.statePath(name), "--sim-cpus", "64", "--sim-memory", "64Gi",
		"--heartbeat-interval", heartbeat, "--status-interval", "2s")
}

// guests reads every node's sim state file: for each domain, the nodes
// holding it (active or defined).
func (c *testCluster) guests() map[string][]string {
	c.t.Helper()
	out := map[string][]string{}
	for _, n := range nodeNames {
		doms, err := sim.ReadState(c.statePath(n))
		require.NoError(c.t, err)
		for _, d := range doms {
			out[d.Name] = append(out[d.Name], n)
		}
	}
	return out
}

// converged checks the invariant the test cares about: every VM has
// exactly one VMI, Running on a live node, whose guest exists on that node
// and nowhere else; and no other guest exists anywhere.
func (c *testCluster) converged(wantVMs []string, liveNodes []string) (bool, string) {
	vms := c.vms()
	vmis := c.vmis()
	guests := c.guests()
	if len(vms) != len(wantVMs) {
		return false, fmt.Sprintf("%d VMs, want %d", len(vms), len(wantVMs))
	}
	byName := map[string]virtkit.VirtualMachineInstance{}
	for _, v := range vmis {
		byName[v.Name] = v
	}
	if len(vmis) != len(wantVMs) {
		return false, fmt.Sprintf("%d VMIs, want %d", len(vmis), len(wantVMs))
	}
	var problems []string
	for _, name := range wantVMs {
		vmi, ok := byName[name]
		dom := node.DomainName("default", name)
		switch {
		case !ok:
			problems = append(problems, name+": no VMI")
		case vmi.Status.Phase != virtkit.Running:
			problems = append(problems, fmt.Sprintf("%s: VMI %s on %q", name, vmi.Status.Phase, vmi.Status.NodeName))
		case !slices.Contains(liveNodes, vmi.Status.NodeName):
			problems = append(problems, fmt.Sprintf("%s: on %s, not a live node", name, vmi.Status.NodeName))
		case len(guests[dom]) != 1 || guests[dom][0] != vmi.Status.NodeName:
			problems = append(problems, fmt.Sprintf("%s: VMI on %s, guests on %v", name, vmi.Status.NodeName, guests[dom]))
		}
	}
	for dom, where := range guests {
		_, name, _ := node.SplitDomainName(dom)
		if !slices.Contains(wantVMs, name) {
			problems = append(problems, fmt.Sprintf("stray guest %s on %v", dom, where))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		if len(problems) > 8 {
			problems = append(problems[:8], fmt.Sprintf("... %d more", len(problems)-8))
		}
		return false, strings.Join(problems, "; ")
	}
	return true, ""
}

func vmiUIDs(vmis []virtkit.VirtualMachineInstance) map[string]types.UID {
	out := map[string]types.UID{}
	for _, v := range vmis {
		out[v.Name] = v.UID
	}
	return out
}

func perNode(vmis []virtkit.VirtualMachineInstance) map[string][]string {
	out := map[string][]string{}
	for _, v := range vmis {
		out[v.Status.NodeName] = append(out[v.Status.NodeName], v.Name)
	}
	return out
}

func TestMultiProcessFailover(t *testing.T) {
	c := newCluster(t)

	// Two controller replicas, three node agents, all separate processes.
	ctrls := map[string]*proc{"c1": c.startController("c1"), "c2": c.startController("c2")}
	nodes := map[string]*proc{}
	for _, n := range nodeNames {
		nodes[n] = c.startNode(n)
	}
	c.waitFor("three ready nodes", 30*time.Second, func() (bool, string) {
		l := &virtkit.NodeList{}
		require.NoError(t, c.st.List(t.Context(), l, store.ListOptions{}))
		ready := 0
		for _, n := range l.Items {
			if virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady) {
				ready++
			}
		}
		return ready == len(nodeNames), fmt.Sprintf("%d of %d nodes ready", ready, len(l.Items))
	})
	var leaderID string
	c.waitFor("a leader", 30*time.Second, func() (bool, string) {
		leaderID = c.leader(electionKey)
		return leaderID != "", "no election key"
	})
	standbyID := "c1"
	if leaderID == "c1" {
		standbyID = "c2"
	}
	c.waitFor("the leader's log to say it leads", 10*time.Second, func() (bool, string) {
		return ctrls[leaderID].logHas("leading"), ""
	})
	c.waitFor("the standby to log who leads", 10*time.Second, func() (bool, string) {
		return ctrls[standbyID].logHas("leader elected", "leader="+leaderID), ""
	})
	require.False(t, ctrls[standbyID].logHas("msg=leading"), "only one replica leads")

	// 50 VMs, applied by the CLI like a user would.
	var names []string
	for i := range vmCount {
		names = append(names, fmt.Sprintf("vm-%02d", i))
	}
	manifest := filepath.Join(c.dir, "vms.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(vmManifest(names...)), 0o644))
	out := c.run("apply", "-f", manifest, "--store", c.store)
	require.Equal(t, vmCount, strings.Count(out, " created"), out)

	c.waitFor("50 VMs running, one guest each", 90*time.Second, func() (bool, string) { return c.converged(names, nodeNames) })
	spread := perNode(c.vmis())
	for _, n := range nodeNames {
		assert.NotEmpty(t, spread[n], "VMIs spread over every node: %v", spread)
	}
	before := vmiUIDs(c.vmis())

	// --- kill -9 the leader: the standby takes over, nothing duplicated or lost.
	t.Logf("killing leader %s", leaderID)
	killedLeader := time.Now()
	ctrls[leaderID].kill9(t)
	c.waitFor("the standby to lead", 30*time.Second, func() (bool, string) {
		id := c.leader(electionKey)
		return id == standbyID && ctrls[standbyID].logHas("msg=leading"), "leader is " + id
	})
	t.Logf("standby %s leads %v after the kill", standbyID, time.Since(killedLeader).Round(100*time.Millisecond))
	c.waitFor("the same 50 VMIs after the failover", 30*time.Second, func() (bool, string) { return c.converged(names, nodeNames) })
	// The new leader acts: a VM created now runs.
	require.NoError(t, os.WriteFile(manifest, []byte(vmManifest("vm-after-failover")), 0o644))
	c.run("apply", "-f", manifest, "--store", c.store)
	names = append(names, "vm-after-failover")
	c.waitFor("the new leader to run a new VM", 60*time.Second, func() (bool, string) { return c.converged(names, nodeNames) })
	after := vmiUIDs(c.vmis())
	for name, uid := range before {
		assert.Equal(t, uid, after[name], "%s: VMI replaced by a failover", name)
	}

	// --- kill -9 a node agent: its VMIs fail with NodeUnresponsive and come back elsewhere.
	victim := nodeNames[0]
	victims := perNode(c.vmis())[victim]
	require.NotEmpty(t, victims)
	failed := map[string]bool{}
	stopWatch := c.watchVMIs(func(v *virtkit.VirtualMachineInstance) {
		if v.Status.Phase == virtkit.Failed && v.Status.Reason == virtkit.NodeUnresponsiveReason && v.Status.NodeName == victim {
			failed[v.Name] = true
		}
	})
	t.Logf("killing node %s with %d VMIs", victim, len(victims))
	killedNode := time.Now()
	nodes[victim].kill9(t)
	survivors := nodeNames[1:]
	c.waitFor("the victim's VMs running on the other nodes", 90*time.Second, func() (bool, string) {
		vmis := c.vmis()
		var wrong []string
		for _, v := range vmis {
			if v.Status.Phase != virtkit.Running || !slices.Contains(survivors, v.Status.NodeName) {
				wrong = append(wrong, fmt.Sprintf("%s:%s@%s", v.Name, v.Status.Phase, v.Status.NodeName))
			}
		}
		return len(vmis) == len(names) && len(wrong) == 0, fmt.Sprintf("%d VMIs, not running on a survivor: %v", len(vmis), wrong)
	})
	stopWatch()
	t.Logf("%d VMs running on the other nodes %v after the node kill (grace %s + %s)", len(victims),
		time.Since(killedNode).Round(100*time.Millisecond), monitorGrace, unresponsiveGrace)
	for _, name := range victims {
		assert.True(t, failed[name], "%s: seen Failed/NodeUnresponsive on %s", name, victim)
	}
	n := c.node(victim)
	assert.True(t, virtkit.HasCondition(n.Status.Conditions, virtkit.NodeReady, virtkit.ConditionFalse, virtkit.NodeReasonHeartbeatTimeout),
		"%s: %+v", victim, n.Status.Conditions)
	// The dead node's guests are still "running" in its state file.
	stale := c.guests()
	for _, name := range victims {
		assert.Contains(t, stale[node.DomainName("default", name)], victim, "%s: the killed node's guest survives it", name)
	}
	now := vmiUIDs(c.vmis())
	for _, name := range victims {
		assert.NotEqual(t, after[name], now[name], "%s: a new VMI incarnation", name)
	}

	// --- restart the node: its stale guests are destroyed, nothing runs twice.
	restarted := time.Now()
	nodes[victim] = c.startNode(victim)
	c.waitFor("the returning node's stale guests destroyed", 60*time.Second, func() (bool, string) {
		return c.converged(names, nodeNames)
	})
	t.Logf("returning node's %d stale guests destroyed %v after its start", len(victims), time.Since(restarted).Round(100*time.Millisecond))
	c.waitFor("the returning node ready", 30*time.Second, func() (bool, string) {
		return virtkit.IsConditionTrue(c.node(victim).Status.Conditions, virtkit.NodeReady), "not ready"
	})
	require.True(t, nodes[victim].logHas("removing orphaned domain"), "the returning agent found stale guests")

	// --- every object, as a user sees it.
	vms := getList[virtkit.VirtualMachine](c, "vms")
	require.Len(t, vms, len(names))
	for _, vm := range vms {
		assert.Equal(t, virtkit.VirtualMachineStatusRunning, vm.Status.PrintableStatus, vm.Name)
		assert.True(t, vm.Status.Ready, vm.Name)
	}
	vmis := getList[virtkit.VirtualMachineInstance](c, "vmis")
	require.Len(t, vmis, len(names))
	for _, vmi := range vmis {
		assert.Equal(t, virtkit.Running, vmi.Status.Phase, vmi.Name)
		assert.Contains(t, vmi.Finalizers, node.Finalizer, vmi.Name)
		assert.Equal(t, vmi.Status.NodeName, vmi.Labels[virtkit.NodeNameLabel], vmi.Name)
	}
	nodeObjs := getList[virtkit.Node](c, "nodes")
	require.Len(t, nodeObjs, len(nodeNames))
	for _, n := range nodeObjs {
		assert.True(t, virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady), n.Name)
	}
	assert.Empty(t, getList[virtkit.VirtualMachineInstanceMigration](c, "migrations"))
	assert.Empty(t, getList[virtkit.VirtualMachineInstanceReplicaSet](c, "replicasets"))
	table := c.run("get", "vmis", "--store", c.store)
	assert.Equal(t, len(names)+1, strings.Count(table, "\n"), table)
	assert.Contains(t, table, "vm-after-failover")

	// Deleting a VM removes its VMI and its guest.
	c.run("delete", "vm", "vm-00", "--store", c.store)
	names = slices.DeleteFunc(names, func(n string) bool { return n == "vm-00" })
	c.waitFor("vm-00 gone with its guest", 60*time.Second, func() (bool, string) { return c.converged(names, nodeNames) })

	// A node agent stopped with SIGTERM marks its node not ready and exits 0.
	require.NoError(t, nodes["node-b"].term(t))
	assert.True(t, virtkit.HasCondition(c.node("node-b").Status.Conditions, virtkit.NodeReady, virtkit.ConditionFalse,
		virtkit.NodeReasonAgentStopped))
	// So does the controller.
	require.NoError(t, ctrls[standbyID].term(t))
	assert.True(t, ctrls[standbyID].logHas("resigned leadership"))
}

// watchVMIs calls fn for every VMI change until the returned stop is
// called; stop returns after the watcher ended, so fn's writes are visible
// to the caller.
func (c *testCluster) watchVMIs(fn func(*virtkit.VirtualMachineInstance)) (stop func() int) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(c.t.Context())
	events, err := c.st.Watch(ctx, &virtkit.VirtualMachineInstanceList{}, store.WatchOptions{})
	require.NoError(c.t, err)
	done := make(chan int)
	go func() {
		n := 0
		for ev := range events {
			if v, ok := ev.Object.(*virtkit.VirtualMachineInstance); ok {
				fn(v)
				n++
			}
		}
		done <- n
	}()
	return func() int { cancel(); return <-done }
}
