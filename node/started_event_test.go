package node_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// captured records the reasons of the events about each VMI.
type captured struct {
	mu      sync.Mutex
	reasons map[string][]string
}

func (c *captured) Event(_ context.Context, regarding virtkit.Object, _, reason, _, _ string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reasons == nil {
		c.reasons = map[string][]string{}
	}
	c.reasons[regarding.GetName()] = append(c.reasons[regarding.GetName()], reason)
}

func (c *captured) of(name string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.reasons[name]...)
}

var errStoreGone = errors.New("store unreachable")

// noRunning refuses every status write that reports a VMI Running, as a
// store the agent lost right after it booted the guest.
type noRunning struct{ store.Store }

func (s noRunning) UpdateStatus(ctx context.Context, obj virtkit.Object) error {
	if vmi, ok := obj.(*virtkit.VirtualMachineInstance); ok && vmi.Status.Phase == virtkit.Running {
		return errStoreGone
	}
	return s.Store.UpdateStatus(ctx, obj)
}

// The Started event goes with the status write of the Running phase, as
// virt-handler records it: an agent that adopts a guest its predecessor
// booted but never reported running records it.
func TestStartedEventGoesWithTheRunningPhase(t *testing.T) {
	tests := []struct {
		name string
		// lostFirst: the first agent cannot report the guest running and
		// stops; a second one adopts the guest.
		lostFirst bool
	}{
		{name: "one agent boots and reports"},
		{name: "a new agent adopts an unreported guest", lostFirst: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, hv := store.NewMemory(), sim.New(sim.Options{Name: nodeName})
			var first, second captured
			if tt.lostFirst {
				stop := runAgent(t, noRunning{st}, hv, func(o *node.Options) { o.Events = &first })
				newScheduledVMI(t, st, "g")
				require.Eventually(t, func() bool {
					d, ok := domainNames(t, hv)["default_g"]
					return ok && d.State.IsActive()
				}, 10*time.Second, 10*time.Millisecond, "the first agent boots the guest")
				stop()
				vmi, _ := getVMI(t, st, "g")
				require.Equal(t, virtkit.Scheduled, vmi.Status.Phase, "the boot was never reported")
			}
			runAgent(t, st, hv, func(o *node.Options) { o.Events = &second })
			if !tt.lostFirst {
				newScheduledVMI(t, st, "g")
			}
			eventuallyPhase(t, st, "g", virtkit.Running)
			assert.Eventually(t, func() bool { return slices.Contains(second.of("g"), "Started") }, 5*time.Second, 10*time.Millisecond,
				"the agent that reports Running records Started")
			assert.NotContains(t, first.of("g"), "Started", "no Started without the Running phase stored")
		})
	}
}
