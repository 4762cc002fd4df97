package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/store"
)

// staleDomainXML is a domain with virtkit's metadata for a VMI uid on
// node, as another agent would have left it.
func staleDomainXML(name, uid, node string) string {
	return fmt.Sprintf(`<domain type='kvm'><name>%s</name><metadata><kubevirt xmlns="http://kubevirt.io"><uid>%s</uid><namespace>vt</namespace><name>x</name><node>%s</node></kubevirt></metadata><memory unit='MiB'>128</memory><currentMemory unit='MiB'>128</currentMemory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os></domain>`, name, uid, node)
}

// otherNode is a node of c other than name.
func otherNode(c *cluster.Cluster, name string) *cluster.Node {
	for _, n := range c.Nodes() {
		if n.Name != name {
			return n
		}
	}
	return nil
}

// TestInvariantsSeeViolations puts the states the invariants forbid on the
// hosts behind the agents' backs, and checks that each check reports
// them, and that a healthy cluster passes.
func TestInvariantsSeeViolations(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, _ := lifecycleCluster(t, ctx, 0)
	key := store.Key{Namespace: "vt", Name: "kept"}
	require.NoError(t, c.Apply(ctx, virtualVM(key.Name)))
	vmi := runningOn(t, ctx, c, key)
	require.NoError(t, cluster.CheckNoDoubleRun(ctx, c))
	require.NoError(t, cluster.CheckNoLeakedDomains(ctx, c))
	require.NoError(t, cluster.CheckNoPausedByEndedMigration(ctx, c))

	other := otherNode(c, vmi.Status.NodeName)
	// The same guest started on the other host too, as an agent of the
	// VMI's node would have defined it.
	_, err := other.Hypervisor.Define(ctx, staleDomainXML("vt_kept", string(vmi.UID), vmi.Status.NodeName))
	require.NoError(t, err)
	require.NoError(t, other.Hypervisor.Start(ctx, "vt_kept", hypervisor.StartOptions{}))
	err = cluster.CheckNoDoubleRun(ctx, c)
	assert.ErrorIs(t, err, cluster.ErrInvariant)
	assert.ErrorContains(t, err, "vt_kept")
	err = cluster.CheckNoLeakedDomains(ctx, c)
	assert.ErrorIs(t, err, cluster.ErrInvariant)
	assert.ErrorContains(t, err, "vt_kept on "+other.Name)
	require.NoError(t, other.Hypervisor.Destroy(ctx, "vt_kept"))
	require.NoError(t, other.Hypervisor.Undefine(ctx, "vt_kept"))

	// A VMI marked paused by the migration monitor with no migration,
	// observed in a copy of the store: in the cluster's own, the VMI's
	// node agent would clear the condition, maybe before the check reads
	// it.
	cur := &virtkit.VirtualMachineInstance{}
	require.NoError(t, c.Store().Get(ctx, key, cur))
	virtkit.SetCondition(&cur.Status.Conditions, virtkit.Condition{
		Type: virtkit.VirtualMachineInstancePaused, Status: virtkit.ConditionTrue, Reason: virtkit.PausedByMigrationMonitorReason,
	}, cur.CreationTimestamp)
	observed := c.Observation()
	observed.Store = store.NewMemory()
	cur.ResourceVersion = ""
	require.NoError(t, observed.Store.Create(ctx, cur))
	err = cluster.CheckNoPausedByEndedMigrationIn(ctx, observed)
	assert.ErrorIs(t, err, cluster.ErrInvariant)
	assert.ErrorContains(t, err, "vt/kept")
}

// TestStaleDomainOfAGoneVMIIsRemoved leaves the shut-off domain of a VMI
// that no longer exists on a host, with metadata naming another node (a
// guest that left by migration and was deleted since): the host's agent
// removes it at its next look at the host, while a running one stays.
func TestStaleDomainOfAGoneVMIIsRemoved(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, _ := lifecycleCluster(t, ctx, 0)
	n1, n2 := c.Nodes()[0], c.Nodes()[1]
	_, err := n2.Hypervisor.Define(ctx, staleDomainXML("vt_gone", "uid-gone", n1.Name))
	require.NoError(t, err)
	_, err = n2.Hypervisor.Define(ctx, staleDomainXML("vt_running", "uid-running", n1.Name))
	require.NoError(t, err)
	require.NoError(t, n2.Hypervisor.Start(ctx, "vt_running", hypervisor.StartOptions{}))
	err = cluster.CheckNoLeakedDomains(ctx, c)
	assert.ErrorIs(t, err, cluster.ErrInvariant)
	assert.ErrorContains(t, err, "vt_gone")

	require.NoError(t, c.Advance(ctx, time.Minute)) // past the agents' resync
	names := map[string]hypervisor.DomainState{}
	doms, err := n2.Hypervisor.List(ctx)
	require.NoError(t, err)
	for _, d := range doms {
		names[d.Name] = d.State
	}
	assert.NotContains(t, names, "vt_gone", "the stale domain is removed")
	assert.Equal(t, hypervisor.StateRunning, names["vt_running"], "a running domain is never removed")
	err = cluster.CheckNoLeakedDomains(ctx, c)
	assert.ErrorContains(t, err, "vt_running")
	assert.NotContains(t, err.Error(), "vt_gone")
}

// TestNameTakenIsSaidOnce keeps a VMI from starting with a foreign domain
// of its name on every host: each agent says so once, not on every retry.
func TestNameTakenIsSaidOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, logs := lifecycleCluster(t, ctx, 0)
	for _, n := range c.Nodes() {
		_, err := n.Hypervisor.Define(ctx, `<domain type='kvm'><name>vt_blocked</name><memory unit='MiB'>128</memory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os></domain>`)
		require.NoError(t, err)
		require.NoError(t, n.Hypervisor.Start(ctx, "vt_blocked", hypervisor.StartOptions{}))
	}
	require.NoError(t, c.Apply(ctx, virtualVM("blocked")))
	require.NoError(t, c.Advance(ctx, 30*time.Second))
	vmi := &virtkit.VirtualMachineInstance{}
	require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "vt", Name: "blocked"}, vmi))
	require.NotEqual(t, virtkit.Running, vmi.Status.Phase)
	assert.Equal(t, 1, strings.Count(logs.String(), "domain name is taken"), "said once by the VMI's node")
}
