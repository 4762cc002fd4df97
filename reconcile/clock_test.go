package reconcile

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"
)

// RequeueAfter and the retry backoff wait for Options.Clock, not for real
// time: with a fake clock only Step releases them.
func TestRequeueAndBackoffFollowClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testingclock.NewFakeClock(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
		rec := newRecorder(func(_ context.Context, _ Request, call int) (Result, error) {
			switch call {
			case 1:
				return Result{RequeueAfter: time.Hour}, nil
			case 2:
				return Result{}, errors.New("transient")
			}
			return Result{}, nil
		})
		c, err := New(newFakeSource(), rec, Options{
			Clock:       clk,
			RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[Request](time.Minute, time.Hour),
		}, thingWatch(nil))
		require.NoError(t, err)
		stop := start(t, c)
		req := Request{"ns", "a"}
		c.Enqueue(req)
		synctest.Wait()
		require.Equal(t, 1, rec.count(req))

		clk.Step(59 * time.Minute)
		synctest.Wait()
		assert.Equal(t, 1, rec.count(req), "not before RequeueAfter on the clock")
		clk.Step(time.Minute)
		synctest.Wait()
		assert.Equal(t, 2, rec.count(req), "RequeueAfter on the clock")

		clk.Step(59 * time.Second)
		synctest.Wait()
		assert.Equal(t, 2, rec.count(req), "not before the backoff on the clock")
		clk.Step(time.Second)
		synctest.Wait()
		assert.Equal(t, 3, rec.count(req), "retried after the backoff on the clock")
		assert.True(t, c.Idle())
		stop()
	})
}
