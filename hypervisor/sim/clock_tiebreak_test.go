package sim_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/virtkit/virtkit/hypervisor/sim"
)

// Timers due at one instant fire in the order of their tie-break keys
// when the clock has one, in the order they were scheduled otherwise; a
// ticker keeps its key, a reset timer takes the key of the reset.
func TestVirtualClockTieBreak(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		keys map[string]uint64 // the key of the timer scheduled next; nil: no tie-break
		want [2][]string       // the order of the two rounds
	}{
		// The ticker re-arms when it fires, before a and b of round 2
		// are scheduled.
		{name: "scheduling order without a tie-break",
			want: [2][]string{{"a", "b", "tick", "c"}, {"tick", "a", "b", "c"}}},
		{name: "key order", keys: map[string]uint64{"a": 3, "b": 1, "tick": 2, "c": 0},
			want: [2][]string{{"c", "b", "tick", "a"}, {"c", "b", "tick", "a"}}},
		{name: "equal keys in scheduling order", keys: map[string]uint64{"a": 1, "b": 1, "tick": 1, "c": 0},
			want: [2][]string{{"c", "a", "b", "tick"}, {"c", "tick", "a", "b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := sim.NewVirtualClock(t0)
			next := ""
			if tt.keys != nil {
				clk.SetTieBreak(func() uint64 { return tt.keys[next] })
			}
			var fired []string
			schedule := func(name string) {
				next = name
				clk.AfterFunc(time.Second, func() { fired = append(fired, name) })
			}
			next = "c"
			late := clk.NewTimer(time.Hour)
			schedule("a")
			schedule("b")
			next = "tick"
			tick := clk.NewTicker(time.Second)
			defer tick.Stop()
			// Round 1: all four due at +1s. Round 2: the ticker's next
			// tick (keyed as when it was made) with a, b and the timer
			// scheduled again.
			for round := range 2 {
				if round == 1 {
					schedule("a")
					schedule("b")
				}
				next = "c"
				late.Reset(time.Second) // due with the others, keyed by the reset
				fired = nil
				limit := clk.Now().Add(time.Second)
				for clk.StepOne(limit) {
					select {
					case <-tick.C():
						fired = append(fired, "tick")
					case <-late.C():
						fired = append(fired, "c")
					default:
					}
				}
				assert.Equal(t, tt.want[round], fired, "round %d", round+1)
			}
		})
	}
}
