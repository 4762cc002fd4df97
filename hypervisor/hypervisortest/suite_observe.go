package hypervisortest

import (
	"context"
	"fmt"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

func testInfoListXML(e *env) {
	running, stopped := e.name("run"), e.name("off")
	runID := e.start(running)
	offID := e.define(stopped)

	list, err := e.h.List(e.ctx())
	require.NoError(e.t, err)
	byName := map[string]hypervisor.DomainInfo{}
	for _, d := range list {
		byName[d.Name] = d
	}
	require.Contains(e.t, byName, running, "List holds running domains")
	require.Contains(e.t, byName, stopped, "List holds defined, stopped domains")
	assert.Equal(e.t, runID.UUID, byName[running].UUID)
	assert.Equal(e.t, offID.UUID, byName[stopped].UUID)
	assert.Equal(e.t, hypervisor.StateRunning, byName[running].State)
	assert.Equal(e.t, hypervisor.StateShutoff, byName[stopped].State)

	info := e.info(running)
	assert.Equal(e.t, runID, info.DomainID)
	assert.Positive(e.t, info.VCPUs)
	assert.Positive(e.t, info.MemoryBytes, "MemoryBytes (balloon) of a running domain")
	assert.LessOrEqual(e.t, info.MemoryBytes, info.MaxMemoryBytes)

	for _, id := range []hypervisor.DomainID{runID, offID} {
		xml, err := e.h.XML(e.ctx(), id.Name)
		require.NoError(e.t, err)
		assert.Contains(e.t, xml, "<name>"+id.Name+"</name>")
		assert.Contains(e.t, xml, id.UUID)
	}
}

func testStats(e *env) {
	name := e.name("")
	e.define(name)
	off, err := e.h.Stats(e.ctx(), name)
	require.NoError(e.t, err, "Stats of a shut-off domain")
	assert.Equal(e.t, name, off.Domain)
	assert.Equal(e.t, hypervisor.StateShutoff, off.State)
	assert.False(e.t, off.DirtyRate.Valid, "no dirty-rate calculation ran: DirtyRate stays not measured")

	require.NoError(e.t, e.h.Start(e.ctx(), name, hypervisor.StartOptions{}))
	e.waitState(e.h, name, hypervisor.StateRunning, e.tg.BootTimeout)
	first, err := e.h.Stats(e.ctx(), name)
	require.NoError(e.t, err)
	assert.Equal(e.t, hypervisor.StateRunning, first.State)
	assert.False(e.t, first.Collected.IsZero(), "Collected is set")
	assert.False(e.t, first.DirtyRate.Valid, "no dirty-rate calculation ran: DirtyRate stays not measured")
	if !first.CPUTime.Valid {
		e.t.Skip("backend does not measure CPU time")
	}
	e.waitFor(e.tg.BootTimeout, "CPU time to grow while running", func() (bool, error) {
		s, err := e.h.Stats(context.Background(), name)
		if err != nil {
			return false, err
		}
		return s.CPUTime.Valid && s.CPUTime.Value > first.CPUTime.Value, nil
	})
	for _, v := range first.VCPUs {
		assert.GreaterOrEqual(e.t, v.ID, 0)
	}
	if cur, ok := first.Memory.BalloonCurrent.Get(); ok {
		assert.Positive(e.t, cur, "balloon current of a running domain")
	}
}

func testEvents(e *env) {
	ctx, cancel := context.WithCancel(context.Background())
	events, err := e.h.Events(ctx)
	require.NoError(e.t, err)
	name := e.name("")
	e.start(name)
	e.awaitEvent(events, name, hypervisor.StateRunning, hypervisor.ReasonBooted)
	require.NoError(e.t, e.h.Pause(e.ctx(), name))
	e.awaitEvent(events, name, hypervisor.StatePaused, hypervisor.ReasonUser)
	require.NoError(e.t, e.h.Resume(e.ctx(), name))
	e.awaitEvent(events, name, hypervisor.StateRunning, hypervisor.ReasonUnpaused)
	require.NoError(e.t, e.h.Destroy(e.ctx(), name))
	e.awaitEvent(events, name, hypervisor.StateShutoff, hypervisor.ReasonDestroyed)

	cancel()
	timeout := time.After(e.tg.BootTimeout)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-timeout:
			e.t.Fatal("the events channel was not closed after its context ended")
		}
	}
}

func (e *env) awaitEvent(events <-chan hypervisor.Event, name string, state hypervisor.DomainState, reason hypervisor.StateReason) {
	e.t.Helper()
	timeout := time.After(e.tg.BootTimeout)
	var seen []string
	for {
		select {
		case ev, ok := <-events:
			require.True(e.t, ok, "events channel closed early")
			if ev.Domain != name || ev.Kind != hypervisor.EventLifecycle {
				continue
			}
			if ev.State == state && ev.Reason == reason {
				assert.NotEmpty(e.t, ev.UUID, "lifecycle event carries the UUID")
				assert.False(e.t, ev.Time.IsZero(), "event carries its time")
				return
			}
			seen = append(seen, fmt.Sprintf("%s/%s", ev.State, ev.Reason))
		case <-timeout:
			e.t.Fatalf("no lifecycle event %s/%s for %s within %v (saw %v)", state, reason, name, e.tg.BootTimeout, seen)
		}
	}
}
