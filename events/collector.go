package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/utils/clock"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// CollectorOptions configure a [Collector]. Store is required.
type CollectorOptions struct {
	Store store.Store
	// TTL: an event whose last observation is older is deleted; default
	// DefaultTTL (one hour).
	TTL time.Duration
	// Interval between collections; default TTL/12, at least a second.
	Interval time.Duration
	// Clock times the collections and judges the events' age; nil is the
	// real clock.
	Clock clock.WithTicker
	// Logger receives collection failures; nil discards them.
	Logger *slog.Logger
}

// Collector deletes expired events.
type Collector struct{ o CollectorOptions }

// NewCollector returns a collector of o.Store's events.
func NewCollector(o CollectorOptions) (*Collector, error) {
	if o.Store == nil {
		return nil, fmt.Errorf("%w: Store: required", errInvalidOptions)
	}
	if o.TTL < 0 || o.Interval < 0 {
		return nil, fmt.Errorf("%w: TTL, Interval: must not be negative", errInvalidOptions)
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.Interval == 0 {
		o.Interval = max(o.TTL/12, time.Second)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Collector{o: o}, nil
}

// Start collects every Interval until ctx ends; it returns nil then.
func (c *Collector) Start(ctx context.Context) error {
	t := c.o.Clock.NewTicker(c.o.Interval)
	defer t.Stop()
	for {
		if _, err := c.Collect(ctx); err != nil && ctx.Err() == nil {
			c.o.Logger.Warn("event collection failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Collect deletes, once, every event last observed more than TTL ago and
// returns how many it deleted. An event updated meanwhile (a new
// occurrence in its series) is kept: the delete is conditioned on the
// resourceVersion that was judged.
func (c *Collector) Collect(ctx context.Context) (int, error) {
	var list virtkit.EventList
	if err := c.o.Store.List(ctx, &list, store.ListOptions{}); err != nil {
		return 0, fmt.Errorf("list events: %w", err)
	}
	cutoff := c.o.Clock.Now().Add(-c.o.TTL)
	deleted := 0
	var errs []error
	for i := range list.Items {
		ev := &list.Items[i]
		if !ev.LastSeen().Time.Before(cutoff) {
			continue
		}
		rv, uid := ev.ResourceVersion, ev.UID
		err := c.o.Store.Delete(ctx, ev, store.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
		switch {
		case err == nil:
			deleted++
		case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrConflict):
		default:
			errs = append(errs, fmt.Errorf("delete event %s: %w", store.KeyOf(ev), err))
			if ctx.Err() != nil {
				return deleted, errors.Join(errs...)
			}
		}
	}
	return deleted, errors.Join(errs...)
}
