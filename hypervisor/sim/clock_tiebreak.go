package sim

// SetTieBreak makes the timers, functions and tickers due at one instant
// fire in the order of key (least first; equal keys in the order they
// were scheduled) instead of only the order they were scheduled in. key
// is called by whoever schedules or resets one, before the clock's lock
// is taken; a ticker keeps its key from one tick to the next.
//
// The order in which concurrent goroutines schedule their timers for one
// instant is the Go scheduler's choice, and a harness that steps the clock
// one timer at a time ([VirtualClock.StepOne]) lets the first timer's work
// settle before the second fires: a key that names the timer by what set
// it (the scheduling goroutine's call path, say) makes such an instant
// play out the same way on every run. nil restores the scheduling order.
// Set it before the clock is shared.
func (c *VirtualClock) SetTieBreak(key func() uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tieBreak = key
}

// tie is the key of a timer being scheduled now (0 without a tie-break).
func (c *VirtualClock) tie() uint64 {
	c.mu.Lock()
	key := c.tieBreak
	c.mu.Unlock()
	if key == nil {
		return 0
	}
	return key()
}
