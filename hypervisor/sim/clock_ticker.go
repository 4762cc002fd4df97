package sim

import (
	"container/heap"
	"time"

	"k8s.io/utils/clock"
)

// The VirtualClock is k8s.io/utils/clock's clock for a whole simulated
// control plane: components that take a clock.WithTicker run on it.
var (
	_ clock.WithTicker                  = (*VirtualClock)(nil)
	_ clock.WithDelayedExecution        = (*VirtualClock)(nil)
	_ Clock                             = (*VirtualClock)(nil)
	_ Clock                             = RealClock{}
	_ clock.WithDelayedExecution        = clock.RealClock{}
	_ clock.Ticker                      = (*virtualTicker)(nil)
	_ clock.Timer                       = (*virtualTimer)(nil)
	_ clock.PassiveClock                = (*VirtualClock)(nil)
	_ interface{ Step(time.Time) bool } = (*VirtualClock)(nil)
)

// Since returns the time passed on the clock since t.
func (c *VirtualClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// NewTimer returns a timer whose channel receives the clock's time once
// Advance or Step reaches Now()+d (a d <= 0 fires in the next one).
func (c *VirtualClock) NewTimer(d time.Duration) clock.Timer {
	return c.schedule(d, 0)
}

// After is NewTimer(d).C().
func (c *VirtualClock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).C() }

// Sleep blocks until the clock has been advanced by d.
func (c *VirtualClock) Sleep(d time.Duration) { <-c.After(d) }

// NewTicker returns a ticker that delivers every d of clock time; like a
// real ticker it drops ticks its reader is not ready for. d must be
// positive.
func (c *VirtualClock) NewTicker(d time.Duration) clock.Ticker {
	if d <= 0 {
		panic("sim: non-positive interval for VirtualClock.NewTicker")
	}
	return &virtualTicker{t: c.schedule(d, d)}
}

// Tick is NewTicker(d).C(); the ticker cannot be stopped.
func (c *VirtualClock) Tick(d time.Duration) <-chan time.Time { return c.NewTicker(d).C() }

func (c *VirtualClock) schedule(d, period time.Duration) *virtualTimer {
	tie := c.tie()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &virtualTimer{clock: c, due: c.now.Add(max(d, 0)), tie: tie, seq: c.seq, ch: make(chan time.Time, 1), period: period, index: -1}
	heap.Push(&c.timers, t)
	return t
}

// Next returns the due time of the earliest scheduled timer, function or
// tick, and false when nothing is scheduled.
func (c *VirtualClock) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) == 0 {
		return time.Time{}, false
	}
	return c.timers[0].due, true
}

// Step moves the clock to the earliest due time not after limit and fires
// everything due then (functions run synchronously, in order; timers and
// tickers deliver on their channels), including what those functions
// schedule for the same instant. It reports whether anything was due; when
// nothing is, it moves the clock to limit (never backwards). A harness
// alternates Step with waiting for the goroutines it woke, so each instant
// is finished before the next one starts.
func (c *VirtualClock) Step(limit time.Time) bool {
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
	for len(c.timers) > 0 && !c.timers[0].due.After(c.now) {
		t := heap.Pop(&c.timers).(*virtualTimer)
		f := t.fireLocked()
		c.mu.Unlock()
		if f != nil {
			f()
		}
		c.mu.Lock()
	}
	c.mu.Unlock()
	return true
}

// fireLocked handles a timer popped because it is due (c.mu held): it
// returns an AfterFunc's function for the caller to run without the lock,
// or delivers a channel timer's tick and re-arms a ticker.
func (t *virtualTimer) fireLocked() func() {
	if t.ch == nil {
		return t.f
	}
	select {
	case t.ch <- t.clock.now:
	default: // the reader has not taken the last tick: dropped, as time.Ticker does
	}
	if t.period > 0 {
		c := t.clock
		c.seq++
		t.due, t.seq = t.due.Add(t.period), c.seq
		heap.Push(&c.timers, t)
	}
	return nil
}

// C is the channel of a timer made by NewTimer (nil for AfterFunc).
func (t *virtualTimer) C() <-chan time.Time { return t.ch }

// Reset schedules the timer (or the AfterFunc call) d from now; it reports
// whether it was pending.
func (t *virtualTimer) Reset(d time.Duration) bool {
	c := t.clock
	tie := c.tie()
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.ch != nil {
		select {
		case <-t.ch:
		default:
		}
	}
	active := t.index >= 0
	if active {
		heap.Remove(&c.timers, t.index)
	}
	c.seq++
	t.due, t.tie, t.seq = c.now.Add(max(d, 0)), tie, c.seq
	heap.Push(&c.timers, t)
	return active
}

type virtualTicker struct{ t *virtualTimer }

func (k *virtualTicker) C() <-chan time.Time { return k.t.ch }
func (k *virtualTicker) Stop()               { k.t.Stop() }
