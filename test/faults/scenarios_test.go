//go:build faults

package faults

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	baseVMs = 12
	// convergeTimeout bounds every wait for the end state: generous, the
	// machine may be loaded.
	convergeTimeout = 90 * time.Second
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
	took := c.waitFor("the standby to lead", 30*time.Second, func() (bool, string) {
		l := c.leader()
		return l == standby, "leader is " + l
	})
	_ = took
	t.Logf("standby %s leads %v after the kill (lease %s)", standby, time.Since(killed).Round(100*time.Millisecond), leaderTTL)
	c.finish(convergeTimeout)
	for _, n := range names("vm", baseVMs)[1:] {
		require.Equal(t, 1, c.mon.incarnationsOf(n), "%s: a failover replaced its VMI", n)
	}
}
