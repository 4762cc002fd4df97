package hypervisortest

import (
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

func dirtyRateMeasurer(e *env) hypervisor.DirtyRateMeasurer {
	m, ok := e.h.(hypervisor.DirtyRateMeasurer)
	if !ok {
		e.t.Skip("backend does not implement hypervisor.DirtyRateMeasurer")
	}
	return m
}

func testDirtyRate(e *env) {
	m := dirtyRateMeasurer(e)
	name := e.name("")
	e.define(name)
	_, err := m.MeasureDirtyRate(e.ctx(), name, time.Second)
	skipIfNotSupported(e.t, err, "dirty-rate measurement")
	requireDomainError(e.t, err, hypervisor.ErrInvalidState, name, "MeasureDirtyRate of a shut-off domain")

	require.NoError(e.t, e.h.Start(e.ctx(), name, hypervisor.StartOptions{}))
	e.waitState(e.h, name, hypervisor.StateRunning, e.tg.BootTimeout)
	idle, err := m.MeasureDirtyRate(e.ctx(), name, time.Second)
	skipIfNotSupported(e.t, err, "dirty-rate measurement")
	require.NoError(e.t, err)
	assert.Positive(e.t, idle.Period, "Period")
	assert.NotEmpty(e.t, idle.Method, "Method")
	assert.False(e.t, idle.MeasuredAt.IsZero(), "MeasuredAt")

	stats, err := e.h.Stats(e.ctx(), name)
	require.NoError(e.t, err)
	require.True(e.t, stats.DirtyRate.Valid, "after a calculation Stats.DirtyRate is measured")

	if e.tg.DirtyMemory == nil {
		return
	}
	e.run("Dirtying", func(se *env) {
		// A guest that is still booting writes memory fast; compare
		// against a reading taken once it has settled (its agent answers).
		se.waitAgentSettled(name)
		settled, err := m.MeasureDirtyRate(se.ctx(), name, time.Second)
		require.NoError(se.t, err)
		se.tg.DirtyMemory(se.t, name)
		busy, err := m.MeasureDirtyRate(se.ctx(), name, time.Second)
		require.NoError(se.t, err)
		assert.Greater(se.t, busy.BytesPerSecond, settled.BytesPerSecond, "a dirtying guest measures above the settled idle one")
	})
}
