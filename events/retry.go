package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// ErrRunning is returned by a second concurrent [Recorder.Start].
var ErrRunning = errors.New("events recorder already running")

// retryQueue holds the failed writes waiting for a retry, oldest first;
// the recorder's mu guards it. A series has at most one entry: its retry
// writes the series' latest count, so later failures of the same series
// ride on it.
type retryQueue struct {
	running bool
	pending []*pendingWrite
	wake    chan struct{} // a write was queued (capacity 1)
}

// pendingWrite is the retry of one series' write.
type pendingWrite struct {
	s                         *series
	ref                       virtkit.ObjectReference
	typ, reason, action, note string
	tries                     int // retries made so far
	due                       time.Time
}

// retryable reports whether a failed write may succeed if tried again:
// the store did not answer (unreachable, timed out, the caller gave up),
// as client-go retries transport errors. A store sentinel error is the
// store's answer (invalid, conflicting, missing): trying again changes
// nothing.
func retryable(err error) bool {
	for _, e := range []error{store.ErrNotFound, store.ErrConflict, store.ErrAlreadyExists, store.ErrExpired,
		store.ErrInvalid, store.ErrUnknownKind, store.ErrCorrupt} {
		if errors.Is(err, e) {
			return false
		}
	}
	return true
}

// retryLater queues w's retry after its write failed with err, or gives
// it up.
func (r *Recorder) retryLater(w *pendingWrite, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !retryable(err) || w.tries >= r.o.MaxRetries || !r.retries.running {
		r.stats.GaveUp++
		return
	}
	for _, p := range r.retries.pending {
		if p.s == w.s {
			return // the series' pending retry writes this occurrence too
		}
	}
	if len(r.retries.pending) >= r.o.MaxPending {
		r.retries.pending[0] = nil
		r.retries.pending = r.retries.pending[1:]
		r.stats.GaveUp++
	}
	w.due = r.o.Clock.Now().Add(r.o.RetryInterval)
	r.retries.pending = append(r.retries.pending, w)
	select {
	case r.retries.wake <- struct{}{}:
	default:
	}
}

// Start retries failed writes until ctx ends, each up to
// Options.MaxRetries times, Options.RetryInterval apart on Options.Clock.
// Without Start running a failed write is given up at once. Writes still
// pending when ctx ends are given up. Start returns nil when ctx ends, or
// ErrRunning if another Start runs.
func (r *Recorder) Start(ctx context.Context) error {
	r.mu.Lock()
	if r.retries.running {
		r.mu.Unlock()
		return fmt.Errorf("%w", ErrRunning)
	}
	r.retries.running = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.retries.running = false
		r.stats.GaveUp += len(r.retries.pending)
		r.retries.pending = nil
		r.mu.Unlock()
	}()
	for {
		r.mu.Lock()
		var next *pendingWrite
		if len(r.retries.pending) > 0 {
			next = r.retries.pending[0]
		}
		r.mu.Unlock()
		if next == nil {
			select {
			case <-ctx.Done():
				return nil
			case <-r.retries.wake:
				continue
			}
		}
		if d := next.due.Sub(r.o.Clock.Now()); d > 0 {
			t := r.o.Clock.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C():
			}
		}
		r.mu.Lock()
		if len(r.retries.pending) == 0 || r.retries.pending[0] != next {
			r.mu.Unlock()
			continue // pushed out of a full queue meanwhile
		}
		r.retries.pending[0] = nil
		r.retries.pending = r.retries.pending[1:]
		r.mu.Unlock()
		r.retry(ctx, next)
	}
}

// retry writes w's series again; a failure queues the next try or gives
// the write up.
func (r *Recorder) retry(ctx context.Context, w *pendingWrite) {
	s := w.s
	s.mu.Lock()
	r.mu.Lock()
	count, first, last := s.count, s.first, s.last
	r.mu.Unlock()
	if count == s.written {
		s.mu.Unlock()
		return // a later write carried it
	}
	w.tries++
	// No deadline of its own: a real-time one would fire at an arbitrary
	// instant of a virtual clock. The store honours ctx.
	created, err := r.write(ctx, s, w.ref, w.typ, w.reason, w.action, w.note, count, first, last)
	s.mu.Unlock()
	r.mu.Lock()
	r.stats.Retries++
	switch {
	case err != nil:
		r.stats.Failed++
	case created:
		r.stats.Created++
		r.stats.Retried++
	default:
		r.stats.Updated++
		r.stats.Retried++
	}
	r.mu.Unlock()
	if err == nil {
		return
	}
	if ctx.Err() != nil {
		r.mu.Lock()
		r.stats.GaveUp++
		r.mu.Unlock()
		return
	}
	r.o.Logger.Debug("event retry failed", "regarding", w.ref.Kind+" "+store.Key{Namespace: w.ref.Namespace, Name: w.ref.Name}.String(),
		"reason", w.reason, "try", w.tries+1, "err", err)
	r.retryLater(w, err)
}
