package sim

import (
	"container/heap"
	"time"
)

// StepOne is Step firing one timer at a time: it moves the clock to the
// earliest due time not after limit and fires only the first timer due
// then (the one scheduled first). A harness that waits for the goroutines
// each timer woke before the next (cluster.Cluster.Advance on a seeded
// cluster) keeps two timers of one instant from racing each other, so the
// instant plays out the same way on every run.
func (c *VirtualClock) StepOne(limit time.Time) bool {
	c.advance.Lock()
	defer c.advance.Unlock()
	c.mu.Lock()
	if len(c.timers) == 0 || c.timers[0].due.After(limit) {
		if limit.After(c.now) {
			c.now = limit
		}
		c.mu.Unlock()
		return false
	}
	if due := c.timers[0].due; due.After(c.now) {
		c.now = due
	}
	t := heap.Pop(&c.timers).(*virtualTimer)
	f := t.fireLocked()
	c.mu.Unlock()
	if f != nil {
		f()
	}
	return true
}
