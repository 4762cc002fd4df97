package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/store"
)

// A VM using cx1 (guest NUMA passthrough, dedicated CPUs, hugepages) is
// admitted as KubeVirt admits it, and a node that cannot give what it
// asks for fails its VMI with an event naming the field.
func TestCatalogueHostOnlyInstancetypeFailsOnNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clk := sim.NewVirtualClock(time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC))
	c, err := cluster.New(cluster.Options{Clock: clk})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	defer func() { cancel(); <-done }()
	require.NoError(t, c.Settle(ctx))

	vm := decodeAll(t, []byte(strings.Replace(catalogueVM, "name: u1.small", "name: cx1.medium", 1)))
	require.NoError(t, c.Apply(ctx, vm...))
	require.NoError(t, c.Settle(ctx))

	evs := &virtkit.EventList{}
	require.NoError(t, c.Store().List(ctx, evs, store.ListOptions{Namespace: "default"}))
	var notes []string
	for _, e := range evs.Items {
		notes = append(notes, e.Reason+": "+e.Note)
	}
	all := strings.Join(notes, "\n")
	assert.Contains(t, all, "SuccessfulCreate", "the VMI was created")
	assert.Contains(t, all, "cannot build domain: spec.domain.cpu.", "the node names the field it cannot honour")
}
