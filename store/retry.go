package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Backoff paces the attempts of [RetryOnConflict] and [OnError]. The zero
// value is a short backoff for conflicts between writers of one process: 5
// attempts, 10ms apart with 10% jitter.
type Backoff struct {
	// Steps is the number of attempts; zero means 5.
	Steps int
	// Duration is the wait before the second attempt; zero means 10ms.
	Duration time.Duration
	// Factor multiplies the wait after each attempt; below 1 means 1.
	Factor float64
	// Jitter adds up to Jitter*wait of random extra wait; zero means 0.1
	// (when Duration is zero too), negative adds none.
	Jitter float64
	// Cap bounds a single wait; zero means no bound.
	Cap time.Duration
}

// RetryOnConflict runs fn until it returns something other than an error
// wrapping [ErrConflict], re-running it after each conflict with backoff:
// fn must re-read the object and reapply its change each time. It returns
// fn's last result: nil, the first error that is not a conflict, or the
// conflict when the attempts run out. When ctx ends while waiting it
// returns an error wrapping ctx.Err() and the last conflict.
func RetryOnConflict(ctx context.Context, backoff Backoff, fn func(ctx context.Context) error) error {
	return OnError(ctx, backoff, func(err error) bool { return errors.Is(err, ErrConflict) }, fn)
}

// OnError is RetryOnConflict for the errors retriable accepts.
func OnError(ctx context.Context, backoff Backoff, retriable func(error) bool, fn func(ctx context.Context) error) error {
	if backoff.Steps <= 0 {
		backoff.Steps = 5
	}
	if backoff.Duration <= 0 {
		backoff.Duration = 10 * time.Millisecond
		if backoff.Jitter == 0 {
			backoff.Jitter = 0.1
		}
	}
	if backoff.Factor < 1 {
		backoff.Factor = 1
	}
	wait := backoff.Duration
	var err error
	for attempt := 1; ; attempt++ {
		if cerr := ctx.Err(); cerr != nil {
			if err != nil {
				return fmt.Errorf("retry: %w (last attempt: %w)", cerr, err)
			}
			return cerr
		}
		err = fn(ctx)
		if err == nil || !retriable(err) || attempt >= backoff.Steps {
			return err
		}
		d := wait
		if backoff.Jitter > 0 {
			d += time.Duration(rand.Float64() * backoff.Jitter * float64(wait))
		}
		if backoff.Cap > 0 && d > backoff.Cap {
			d = backoff.Cap
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("retry: %w (last attempt: %w)", ctx.Err(), err)
		case <-t.C:
		}
		wait = time.Duration(float64(wait) * backoff.Factor)
		if backoff.Cap > 0 && wait > backoff.Cap {
			wait = backoff.Cap
		}
	}
}
