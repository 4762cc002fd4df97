package sim_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

func startDomains(t *testing.T, h hypervisor.Hypervisor, names ...string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range names {
		_, err := h.Define(ctx, persistXML(name))
		require.NoError(t, err)
		require.NoError(t, h.Start(ctx, name, hypervisor.StartOptions{}))
	}
}

func TestWatchdogFencesTheHostWhenNotPetted(t *testing.T) {
	ctx := context.Background()
	h, clock := virtualHost(t, sim.Options{Name: "n1"})
	startDomains(t, h, "ns_a", "ns_b")
	_, err := h.Define(ctx, persistXML("ns_defined"))
	require.NoError(t, err)
	require.Error(t, h.PetWatchdog(ctx, 0))

	// A petted watchdog never fires.
	require.NoError(t, h.PetWatchdog(ctx, time.Second))
	for range 5 {
		clock.Advance(900 * time.Millisecond)
		require.NoError(t, h.PetWatchdog(ctx, time.Second))
	}
	assert.Equal(t, map[string]hypervisor.DomainState{
		"ns_a": hypervisor.StateRunning, "ns_b": hypervisor.StateRunning, "ns_defined": hypervisor.StateShutoff,
	}, states(t, h))
	assert.Zero(t, h.WatchdogFired())

	// The agent freezes: nobody pets while the clock moves. The first
	// look after the deadline finds the guests destroyed.
	clock.Advance(1100 * time.Millisecond)
	info, err := h.Info(ctx, "ns_a")
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateShutoff, info.State)
	assert.Equal(t, hypervisor.ReasonDestroyed, info.Reason)
	assert.Equal(t, map[string]hypervisor.DomainState{
		"ns_a": hypervisor.StateShutoff, "ns_b": hypervisor.StateShutoff, "ns_defined": hypervisor.StateShutoff,
	}, states(t, h))
	assert.Equal(t, uint64(1), h.WatchdogFired())

	// Fired once; a guest started after that runs until the next deadline.
	require.NoError(t, h.Start(ctx, "ns_a", hypervisor.StartOptions{}))
	clock.Advance(time.Hour)
	assert.Equal(t, hypervisor.StateRunning, states(t, h)["ns_a"], "a fired watchdog is disarmed")
	require.NoError(t, h.DisarmWatchdog(ctx))
}

func TestWatchdogPetAfterTheDeadlineFiresFirst(t *testing.T) {
	ctx := context.Background()
	h, clock := virtualHost(t, sim.Options{Name: "n1"})
	startDomains(t, h, "ns_a")
	require.NoError(t, h.PetWatchdog(ctx, time.Second))
	clock.Advance(2 * time.Second)
	// A frozen agent that wakes up pets first thing: too late.
	require.NoError(t, h.PetWatchdog(ctx, time.Second))
	assert.Equal(t, hypervisor.StateShutoff, states(t, h)["ns_a"])
	assert.Equal(t, uint64(1), h.WatchdogFired())
}

func TestWatchdogFiresOnAClockStep(t *testing.T) {
	ctx := context.Background()
	// The guest's boot timer fires 1.5 s in, after the deadline: that step
	// of the clock alone fences the host, before anyone looks.
	h, clock := virtualHost(t, sim.Options{Name: "n1", BootDelay: 1500 * time.Millisecond})
	events, err := h.Events(t.Context())
	require.NoError(t, err)
	startDomains(t, h, "ns_a")
	require.NoError(t, h.PetWatchdog(ctx, time.Second))
	clock.Advance(2 * time.Second)
	var got []hypervisor.Event
	for len(events) > 0 {
		got = append(got, <-events)
	}
	require.NotEmpty(t, got)
	last := got[len(got)-1]
	assert.Equal(t, "ns_a", last.Domain)
	assert.Equal(t, hypervisor.StateShutoff, last.State)
	assert.Equal(t, hypervisor.ReasonDestroyed, last.Reason)
	assert.Equal(t, uint64(1), h.WatchdogFired())
}

func TestPersistentWatchdogSurvivesTheProcess(t *testing.T) {
	for _, tc := range []struct {
		name  string
		away  time.Duration
		state hypervisor.DomainState
	}{
		{"back before the deadline: the guest kept running", 500 * time.Millisecond, hypervisor.StateRunning},
		{"back after the deadline: the watchdog stopped the guest", 3 * time.Second, hypervisor.StateShutoff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "host.json")
			clock := sim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			ctx, cancel := context.WithCancel(context.Background())
			p, err := sim.OpenPersistent(ctx, sim.New(sim.Options{Name: "n1", Clock: clock}), path)
			require.NoError(t, err)
			startDomains(t, p, "ns_a")
			require.NoError(t, p.PetWatchdog(ctx, 2*time.Second))
			require.NoError(t, p.Err())
			cancel() // the process dies
			<-p.Done()

			clock.Advance(tc.away)
			ctx2, cancel2 := context.WithCancel(context.Background())
			p2, err := sim.OpenPersistent(ctx2, sim.New(sim.Options{Name: "n1", Clock: clock}), path)
			require.NoError(t, err)
			t.Cleanup(func() { cancel2(); <-p2.Done() })
			assert.Equal(t, tc.state, states(t, p2)["ns_a"])
		})
	}
}

// A host reopened before its watchdog deadline stays armed until that
// deadline, in memory and in its state file: a process that dies again
// before its first pet still has its guests stopped on time.
func TestPersistentWatchdogArmedAcrossTwoRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "host.json")
	clock := sim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithCancel(context.Background())
	p, err := sim.OpenPersistent(ctx, sim.New(sim.Options{Name: "n1", Clock: clock}), path)
	require.NoError(t, err)
	startDomains(t, p, "ns_a")
	require.NoError(t, p.PetWatchdog(ctx, 2*time.Second))
	cancel()
	<-p.Done()

	// Restarted within the deadline; dies again without petting.
	clock.Advance(500 * time.Millisecond)
	ctx2, cancel2 := context.WithCancel(context.Background())
	p2, err := sim.OpenPersistent(ctx2, sim.New(sim.Options{Name: "n1", Clock: clock}), path)
	require.NoError(t, err)
	deadline, armed := p2.WatchdogDeadline()
	assert.True(t, armed, "the deadline on file arms the reopened host")
	assert.Equal(t, clock.Now().Add(1500*time.Millisecond), deadline)
	cancel2()
	<-p2.Done()
	saved, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(saved), "watchdogDeadline", "the reopened host keeps the deadline on file")

	// Back after the deadline: the guest was stopped.
	clock.Advance(2 * time.Second)
	ctx3, cancel3 := context.WithCancel(context.Background())
	p3, err := sim.OpenPersistent(ctx3, sim.New(sim.Options{Name: "n1", Clock: clock}), path)
	require.NoError(t, err)
	t.Cleanup(func() { cancel3(); <-p3.Done() })
	assert.Equal(t, hypervisor.StateShutoff, states(t, p3)["ns_a"])
}
