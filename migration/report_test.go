package migration

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/migration/internal/fluid"
)

func TestSnapshotAndEngineStatus(t *testing.T) {
	g := fluid.New(fluid.Config{Memory: 8 * gib, Bandwidth: 115 * mb, Sensitivity: 1,
		Regions: []fluid.Region{{Size: 2 * gib, Rate: 150 * mb, Sequential: true}}}, epoch)
	e, err := NewEngine(g, Request{Domain: "default_build", Memory: 8 * gib, AllowAutoConverge: true},
		Options{Clock: g, Probe: fluidProbe{g}})
	require.NoError(t, err)

	s := e.Snapshot()
	assert.Equal(t, PhasePlanning, s.Phase)
	assert.Nil(t, s.Prediction)
	assert.Nil(t, s.EngineStatus().MeasuredDirtyRateBytesPerSecond, "not measured stays nil")

	r := drive(t, g, e, time.Hour)
	require.Equal(t, OutcomeSucceeded, r.Outcome, r.Reason)
	s = e.Snapshot()
	assert.True(t, s.Done)
	assert.Equal(t, "PreCopyThrottledCompleted", s.Strategy)
	assert.Greater(t, s.MaxThrottle, 0)
	require.NotNil(t, s.Prediction)

	st := s.EngineStatus()
	require.NotNil(t, st.MeasuredDirtyRateBytesPerSecond)
	require.NotNil(t, st.MeasuredBandwidthBytesPerSecond)
	assert.InDelta(t, 115e6, float64(*st.MeasuredBandwidthBytesPerSecond), 1e6)
	require.NotEmpty(t, st.Decisions)
	assert.Equal(t, "Start", st.Decisions[0].Action)
	var throttle bool
	for _, d := range st.Decisions {
		if d.Action == "Throttle" {
			throttle = true
			assert.Contains(t, d.Numbers, "throttlePercent")
			assert.Contains(t, d.Numbers, "elapsedSeconds")
			assert.Contains(t, d.Numbers["bandwidth"], "B/s")
			assert.NotEmpty(t, d.Reason)
		}
	}
	assert.True(t, throttle, "the throttle decision is in the status")

	// The decision log is JSON with measured values or null.
	b, err := json.Marshal(s.Decisions[0])
	require.NoError(t, err)
	assert.Contains(t, string(b), `"iteration":null`)
}
