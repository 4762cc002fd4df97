package events_test

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/store"
)

func TestCollectorDeletesExpiredEvents(t *testing.T) {
	stores(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		clk := testingclock.NewFakeClock(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
		rec, err := events.NewRecorder(events.Options{Store: s, Clock: clk})
		require.NoError(t, err)
		col, err := events.NewCollector(events.CollectorOptions{Store: s, Clock: clk})
		require.NoError(t, err)

		// Watching the kind sees the events as they are written.
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ch, err := s.Watch(wctx, &virtkit.EventList{}, store.WatchOptions{})
		require.NoError(t, err)

		rec.Event(ctx, vm("old"), virtkit.EventTypeNormal, "Started", "Start", "started")
		clk.Step(40 * time.Minute)
		rec.Event(ctx, vm("busy"), virtkit.EventTypeNormal, "Started", "Start", "started")
		clk.Step(9 * time.Minute)
		rec.Event(ctx, vm("busy"), virtkit.EventTypeNormal, "Started", "Start", "started") // series: last seen now
		clk.Step(21 * time.Minute)                                                         // old: 70 min, busy: 21 min

		select {
		case ev := <-ch:
			assert.Equal(t, store.Added, ev.Type)
			assert.Equal(t, "old", ev.Object.(*virtkit.Event).Regarding.Name)
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event for a recorded Event")
		}

		n, err := col.Collect(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		left := listEvents(t, s)
		require.Len(t, left, 1)
		assert.Equal(t, "busy", left[0].Regarding.Name, "kept: its series was observed within the TTL")

		clk.Step(time.Hour)
		n, err = col.Collect(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Empty(t, listEvents(t, s))

		// A repeat after its event was collected starts a new one.
		rec.Event(ctx, vm("busy"), virtkit.EventTypeNormal, "Started", "Start", "started")
		assert.Len(t, listEvents(t, s), 1)
	})
}

func TestCollectorStartHonoursContext(t *testing.T) {
	s := store.NewMemory()
	col, err := events.NewCollector(events.CollectorOptions{Store: s, TTL: time.Millisecond, Interval: 10 * time.Millisecond})
	require.NoError(t, err)
	rec, err := events.NewRecorder(events.Options{Store: s})
	require.NoError(t, err)
	rec.Event(context.Background(), vm("a"), virtkit.EventTypeNormal, "Started", "Start", "started")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- col.Start(ctx) }()
	require.Eventually(t, func() bool { return len(listEvents(t, s)) == 0 }, 10*time.Second, 10*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return after cancel")
	}

	_, err = events.NewCollector(events.CollectorOptions{Store: s, TTL: -time.Second})
	assert.ErrorIs(t, err, virtkit.ErrInvalidOptions)
}
