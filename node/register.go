package node

import (
	"context"
	"errors"
	"time"

	"github.com/virtkit/virtkit/store"
)

// Bounds of the wait between two registration attempts at start-up.
const (
	registerBackoffMin = time.Second
	registerBackoffMax = 30 * time.Second
)

// register writes the agent's Node (its first heartbeat) at start-up,
// retrying while the store cannot be reached: a node agent that starts
// while the store is partitioned away, or not up yet, waits for it the
// way virt-handler waits for the API server, instead of failing for good.
// Until it has registered it touches no guest. It gives up only on an
// error that a retry cannot cure (the Node is refused as invalid, the
// store does not know the kind or holds a corrupt object) and returns nil
// when ctx ends.
func (a *Agent) register(ctx context.Context) error {
	wait := registerBackoffMin
	for attempt := 1; ; attempt++ {
		err := a.heartbeat(ctx, a.opts.ReconcileTimeout)
		switch {
		case err == nil:
			if attempt > 1 {
				a.log.Info("registered with the store", "attempts", attempt)
			}
			return nil
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrUnknownKind) || errors.Is(err, store.ErrCorrupt):
			return err
		}
		a.log.Warn("cannot register with the store, retrying", "attempt", attempt, "in", wait, "err", err)
		t := a.opts.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
		wait = min(2*wait, registerBackoffMax)
	}
}
