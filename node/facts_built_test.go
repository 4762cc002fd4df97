package node_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/store"
)

// xmlCountingHV counts reads of domain XML.
type xmlCountingHV struct {
	hypervisor.Hypervisor
	reads atomic.Int64
}

func (h *xmlCountingHV) XML(ctx context.Context, name string) (string, error) {
	h.reads.Add(1)
	return h.Hypervisor.XML(ctx, name)
}

// A domain the agent defines itself needs no read-back of its XML: the
// interface facts in status come from the definition it built, and they
// are the same ones the live XML gives.
func TestStartedDomainFactsComeFromTheDefinition(t *testing.T) {
	st := store.NewMemory()
	hv := &xmlCountingHV{Hypervisor: sim.New(sim.Options{Name: nodeName})}
	vmi := migratableVMI("facts", "128Mi")
	vmi.Labels[virtkit.NodeNameLabel] = nodeName
	virtkit.SetDefaults(vmi)
	require.Empty(t, virtkit.Validate(vmi))
	ctx := context.Background()
	require.NoError(t, st.Create(ctx, vmi))
	vmi.Status.NodeName = nodeName
	vmi.SetPhase(virtkit.Scheduled, vmi.CreationTimestamp)
	require.NoError(t, st.UpdateStatus(ctx, vmi))

	runAgent(t, st, hv, nil)
	got := eventuallyPhase(t, st, "facts", virtkit.Running)
	assert.Zero(t, hv.reads.Load(), "the agent read back the XML of the domain it built")

	require.Len(t, got.Status.Interfaces, 1)
	live, err := hv.Hypervisor.XML(ctx, "default_facts")
	require.NoError(t, err)
	assert.Contains(t, live, got.Status.Interfaces[0].MAC, "status carries the MAC of the live domain")
	assert.Equal(t, "default", got.Status.Interfaces[0].Name)
}
