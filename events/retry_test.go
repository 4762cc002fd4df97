package events_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/store"
)

var errUnreachable = errors.New("store unreachable")

// flakyStore fails the next `fail` writes with err (all of them while
// fail is negative).
type flakyStore struct {
	store.Store
	mu   sync.Mutex
	fail int
	err  error
}

func (f *flakyStore) refuse() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail == 0 {
		return nil
	}
	if f.fail > 0 {
		f.fail--
	}
	return fmt.Errorf("write: %w", f.err)
}

func (f *flakyStore) Create(ctx context.Context, obj virtkit.Object) error {
	if err := f.refuse(); err != nil {
		return err
	}
	return f.Store.Create(ctx, obj)
}

func (f *flakyStore) Update(ctx context.Context, obj virtkit.Object) error {
	if err := f.refuse(); err != nil {
		return err
	}
	return f.Store.Update(ctx, obj)
}

// startRecorder runs rec's retries on clk until the test ends.
func startRecorder(t *testing.T, rec *events.Recorder) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := runStart(t, ctx, rec)
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
}

// runStart runs rec.Start(ctx) in a goroutine and returns once it runs,
// with the channel its result arrives on. It probes with a Start on an
// ended context, which returns at once, or ErrRunning while another runs;
// a probe that wins the race makes the goroutine's Start return
// ErrRunning, and the goroutine is started again.
func runStart(t *testing.T, ctx context.Context, rec *events.Recorder) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	start := func() { go func() { done <- rec.Start(ctx) }() }
	start()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	require.Eventually(t, func() bool {
		select {
		case err := <-done:
			require.ErrorIs(t, err, events.ErrRunning, "Start returned early")
			start()
			return false
		default:
		}
		return errors.Is(rec.Start(ended), events.ErrRunning)
	}, 30*time.Second, time.Millisecond, "one Start at a time")
	return done
}

// stepRetry moves clk to the next retry once the recorder waits for it
// and returns once the retry has been made.
func stepRetry(t *testing.T, clk *clocktesting.FakeClock, rec *events.Recorder) {
	t.Helper()
	require.Eventually(t, clk.HasWaiters, 30*time.Second, time.Millisecond, "a retry is scheduled")
	before := rec.Stats().Retries
	clk.Step(events.DefaultRetryInterval)
	require.Eventually(t, func() bool { return rec.Stats().Retries > before }, 30*time.Second, time.Millisecond, "the retry ran")
}

func TestRecorderRetriesFailedWrites(t *testing.T) {
	tests := []struct {
		name       string
		fail       int // failing writes (-1: all)
		err        error
		maxRetries int
		maxPending int
		notStarted bool
		objects    []string // one event about each
		steps      int      // retry intervals stepped
		want       events.Stats
		stored     []string // events in the store at the end
	}{
		{name: "a short outage: the retry lands", fail: 1, err: errUnreachable, objects: []string{"a"}, steps: 1,
			want: events.Stats{Created: 1, Failed: 1, Retries: 1, Retried: 1}, stored: []string{"a"}},
		{name: "a cancelled caller: retried", fail: 1, err: context.Canceled, objects: []string{"a"}, steps: 1,
			want: events.Stats{Created: 1, Failed: 1, Retries: 1, Retried: 1}, stored: []string{"a"}},
		{name: "an outage of three tries", fail: 3, err: errUnreachable, objects: []string{"a"}, steps: 3,
			want: events.Stats{Created: 1, Failed: 3, Retries: 3, Retried: 1}, stored: []string{"a"}},
		{name: "out of tries: given up", fail: -1, err: errUnreachable, maxRetries: 2, objects: []string{"a"}, steps: 2,
			want: events.Stats{Failed: 3, Retries: 2, GaveUp: 1}},
		{name: "rejected by the store: not retried", fail: 1, err: store.ErrInvalid, objects: []string{"a"},
			want: events.Stats{Failed: 1, GaveUp: 1}},
		{name: "retries disabled", fail: 1, err: errUnreachable, maxRetries: -1, objects: []string{"a"},
			want: events.Stats{Failed: 1, GaveUp: 1}},
		{name: "not started: given up", fail: 1, err: errUnreachable, notStarted: true, objects: []string{"a"},
			want: events.Stats{Failed: 1, GaveUp: 1}},
		{name: "a full queue gives up its oldest", fail: 2, err: errUnreachable, maxPending: 1, objects: []string{"a", "b"}, steps: 1,
			want: events.Stats{Created: 1, Failed: 2, Retries: 1, Retried: 1, GaveUp: 1}, stored: []string{"b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			clk := clocktesting.NewFakeClock(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
			st := &flakyStore{Store: store.NewMemory(), fail: tt.fail, err: tt.err}
			rec, err := events.NewRecorder(events.Options{Store: st, Clock: clk, MaxRetries: tt.maxRetries, MaxPending: tt.maxPending})
			require.NoError(t, err)
			if !tt.notStarted {
				startRecorder(t, rec)
			}
			for _, name := range tt.objects {
				rec.Event(ctx, vm(name), virtkit.EventTypeNormal, "Started", "Start", "started")
			}
			for range tt.steps {
				stepRetry(t, clk, rec)
			}
			assert.Equal(t, tt.want, rec.Stats())
			var stored []string
			for _, e := range listEvents(t, st) {
				stored = append(stored, e.Regarding.Name)
				assert.Equal(t, int32(1), e.DeprecatedCount)
			}
			assert.Equal(t, tt.stored, stored)
		})
	}
}

