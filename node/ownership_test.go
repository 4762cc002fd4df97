package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// rawDomainXML is a domain as someone else defines it on a shared host,
// with the given extra <metadata> content (none: no metadata at all).
func rawDomainXML(typ, name, metadata string) string {
	md := ""
	if metadata != "" {
		md = "<metadata>" + metadata + "</metadata>"
	}
	return fmt.Sprintf(`<domain type='%s'><name>%s</name>%s<memory unit='MiB'>128</memory><currentMemory unit='MiB'>128</currentMemory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os></domain>`, typ, name, md)
}

// virtkitMetadata is the builder's metadata element for a VMI on node.
func virtkitMetadata(uid, ns, name, node string) string {
	n := ""
	if node != "" {
		n = "<node>" + node + "</node>"
	}
	return fmt.Sprintf(`<kubevirt xmlns="http://kubevirt.io"><uid>%s</uid><namespace>%s</namespace><name>%s</name>%s</kubevirt>`, uid, ns, name, n)
}

// ownershipCase runs the shared-host ownership scenario against hv, whose
// domains of type typ are defined directly, behind the agent's back.
func ownershipCase(t *testing.T, hv hypervisor.Hypervisor, typ string) {
	ctx := context.Background()
	st := store.NewMemory()
	defineRunning := func(name, metadata string) {
		t.Helper()
		_, err := hv.Define(ctx, rawDomainXML(typ, name, metadata))
		require.NoError(t, err)
		require.NoError(t, hv.Start(ctx, name, hypervisor.StartOptions{}))
	}
	// Other people's guests on the same host.
	defineRunning("legacy_db", "")
	defineRunning("prod_web-01", `<app xmlns="http://example.com/app"><owner>dba</owner></app>`)
	// A guest of another node agent on the same hypervisor, with and
	// without a VMI in the store; one of KubeVirt-style metadata that names
	// no node.
	defineRunning("default_b-gone", virtkitMetadata("uid-b-gone", "default", "b-gone", "node-b"))
	defineRunning("default_b-vm", virtkitMetadata("uid-b-vm", "default", "b-vm", "node-b"))
	bvm := newScheduledVMI(t, st, "b-vm")
	bvm.Status.NodeName = "node-b"
	bvm.Status.Phase = virtkit.Running
	require.NoError(t, st.UpdateStatus(ctx, bvm))
	defineRunning("default_nonode", virtkitMetadata("uid-nonode", "default", "nonode", ""))
	// This node's own leftover: a guest of a VMI that is gone.
	defineRunning("default_mine-gone", virtkitMetadata("uid-mine-gone", "default", "mine-gone", nodeName))

	a, err := node.New(node.Options{NodeName: nodeName, Store: st, Hypervisor: hv,
		StatusInterval: 100 * time.Millisecond, ResyncPeriod: 200 * time.Millisecond})
	require.NoError(t, err)
	actx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Start(actx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()

	// The agent is at work: it runs its own VMI and removes its own
	// leftover.
	newScheduledVMI(t, st, "mine")
	eventuallyPhase(t, st, "mine", virtkit.Running)
	require.Eventually(t, func() bool {
		_, left := domainNames(t, hv)["default_mine-gone"]
		return !left
	}, 10*time.Second, 10*time.Millisecond, "the agent removes its own orphaned domain")

	// A reconcile of every foreign name, as hypervisor events would cause.
	for _, name := range []string{"legacy_db", "prod_web-01", "default_b-gone", "default_b-vm", "default_nonode"} {
		ns, n, ok := node.SplitDomainName(name)
		require.True(t, ok)
		_, err := a.Reconcile(ctx, reconcile.Request{Namespace: ns, Name: n})
		require.NoError(t, err, name)
	}
	time.Sleep(300 * time.Millisecond) // a resync of the host

	doms := domainNames(t, hv)
	for _, name := range []string{"legacy_db", "prod_web-01", "default_b-gone", "default_b-vm", "default_nonode"} {
		d, ok := doms[name]
		if assert.True(t, ok, "%s: never undefined", name) {
			assert.Equal(t, hypervisor.StateRunning, d.State, "%s: never stopped", name)
		}
	}
	assert.Equal(t, hypervisor.StateRunning, doms["default_mine"].State)
	foreign := map[string]string{}
	for _, f := range a.ForeignDomains() {
		foreign[f.Name] = f.Reason
	}
	assert.Equal(t, "no virtkit metadata", foreign["legacy_db"])
	assert.Equal(t, "no virtkit metadata", foreign["prod_web-01"])
	assert.Equal(t, "belongs to node node-b", foreign["default_b-gone"])
	assert.Equal(t, "belongs to node node-b", foreign["default_b-vm"])
	assert.Equal(t, "virtkit metadata names no node", foreign["default_nonode"])
	assert.NotContains(t, foreign, "default_mine")
	vmi, ok := getVMI(t, st, "b-vm")
	require.True(t, ok)
	assert.Equal(t, virtkit.Running, vmi.Status.Phase, "another node's VMI is not this agent's to report")
}

func TestAgentLeavesDomainsItDoesNotOwnAlone(t *testing.T) {
	ownershipCase(t, sim.New(sim.Options{Name: "shared"}), "kvm")
}

func TestAgentDoesNotStartAVMIOverAForeignDomain(t *testing.T) {
	ctx := context.Background()
	st, hv := store.NewMemory(), sim.New(sim.Options{Name: "shared"})
	_, err := hv.Define(ctx, rawDomainXML("kvm", "default_taken", ""))
	require.NoError(t, err)
	require.NoError(t, hv.Start(ctx, "default_taken", hypervisor.StartOptions{}))
	a, err := node.New(node.Options{NodeName: nodeName, Store: st, Hypervisor: hv})
	require.NoError(t, err)
	newScheduledVMI(t, st, "taken")
	_, err = a.Reconcile(ctx, reconcile.Request{Namespace: "default", Name: "taken"})
	require.ErrorIs(t, err, node.ErrDomainNotOwned)
	d := domainNames(t, hv)["default_taken"]
	assert.Equal(t, hypervisor.StateRunning, d.State)
	xml, err := hv.XML(ctx, "default_taken")
	require.NoError(t, err)
	assert.NotContains(t, xml, "kubevirt", "never redefined")
}
