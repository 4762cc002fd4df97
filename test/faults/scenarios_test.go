//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
)

const (
	baseVMs = 12
	// convergeTimeout bounds every wait for the end state: generous, the
	// machine may be loaded.
	convergeTimeout = 90 * time.Second
	// faultHold is how long a dead, frozen or partitioned node stays so
	// after its VMs run elsewhere.
	faultHold = 3 * time.Second
)

// startWithVMs starts a cluster running baseVMs VMs.
func startWithVMs(t *testing.T) *testCluster {
	t.Helper()
	c := newCluster(t)
	c.createVMs(names("vm", baseVMs)...)
	took := c.waitFor("the first VMs running", convergeTimeout, c.converged)
	t.Logf("%d VMs running %v after their creation", baseVMs, took.Round(100*time.Millisecond))
	return c
}

// TestKillLeader kills the leading controller with SIGKILL: the standby
// takes over once the lease expires and keeps reconciling; the killed
// replica is restarted by its supervisor as a candidate.
func TestKillLeader(t *testing.T) {
	c := startWithVMs(t)
	leader := c.leader()
	require.NotEmpty(t, leader)
	standby := "c1"
	if leader == "c1" {
		standby = "c2"
	}
	killed := time.Now()
	c.ctrls[leader].kill9(t, false)
	// While nobody leads: more VMs, and a delete.
	c.createVMs(names("during", 4)...)
	c.deleteVM("vm-00")
	c.waitFor("the standby to lead", 30*time.Second, func() (bool, string) {
		l := c.leader()
		return l == standby, "leader is " + l
	})
	t.Logf("standby %s leads %v after the kill (lease %s)", standby, time.Since(killed).Round(100*time.Millisecond), leaderTTL)
	// Again: the new leader dies while the old one is a candidate.
	c.waitFor("the killed replica back as a candidate", 30*time.Second, func() (bool, string) {
		return c.ctrls[leader].State() == procRunning && c.ctrls[leader].logHas("leader elected", "leader="+standby), "not yet"
	})
	killed = time.Now()
	c.ctrls[standby].kill9(t, false)
	c.createVMs(names("second", 4)...)
	c.deleteVM("vm-01")
	c.waitFor("the first leader to lead again", 30*time.Second, func() (bool, string) {
		l := c.leader()
		return l == leader, "leader is " + l
	})
	t.Logf("%s leads again %v after the second kill", leader, time.Since(killed).Round(100*time.Millisecond))
	c.finish(convergeTimeout)
	for _, n := range names("vm", baseVMs)[2:] {
		require.Equal(t, 1, c.mon.incarnationsOf(n), "%s: a failover replaced its VMI", n)
	}
}

// TestPartitionLeader cuts the leading controller off from etcd while VMs
// are created and deleted: the standby leads once the old leader's lease
// expires, and the old leader, whose held requests reach etcd when the link
// heals, must not have acted meanwhile (it stops its controllers when it
// loses its lease and exits to be restarted as a candidate).
func TestPartitionLeader(t *testing.T) {
	c := startWithVMs(t)
	leader := c.leader()
	require.NotEmpty(t, leader)
	standby := "c1"
	if leader == "c1" {
		standby = "c2"
	}
	cut := time.Now()
	c.ctrlProxies[leader].Cut()
	c.createVMs(names("during", 4)...)
	c.deleteVM("vm-00")
	c.waitFor("the standby to lead", 30*time.Second, func() (bool, string) {
		l := c.leader()
		return l == standby, "leader is " + l
	})
	t.Logf("standby %s leads %v after the cut (lease %s)", standby, time.Since(cut).Round(100*time.Millisecond), leaderTTL)
	c.createVMs(names("after", 4)...)
	c.deleteVM("vm-01")
	time.Sleep(faultHold)
	c.ctrlProxies[leader].Heal()
	t.Logf("healed %v after the cut", time.Since(cut).Round(100*time.Millisecond))
	c.finish(convergeTimeout)
	for _, n := range names("vm", baseVMs)[2:] {
		require.Equal(t, 1, c.mon.incarnationsOf(n), "%s: a failover replaced its VMI", n)
	}
}

// victim picks the node with the most VMIs.
func (c *testCluster) victim() (string, []string) {
	best, bestVMIs := "", []string(nil)
	for _, n := range nodeNames {
		if on := c.vmisOn(n); best == "" || len(on) > len(bestVMIs) {
			best, bestVMIs = n, on
		}
	}
	require.NotEmpty(c.t, bestVMIs, "no node runs a VMI")
	return best, bestVMIs
}