// A retry carries the occurrences counted while it waited, and a series
// whose later write landed needs no retry.
func TestRecorderRetryCarriesTheSeries(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	st := &flakyStore{Store: store.NewMemory(), fail: 2, err: errUnreachable}
	rec, err := events.NewRecorder(events.Options{Store: st, Clock: clk})
	require.NoError(t, err)
	startRecorder(t, rec)

	rec.Event(ctx, vm("a"), virtkit.EventTypeNormal, "Started", "Start", "started")
	rec.Event(ctx, vm("a"), virtkit.EventTypeNormal, "Started", "Start", "started")
	stepRetry(t, clk, rec)
	evs := listEvents(t, st)
	require.Len(t, evs, 1, "one queued retry per series")
	assert.Equal(t, int32(2), evs[0].DeprecatedCount)
	assert.Equal(t, events.Stats{Created: 1, Failed: 2, Retries: 1, Retried: 1}, rec.Stats())

	st.mu.Lock()
	st.fail = 1
	st.mu.Unlock()
	rec.Event(ctx, vm("a"), virtkit.EventTypeNormal, "Started", "Start", "started")
	rec.Event(ctx, vm("a"), virtkit.EventTypeNormal, "Started", "Start", "started")
	require.Eventually(t, clk.HasWaiters, 30*time.Second, time.Millisecond)
	clk.Step(events.DefaultRetryInterval)
	require.Eventually(t, func() bool { return !clk.HasWaiters() }, 30*time.Second, time.Millisecond)
	evs = listEvents(t, st)
	require.Len(t, evs, 1)
	assert.Equal(t, int32(4), evs[0].DeprecatedCount)
	assert.Equal(t, events.Stats{Created: 1, Updated: 1, Failed: 3, Retries: 1, Retried: 1}, rec.Stats(),
		"the later write carried the failed one: no retry")
}

// Failed writes still pending when the recorder stops are given up, and
// Start returns.
func TestRecorderStopGivesUpPending(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	st := &flakyStore{Store: store.NewMemory(), fail: -1, err: errUnreachable}
	rec, err := events.NewRecorder(events.Options{Store: st, Clock: clk})
	require.NoError(t, err)
	done := runStart(t, ctx, rec)
	rec.Event(ctx, vm("a"), virtkit.EventTypeNormal, "Started", "Start", "started")
	require.Eventually(t, clk.HasWaiters, 30*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	assert.Equal(t, events.Stats{Failed: 1, GaveUp: 1}, rec.Stats())
	assert.False(t, clk.HasWaiters(), "the retry timer was stopped")
}
