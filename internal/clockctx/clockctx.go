package clockctx

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// WithTimeout is context.WithTimeout with d measured on clk: the context
// ends with context.DeadlineExceeded once d has passed on clk, or with its
// parent. On the real clock (or a nil one) it is context.WithTimeout, whose
// deadline network clients pass on; on any other clock the context reports
// only its parent's deadline, as a wall-clock deadline cannot be derived
// from a clock that does not read wall time.
func WithTimeout(parent context.Context, clk clock.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	switch clk.(type) {
	case nil, clock.RealClock, *clock.RealClock:
		return context.WithTimeout(parent, d)
	}
	c := &timeoutCtx{parent: parent, done: make(chan struct{})}
	if err := parent.Err(); err != nil {
		c.finish(err)
		return c, func() {}
	}
	expire := func() { c.finish(context.DeadlineExceeded) }
	var stopTimer func() bool
	if dc, ok := clk.(clock.WithDelayedExecution); ok {
		stopTimer = dc.AfterFunc(d, expire).Stop
	} else {
		t := clk.NewTimer(d)
		stopTimer = t.Stop
		go func() {
			select {
			case <-t.C():
				expire()
			case <-c.done:
			}
		}()
	}
	stop := context.AfterFunc(parent, func() { c.finish(parent.Err()) })
	return c, func() {
		stopTimer()
		stop()
		c.finish(context.Canceled)
	}
}

// timeoutCtx is a context that ends on its own done channel. It is not
// built on the context package's cancelCtx, so that a context derived from
// it learns its error from Err (DeadlineExceeded when the clock ran out)
// rather than inheriting a plain cancellation.
type timeoutCtx struct {
	parent context.Context
	done   chan struct{}

	mu  sync.Mutex
	err error
}

func (c *timeoutCtx) finish(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	close(c.done)
}

func (c *timeoutCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }

func (c *timeoutCtx) Done() <-chan struct{} { return c.done }

func (c *timeoutCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *timeoutCtx) Value(key any) any { return c.parent.Value(key) }