// TestKillNode kills a node agent with SIGKILL and keeps it down until its
// VMs run elsewhere, then restarts it on the same simulated host (its guests
// restored from the state file, as real guests outlive their agent): the
// returning agent must remove its stale guests.
func TestKillNode(t *testing.T) {
	c := startWithVMs(t)
	victim, moved := c.victim()
	// A quick restart (the supervisor's, within the grace period): the
	// agent adopts its guests, nothing is replaced.
	restarted := time.Now()
	c.nodes[victim].proc.kill9(t, false)
	c.waitFor("the restarted agent ready with its guests", 30*time.Second, func() (bool, string) {
		starts, _ := c.nodes[victim].proc.history()
		if starts < 2 || c.nodes[victim].proc.State() != procRunning {
			return false, "not restarted yet"
		}
		return c.converged()
	})
	t.Logf("%s killed and restarted at once: its %d guests adopted %v after the kill", victim, len(moved),
		time.Since(restarted).Round(100*time.Millisecond))
	for _, n := range moved {
		require.Equal(t, 1, c.mon.incarnationsOf(n), "%s: a quick agent restart replaced its VMI", n)
	}

	t.Logf("killing %s with %d VMIs until they run elsewhere", victim, len(moved))
	killed := time.Now()
	c.nodes[victim].proc.kill9(t, true)
	c.waitFor("the victim's VMs running elsewhere", convergeTimeout, func() (bool, string) { return c.movedOff(victim) })
	t.Logf("%d VMs running on the other nodes %v after the kill (grace %v + %v)", len(moved),
		time.Since(killed).Round(100*time.Millisecond), monitorGrace, unresponsiveGrace)
	st, reason := c.nodeReady(victim)
	require.Equal(t, virtkit.ConditionFalse, st, "%s Ready: %s %s", victim, st, reason)
	// The agent stays dead past the failover: guests of its host that still
	// run (nothing stopped them) now run twice.
	time.Sleep(faultHold)
	c.nodes[victim].proc.release(t)
	c.finish(convergeTimeout)
	for _, n := range moved {
		require.Equal(t, 2, c.mon.incarnationsOf(n), "%s: one VMI on the killed node, one elsewhere", n)
	}
}

// TestKillNodeDuringRestart kills a node agent, lets its supervisor
// restart it over a slow link to etcd, and kills it again as soon as the
// new process has loaded its host, before it could renew its heartbeat. The
// guests of the host must still stop before they start elsewhere: a
// crash-looping agent must not leave them running unguarded.
func TestKillNodeDuringRestart(t *testing.T) {
	c := startWithVMs(t)
	victim, moved := c.victim()
	n := c.nodes[victim]
	// A slow link widens the restarted agent's window between loading its
	// host and its first heartbeat to several round trips.
	n.proxy.SetLatency(200 * time.Millisecond)
	before, err := os.Stat(n.state)
	require.NoError(t, err)
	killed := time.Now()
	// Restarted at once (well within the watchdog deadline the killed
	// agent left on file), not after the supervisor's delay.
	n.proc.kill9(t, true)
	n.proc.release(t)
	loaded := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if fi, err := os.Stat(n.state); err == nil && !fi.ModTime().Equal(before.ModTime()) {
			loaded = true
			break
		}
	}
	require.True(t, loaded, "the restarted agent never loaded its host")
	n.proc.kill9(t, true)
	var onFile stateFileView
	data, err := os.ReadFile(n.state)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &onFile))
	activeOnFile := 0
	for _, d := range onFile.Domains {
		if active(d.State) {
			activeOnFile++
		}
	}
	t.Logf("%s killed again %v after the first kill, before its first heartbeat; on file: %d active guests, watchdog deadline %v",
		victim, time.Since(killed).Round(10*time.Millisecond), activeOnFile, onFile.WatchdogDeadline)
	n.proxy.SetLatency(0)
	c.waitFor("the victim's VMs running elsewhere", convergeTimeout, func() (bool, string) { return c.movedOff(victim) })
	t.Logf("%d VMs running on the other nodes %v after the first kill", len(moved), time.Since(killed).Round(100*time.Millisecond))
	time.Sleep(faultHold)
	n.proc.release(t)
	c.finish(convergeTimeout)
}

// TestFreezeNode freezes a node agent with SIGSTOP until its VMs run
// elsewhere, then resumes it with SIGCONT. The frozen process's guests
// execute nothing while it is stopped; once it runs again they count: a
// guest still active after SIGCONT whose VM runs elsewhere is a double run.
func TestFreezeNode(t *testing.T) {
	c := startWithVMs(t)
	victim, moved := c.victim()
	t.Logf("freezing %s with %d VMIs", victim, len(moved))
	frozen := time.Now()
	c.nodes[victim].proc.stop(t)
	c.waitFor("the frozen node's VMs running elsewhere", convergeTimeout, func() (bool, string) { return c.movedOff(victim) })
	t.Logf("%d VMs running on the other nodes %v after SIGSTOP", len(moved), time.Since(frozen).Round(100*time.Millisecond))
	time.Sleep(faultHold)
	c.nodes[victim].proc.cont(t)
	c.finish(convergeTimeout)
	for _, n := range moved {
		require.Equal(t, 2, c.mon.incarnationsOf(n), "%s: one VMI on the frozen node, one elsewhere", n)
	}
}

