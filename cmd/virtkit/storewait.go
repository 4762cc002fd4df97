package main

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// The wait of a long-running process (virtkit node, virtkit controller)
// for a store that does not answer yet: it retries with a backoff growing
// from storeWaitFirst to storeWaitMax (with up to a fifth of jitter), as
// virt-handler and virt-controller wait for their API server, instead of
// exiting after the first attempt's deadline.
const (
	storeWaitFirst = 500 * time.Millisecond
	storeWaitMax   = 5 * time.Second
)

// openWaiting is open for a process that serves until it is stopped: while
// etcd cannot be reached (not started yet, or a network partition), it
// logs why and tries again until the store answers or ctx ends. Errors a
// retry cannot mend (malformed flags, TLS files, refused credentials) end
// it at once. One-shot commands use open and fail fast.
func (f *storeFlags) openWaiting(ctx context.Context, log *slog.Logger) (*openedStore, error) {
	delay := storeWaitFirst
	for attempt := 1; ; attempt++ {
		st, err := f.open(ctx, log)
		if err == nil {
			if attempt > 1 {
				log.Info("store reachable", "store", f.store, "attempts", attempt)
			}
			return st, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		if !storeUnreachable(err) {
			return nil, err
		}
		wait := delay + rand.N(delay/5+1)
		log.Warn("store not reachable: waiting for it before starting", "store", f.store, "attempt", attempt,
			"retryIn", wait.Round(time.Millisecond), "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		delay = min(2*delay, storeWaitMax)
	}
}

// storeUnreachable reports whether err from opening the store is etcd not
// answering (a deadline, an unavailable endpoint), which waiting can mend,
// rather than a configuration or credential error, which it cannot.
func storeUnreachable(err error) bool {
	switch {
	case errors.Is(err, errBadStoreFlag), errors.Is(err, store.ErrInvalid), errors.Is(err, virtkit.ErrInvalidOptions):
		return false
	case errors.Is(err, context.DeadlineExceeded):
		return true
	}
	if s, ok := status.FromError(err); ok {
		return s.Code() == codes.Unavailable || s.Code() == codes.DeadlineExceeded
	}
	return false
}
