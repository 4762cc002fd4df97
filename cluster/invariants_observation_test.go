package cluster_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// observed is an Observation of fixed host domains over st.
func observed(st store.Store, doms ...cluster.ObservedDomain) cluster.Observation {
	return cluster.Observation{Store: st, Domains: func(context.Context) ([]cluster.ObservedDomain, error) { return doms, nil }}
}

func running(host, name string, virtkitMeta, unknown bool) cluster.ObservedDomain {
	return cluster.ObservedDomain{Host: host, MetadataUnknown: unknown, HostDomain: node.HostDomain{
		Name: name, State: hypervisor.StateRunning, Active: true, Virtkit: virtkitMeta}}
}

// The Check functions read an Observation as they read a cluster: hosts
// that are not in this process (node agents' GET /debug/domains) are
// checked against the store the same way.
func TestChecksOnAnObservation(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	vmi := &virtkit.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"},
	}
	require.NoError(t, st.Create(ctx, vmi))
	vmi.Status.Phase, vmi.Status.NodeName = virtkit.Running, "h1"
	require.NoError(t, st.UpdateStatus(ctx, vmi))

	for _, tc := range []struct {
		name      string
		doms      []cluster.ObservedDomain
		doubleRun string
		leaked    string
	}{
		{name: "healthy", doms: []cluster.ObservedDomain{running("h1", "ns_a", true, false)}},
		{name: "two hosts", doms: []cluster.ObservedDomain{running("h1", "ns_a", true, false), running("h2", "ns_a", true, false)},
			doubleRun: "domain ns_a runs on h1 and h2", leaked: "domain ns_a on h2 (Running) is leaked"},
		{name: "no VMI", doms: []cluster.ObservedDomain{running("h1", "ns_gone", true, false)},
			leaked: "domain ns_gone on h1 (Running) is leaked: its VMI does not exist"},
		{name: "someone else's guest", doms: []cluster.ObservedDomain{running("h1", "ns_gone", false, false)}},
		{name: "metadata unknown", doms: []cluster.ObservedDomain{running("h1", "ns_gone", false, true)},
			leaked: "domain ns_gone on h1 (Running) is leaked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := observed(st, tc.doms...)
			for _, c := range []struct {
				err  error
				want string
			}{{cluster.CheckNoDoubleRunIn(ctx, o), tc.doubleRun}, {cluster.CheckNoLeakedDomainsIn(ctx, o), tc.leaked}} {
				if c.want == "" {
					assert.NoError(t, c.err)
					continue
				}
				assert.ErrorIs(t, c.err, cluster.ErrInvariant)
				assert.ErrorContains(t, c.err, c.want)
			}
			assert.NoError(t, cluster.CheckNoPausedByEndedMigrationIn(ctx, o))
		})
	}
	assert.NoError(t, cluster.CheckOwnersAndFinalizersIn(ctx, st))
}

// Checking hosts that run in other processes: the store they share and
// what each host reports.
func ExampleCheckNoDoubleRunIn() {
	ctx := context.Background()
	st := store.NewMemory()
	o := cluster.Observation{Store: st, Domains: func(context.Context) ([]cluster.ObservedDomain, error) {
		// In a real test: each node agent's GET /debug/domains.
		return []cluster.ObservedDomain{
			{Host: "node-a", HostDomain: node.HostDomain{Name: "default_vm1", State: hypervisor.StateRunning, Active: true}},
			{Host: "node-b", HostDomain: node.HostDomain{Name: "default_vm1", State: hypervisor.StateRunning, Active: true}},
		}, nil
	}}
	fmt.Println(cluster.CheckNoDoubleRunIn(ctx, o))
	// Output: cluster invariant violated: domain default_vm1 runs on node-a and node-b at once
}
