package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

func stateOf(t *testing.T, h *sim.Host, name string) (hypervisor.DomainState, hypervisor.StateReason) {
	t.Helper()
	info, err := h.Info(context.Background(), name)
	require.NoError(t, err)
	return info.State, info.Reason
}

// The power button is answered after the guest's delay: the host's
// ShutdownDelay by default, the domain's own when set, at once when
// negative; time spent paused does not count.
func TestACPIDelay(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    *sim.ACPIBehaviour
		paused time.Duration // paused this long right after the request
		want   time.Duration // running time until the power-off
	}{
		{name: "host default", want: 2 * time.Second},
		{name: "domain delay", set: &sim.ACPIBehaviour{Delay: 30 * time.Second}, want: 30 * time.Second},
		{name: "at once", set: &sim.ACPIBehaviour{Delay: -1}, want: 0},
		{name: "zero value restores the default", set: &sim.ACPIBehaviour{}, want: 2 * time.Second},
		{name: "paused time does not count", set: &sim.ACPIBehaviour{Delay: 10 * time.Second}, paused: time.Minute, want: 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			h, clock := virtualHost(t, sim.Options{ShutdownDelay: 2 * time.Second})
			startDomain(t, h, GiB, sim.Workload{})
			if tc.set != nil {
				h.SetACPIBehaviour(vmName, sim.ACPIBehaviour{Ignore: true}) // overwritten next
				h.SetACPIBehaviour(vmName, *tc.set)
			}
			require.NoError(t, h.RequestShutdown(ctx, vmName), "the request returns at once")
			if tc.paused > 0 {
				require.NoError(t, h.Pause(ctx, vmName))
				clock.Advance(tc.paused)
				require.NoError(t, h.Resume(ctx, vmName))
			}
			if tc.want > 0 {
				clock.Advance(tc.want - time.Millisecond)
				st, _ := stateOf(t, h, vmName)
				require.Equal(t, hypervisor.StateRunning, st, "still running just before its delay")
			}
			clock.Advance(time.Millisecond)
			st, reason := stateOf(t, h, vmName)
			assert.Equal(t, hypervisor.StateShutoff, st)
			assert.Equal(t, hypervisor.ReasonShutdown, reason)
		})
	}
}

// A guest told to ignore ACPI keeps running through any number of
// requests until it is destroyed; the setting holds for the domain name,
// so the next domain of that name ignores the button too, until reset.
// Its guest agent's guest-shutdown still powers it off.
func TestACPIIgnore(t *testing.T) {
	ctx := context.Background()
	h, clock := virtualHost(t, sim.Options{})
	events, err := h.Events(ctx)
	require.NoError(t, err)
	h.SetACPIBehaviour(vmName, sim.ACPIBehaviour{Ignore: true}) // before the domain exists
	startDomain(t, h, GiB, sim.Workload{})
	for range 10 {
		require.NoError(t, h.RequestShutdown(ctx, vmName))
		clock.Advance(5 * time.Second)
	}
	st, _ := stateOf(t, h, vmName)
	require.Equal(t, hypervisor.StateRunning, st, "ignored every request")

	sctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, h.Shutdown(sctx, vmName), context.DeadlineExceeded, "Shutdown waits in vain")

	require.NoError(t, h.Destroy(ctx, vmName))
	st, reason := stateOf(t, h, vmName)
	assert.Equal(t, hypervisor.StateShutoff, st)
	assert.Equal(t, hypervisor.ReasonDestroyed, reason)
	var stops []hypervisor.StateReason
	for len(events) > 0 {
		if ev := <-events; ev.Kind == hypervisor.EventLifecycle && ev.State == hypervisor.StateShutoff {
			stops = append(stops, ev.Reason)
		}
	}
	assert.Equal(t, []hypervisor.StateReason{hypervisor.ReasonDestroyed}, stops, "the only stop is the destroy")

	// The next start of the name: still ignoring, but the agent works.
	require.NoError(t, h.Start(ctx, vmName, hypervisor.StartOptions{}))
	clock.Advance(time.Second)
	require.NoError(t, h.RequestShutdown(ctx, vmName))
	clock.Advance(time.Minute)
	st, _ = stateOf(t, h, vmName)
	require.Equal(t, hypervisor.StateRunning, st)
	_, err = h.AgentCommand(ctx, vmName, `{"execute":"guest-shutdown"}`)
	require.NoError(t, err)
	clock.Advance(time.Second)
	st, reason = stateOf(t, h, vmName)
	assert.Equal(t, hypervisor.StateShutoff, st)
	assert.Equal(t, hypervisor.ReasonShutdown, reason)

	// Reset: the default answer again.
	h.SetACPIBehaviour(vmName, sim.ACPIBehaviour{})
	require.NoError(t, h.Start(ctx, vmName, hypervisor.StartOptions{}))
	require.NoError(t, h.RequestShutdown(ctx, vmName))
	clock.Advance(time.Second)
	st, reason = stateOf(t, h, vmName)
	assert.Equal(t, hypervisor.StateShutoff, st)
	assert.Equal(t, hypervisor.ReasonShutdown, reason)
}

// Ignore does not cancel a shutdown the guest has already accepted.
func TestACPIIgnoreKeepsAcceptedShutdown(t *testing.T) {
	ctx := context.Background()
	h, clock := virtualHost(t, sim.Options{ShutdownDelay: 3 * time.Second})
	startDomain(t, h, GiB, sim.Workload{})
	require.NoError(t, h.RequestShutdown(ctx, vmName))
	h.SetACPIBehaviour(vmName, sim.ACPIBehaviour{Ignore: true})
	clock.Advance(3 * time.Second)
	st, reason := stateOf(t, h, vmName)
	assert.Equal(t, hypervisor.StateShutoff, st)
	assert.Equal(t, hypervisor.ReasonShutdown, reason)
}

func TestRequestShutdownErrors(t *testing.T) {
	ctx := context.Background()
	h, _ := virtualHost(t, sim.Options{})
	err := h.RequestShutdown(ctx, "default_missing")
	require.ErrorIs(t, err, hypervisor.ErrNotFound)
	_, err = h.Define(ctx, testDomainXML(vmName))
	require.NoError(t, err)
	err = h.RequestShutdown(ctx, vmName)
	require.ErrorIs(t, err, hypervisor.ErrInvalidState, "a defined domain that does not run")
}
