package guestagent_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/guestagent/qgaserver"
)

// With PollerOptions.Clock the schedule follows that clock, not real time:
// the second round waits for the fake clock to pass InitialInterval, and
// the snapshot is stamped with the fake time.
func TestPollerFollowsClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
		clk := testingclock.NewFakeClock(start)
		srv := qgaserver.New(testGuest())
		tr := guestagent.NewStreamTransport(pipeDialer(ctx, srv), guestagent.Options{})
		p := guestagent.NewPoller(guestagent.New(tr, guestagent.Options{}), guestagent.PollerOptions{Clock: clk})
		done := make(chan error, 1)
		go func() { done <- p.Start(ctx) }()

		synctest.Wait()
		assert.Equal(t, 1, srv.Calls(guestagent.CmdGetOSInfo), "the first poll is at once")
		assert.Equal(t, start, p.Snapshot().UpdatedAt)
		time.Sleep(time.Hour) // real (bubble) time alone polls nothing more
		synctest.Wait()
		assert.Equal(t, 1, srv.Calls(guestagent.CmdGetOSInfo))

		clk.Step(10 * time.Second)
		synctest.Wait()
		assert.Equal(t, 2, srv.Calls(guestagent.CmdGetOSInfo), "polled again once the clock passed 10 s")
		assert.Equal(t, start.Add(10*time.Second), p.Snapshot().UpdatedAt)

		cancel()
		require.NoError(t, <-done)
		_ = tr.Close()
	})
}
