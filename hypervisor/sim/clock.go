package sim

import (
	"container/heap"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Clock is the time the simulation runs on. Everything a host does
// spontaneously (a guest finishing its boot, a migration step) is a function
// scheduled with AfterFunc, so one implementation runs it in real time and
// another runs it synchronously inside [VirtualClock.Advance].
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once d has passed on this clock.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call (k8s.io/utils/clock's Timer: Stop
// prevents the call and reports whether it was pending; an AfterFunc
// timer's C is nil).
type Timer = clock.Timer

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return clock.RealClock{}.AfterFunc(d, f) }

// VirtualClock is a clock that moves only when [VirtualClock.Advance] is
// called. Scheduled functions run synchronously inside Advance, in the order
// of their due time (ties in the order they were scheduled), with Now
// reading their due time; so a simulation driven by Advance is
// deterministic. Several hosts may share one VirtualClock. It is safe for
// concurrent use, but a function run by Advance must not call Advance.
//
// It also implements k8s.io/utils/clock's WithTicker and
// WithDelayedExecution, so one VirtualClock can drive a whole control plane
// (cluster.Options.Clock): its timers and tickers deliver on their channels
// when Advance (or [VirtualClock.Step]) reaches them, like real ones but
// never on their own.
type VirtualClock struct {
	advance sync.Mutex // serialises Advance calls

	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers timerHeap
	// tieBreak, when set, keys the timers due at one instant
	// ([VirtualClock.SetTieBreak]).
	tieBreak func() uint64
}

// NewVirtualClock returns a virtual clock reading start.
func NewVirtualClock(start time.Time) *VirtualClock {
	return &VirtualClock{now: start}
}

// Now returns the clock's current time.
func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f to run inside the Advance call that reaches
// Now()+d. A d <= 0 runs f in the next Advance, even Advance(0).
func (c *VirtualClock) AfterFunc(d time.Duration, f func()) Timer {
	tie := c.tie()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &virtualTimer{clock: c, due: c.now.Add(max(d, 0)), tie: tie, seq: c.seq, f: f, index: -1}
	heap.Push(&c.timers, t)
	return t
}

// Advance moves the clock forward by d, running every function that falls
// due on the way at its due time. It returns when the clock reads the old
// time plus d and nothing due is left.
func (c *VirtualClock) Advance(d time.Duration) {
	c.advance.Lock()
	defer c.advance.Unlock()
	c.mu.Lock()
	target := c.now.Add(max(d, 0))
	c.mu.Unlock()
	for {
		c.mu.Lock()
		if len(c.timers) == 0 || c.timers[0].due.After(target) {
			c.now = target
			c.mu.Unlock()
			return
		}
		t := heap.Pop(&c.timers).(*virtualTimer)
		if t.due.After(c.now) {
			c.now = t.due
		}
		f := t.fireLocked()
		c.mu.Unlock()
		if f != nil {
			f()
		}
	}
}

// Pending reports how many scheduled functions wait for the clock; a
// driving loop can stop advancing when none is left.
func (c *VirtualClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

type virtualTimer struct {
	clock *VirtualClock
	due   time.Time
	tie   uint64
	seq   uint64
	f     func()
	// ch receives the due time of a channel timer or ticker (f is nil);
	// period is a ticker's.
	ch     chan time.Time
	period time.Duration
	index  int // in the heap; -1 when not scheduled
}

func (t *virtualTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	if t.ch != nil {
		// Like time.Timer since Go 1.23: no stale value after Stop.
		select {
		case <-t.ch:
		default:
		}
	}
	if t.index < 0 {
		return false
	}
	heap.Remove(&t.clock.timers, t.index)
	return true
}

type timerHeap []*virtualTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	if h[i].tie != h[j].tie {
		return h[i].tie < h[j].tie
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *timerHeap) Push(x any) {
	t := x.(*virtualTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*h = old[:len(old)-1]
	return t
}
