package metrics

import (
	"context"
	"time"
)

// runBounded calls fn(ctx, i) for i in [0, n) with at most limit calls at a
// time and returns which calls finished before ctx ended. Calls still
// running at the deadline are abandoned: they finish on their own
// goroutine and their results are ignored, so fn must only write to its
// own slot i (the caller reads slot i only where done[i]).
func runBounded(ctx context.Context, n, limit int, fn func(ctx context.Context, i int)) []bool {
	done := make([]bool, n)
	if n == 0 {
		return done
	}
	tasks := make(chan int, n)
	for i := range n {
		tasks <- i
	}
	close(tasks)
	// Buffered for every task, so an abandoned worker never blocks.
	results := make(chan int, n)
	for range min(limit, n) {
		go func() {
			for i := range tasks {
				if ctx.Err() != nil {
					return
				}
				fn(ctx, i)
				if pastDeadline(ctx) {
					// Finished after the deadline: it missed this
					// scrape, however soon the collector looks.
					return
				}
				results <- i
			}
		}()
	}
	for got := 0; got < n; got++ {
		select {
		case i := <-results:
			done[i] = true
		case <-ctx.Done():
			// Take what finished together with the deadline.
			for {
				select {
				case i := <-results:
					done[i] = true
				default:
					return done
				}
			}
		}
	}
	return done
}

// pastDeadline reports whether ctx has ended or its deadline has passed by
// the wall clock: the timer that cancels a context can fire late on a busy
// machine, and a call that returned after the deadline must not count as
// on time because of that.
func pastDeadline(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}
