package sim_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor/sim"
)

func TestVirtualClockTimersAndTickers(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	clk := sim.NewVirtualClock(t0)
	tick := clk.NewTicker(time.Second)
	timer := clk.NewTimer(1500 * time.Millisecond)
	var ran []time.Time
	clk.AfterFunc(time.Second, func() { ran = append(ran, clk.Now()) })

	next, ok := clk.Next()
	require.True(t, ok)
	assert.Equal(t, t0.Add(time.Second), next)

	// One instant per Step: the tick and the function due at +1s.
	require.True(t, clk.Step(t0.Add(time.Hour)))
	assert.Equal(t, t0.Add(time.Second), clk.Now())
	assert.Equal(t, []time.Time{t0.Add(time.Second)}, ran)
	assert.Equal(t, t0.Add(time.Second), <-tick.C())
	select {
	case <-timer.C():
		t.Fatal("the timer is not due yet")
	default:
	}

	require.True(t, clk.Step(t0.Add(time.Hour)))
	assert.Equal(t, t0.Add(1500*time.Millisecond), <-timer.C())

	// A tick nobody reads is dropped, as time.Ticker does.
	clk.Advance(3 * time.Second) // ticks at +2s, +3s, +4s
	assert.Equal(t, t0.Add(2*time.Second), <-tick.C())
	select {
	case v := <-tick.C():
		t.Fatalf("dropped tick delivered: %v", v)
	default:
	}

	// Stop and Reset drain what was delivered; Step moves to its limit
	// when nothing is due by then.
	tick.Stop()
	assert.False(t, timer.Stop())
	again := clk.NewTimer(time.Minute)
	assert.True(t, again.Reset(2*time.Minute))
	assert.False(t, clk.Step(clk.Now().Add(time.Minute)))
	assert.Equal(t, t0.Add(1500*time.Millisecond+3*time.Second+time.Minute), clk.Now())
	assert.True(t, clk.Step(clk.Now().Add(time.Hour)))
	assert.Equal(t, clk.Now(), <-again.C())
	_, ok = clk.Next()
	assert.False(t, ok, "nothing left")
	assert.Equal(t, time.Duration(0), clk.Since(clk.Now()))
}