// TestPartitionNode cuts the network between a node agent and etcd (the
// agent's proxy holds every byte) until its VMs run elsewhere, then heals
// it. The partitioned agent keeps running: any guest it keeps active while
// its VM runs elsewhere is a double run.
func TestPartitionNode(t *testing.T) {
	c := startWithVMs(t)
	victim, moved := c.victim()
	px := c.nodes[victim].proxy
	t.Logf("partitioning %s with %d VMIs from etcd", victim, len(moved))
	cut := time.Now()
	px.Cut()
	c.waitFor("the partitioned node's VMs running elsewhere", convergeTimeout, func() (bool, string) { return c.movedOff(victim) })
	t.Logf("%d VMs running on the other nodes %v after the cut", len(moved), time.Since(cut).Round(100*time.Millisecond))
	st, reason := c.nodeReady(victim)
	require.Equal(t, virtkit.ConditionFalse, st, "%s Ready: %s %s", victim, st, reason)
	// The partition outlasts the failover: whatever the cut-off agent
	// still runs now runs twice.
	time.Sleep(faultHold)
	require.Equal(t, procRunning, c.nodes[victim].proc.State(), "the partitioned agent is alive")
	t.Logf("healing the partition %v after the cut", time.Since(cut).Round(100*time.Millisecond))
	px.Heal()
	c.finish(convergeTimeout)
	for _, n := range moved {
		require.Equal(t, 2, c.mon.incarnationsOf(n), "%s: one VMI on the partitioned node, one elsewhere", n)
	}
}

// TestRestartPartitionedNode cuts a node agent off from etcd and kills it
// with SIGKILL; its supervisor restarts it at once, still cut off. The
// restarted agent finds its guests on the host but cannot renew its
// heartbeat: they must stop (fence or watchdog) before the controllers,
// which hear nothing from the node, start them elsewhere.
func TestRestartPartitionedNode(t *testing.T) {
	c := startWithVMs(t)
	victim, moved := c.victim()
	n := c.nodes[victim]
	t.Logf("partitioning %s with %d VMIs from etcd, then killing it", victim, len(moved))
	cut := time.Now()
	n.proxy.Cut()
	n.proc.kill9(t, false) // the supervisor restarts it
	c.waitFor("the partitioned node's VMs running elsewhere", convergeTimeout, func() (bool, string) { return c.movedOff(victim) })
	t.Logf("%d VMs running on the other nodes %v after the cut", len(moved), time.Since(cut).Round(100*time.Millisecond))
	time.Sleep(faultHold)
	starts, _ := n.proc.history()
	t.Logf("healing the partition %v after the cut; the agent started %d times", time.Since(cut).Round(100*time.Millisecond), starts)
	n.proxy.Heal()
	c.finish(convergeTimeout)
}

// TestKillEtcd kills the etcd server with SIGKILL and restarts it on the
// same data directory after an outage shorter than the node grace periods:
// nothing is lost, every process reconnects (a controller that lost its
// leader lease exits and is restarted), and work continues.
func TestKillEtcd(t *testing.T) {
	c := startWithVMs(t)
	// A writer creates VMs one after another across the outage, retrying
	// each until it is acknowledged: every acknowledged VM must survive.
	stopWriter := make(chan struct{})
	writerDone := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stopWriter:
				writerDone <- n
				return
			default:
			}
			name := fmt.Sprintf("load-%02d", n)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			err := cluster.ApplyOne(ctx, c.st, vm(t, name, "load"))
			cancel()
			if err == nil {
				c.mon.want(name)
				n++
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	time.Sleep(time.Second)
	killed := time.Now()
	require.NoError(t, c.etcd.Kill(t.Context()))
	time.Sleep(3 * time.Second)
	require.NoError(t, c.etcd.Restart(t.Context()))
	t.Logf("etcd down for %v", time.Since(killed).Round(100*time.Millisecond))
	time.Sleep(time.Second)
	close(stopWriter)
	t.Logf("the writer created %d VMs across the outage", <-writerDone)
	c.waitFor("a leader after the restart", 60*time.Second, func() (bool, string) {
		return c.leader() != "", "no leader"
	})
	c.createVMs(names("after", 4)...)
	c.deleteVM("vm-01")
	c.finish(convergeTimeout)
	replaced := 0
	for _, n := range names("vm", baseVMs)[2:] {
		if c.mon.incarnationsOf(n) != 1 {
			replaced++
		}
	}
	t.Logf("%d of %d VMIs re-created after the etcd outage", replaced, baseVMs-1)
}
