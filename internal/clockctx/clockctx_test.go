package clockctx_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/virtkit/virtkit/internal/clockctx"
)

func TestWithTimeout(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, clk *clocktesting.FakeClock)
	}{
		{"expires after the clock's time, not the wall's", func(t *testing.T, clk *clocktesting.FakeClock) {
			ctx, cancel := clockctx.WithTimeout(context.Background(), clk, time.Minute)
			defer cancel()
			time.Sleep(5 * time.Millisecond)
			require.NoError(t, ctx.Err())
			clk.Step(59 * time.Second)
			require.NoError(t, ctx.Err())
			clk.Step(time.Second)
			<-ctx.Done()
			assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
			_, has := ctx.Deadline()
			assert.False(t, has, "no wall-clock deadline from a fake clock")
		}},
		{"a derived context sees DeadlineExceeded", func(t *testing.T, clk *clocktesting.FakeClock) {
			ctx, cancel := clockctx.WithTimeout(context.Background(), clk, time.Second)
			defer cancel()
			child, ccancel := context.WithCancel(ctx)
			defer ccancel()
			clk.Step(time.Second)
			<-child.Done()
			assert.ErrorIs(t, child.Err(), context.DeadlineExceeded)
		}},
		{"cancel ends it with Canceled and stops the timer", func(t *testing.T, clk *clocktesting.FakeClock) {
			ctx, cancel := clockctx.WithTimeout(context.Background(), clk, time.Second)
			cancel()
			<-ctx.Done()
			assert.ErrorIs(t, ctx.Err(), context.Canceled)
			assert.False(t, clk.HasWaiters())
		}},
		{"the parent's end ends it", func(t *testing.T, clk *clocktesting.FakeClock) {
			parent, pcancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
			ctx, cancel := clockctx.WithTimeout(parent, clk, time.Hour)
			defer cancel()
			assert.Equal(t, "v", ctx.Value(ctxKey{}))
			pcancel()
			<-ctx.Done()
			assert.ErrorIs(t, ctx.Err(), context.Canceled)
		}},
		{"a parent already ended", func(t *testing.T, clk *clocktesting.FakeClock) {
			parent, pcancel := context.WithCancel(context.Background())
			pcancel()
			ctx, cancel := clockctx.WithTimeout(parent, clk, time.Hour)
			defer cancel()
			assert.ErrorIs(t, ctx.Err(), context.Canceled)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, clocktesting.NewFakeClock(start)) })
	}
}

type ctxKey struct{}

func TestWithTimeoutRealClock(t *testing.T) {
	ctx, cancel := clockctx.WithTimeout(context.Background(), clock.RealClock{}, time.Hour)
	defer cancel()
	dl, ok := ctx.Deadline()
	require.True(t, ok, "the real clock gives a deadline")
	assert.WithinDuration(t, time.Now().Add(time.Hour), dl, time.Minute)
}

// timerOnly is a clock without AfterFunc: the timeout waits on a timer.
type timerOnly struct{ clock.Clock }

func TestWithTimeoutTimerClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	ctx, cancel := clockctx.WithTimeout(context.Background(), timerOnly{clk}, time.Second)
	defer cancel()
	require.NoError(t, ctx.Err())
	clk.Step(time.Second)
	<-ctx.Done()
	assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
}
