package guestagent_test

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/guestagent/qgaserver"
)

type faultCase struct {
	name    string
	fault   qgaserver.Fault
	wantErr error // nil: the call succeeds
	stream  bool  // only meaningful with client-side framing
}

func faultCases(faultTimeout time.Duration) []faultCase {
	return []faultCase{
		{name: "slow past deadline", fault: qgaserver.Fault{Mode: qgaserver.FaultSlow, Delay: 3 * faultTimeout, Count: 1}, wantErr: context.DeadlineExceeded},
		{name: "slow within deadline", fault: qgaserver.Fault{Mode: qgaserver.FaultSlow, Delay: faultTimeout / 4, Count: 1}},
		{name: "silent", fault: qgaserver.Fault{Mode: qgaserver.FaultSilent, Count: 1}, wantErr: context.DeadlineExceeded},
		{name: "garbage", fault: qgaserver.Fault{Mode: qgaserver.FaultGarbage, Size: 300, Count: 1}, wantErr: guestagent.ErrProtocol},
		{name: "oversized", fault: qgaserver.Fault{Mode: qgaserver.FaultOversized, Size: 8 << 20, Count: 1}, wantErr: guestagent.ErrReplyTooLarge},
		{name: "wrong sync id", fault: qgaserver.Fault{Mode: qgaserver.FaultWrongSyncID, Count: 1}, wantErr: context.DeadlineExceeded, stream: true},
		{name: "disconnect mid-reply", fault: qgaserver.Fault{Mode: qgaserver.FaultDisconnect, Count: 1}, wantErr: guestagent.ErrDisconnected},
	}
}

// checkFault makes one faulty call and then a clean one. The faulty call
// must fail as expected by its deadline; the clean one must get its own
// reply, not a stale one.
func checkFault(t *testing.T, c *guestagent.Client, tc faultCase, faultTimeout time.Duration) (elapsed time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	start := time.Now()
	host, err := c.HostName(ctx)
	elapsed = time.Since(start)
	if tc.wantErr == nil {
		require.NoError(t, err)
		assert.Equal(t, "guest-1", host)
	} else {
		require.ErrorIs(t, err, tc.wantErr)
	}

	// A slow agent is still busy with the first request: allow for that.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*faultTimeout)
	defer cancel2()
	users, err := c.Users(ctx2)
	require.NoError(t, err, "the call after the fault")
	require.Len(t, users, 1)
	assert.Equal(t, "fedora", users[0].User)
	return elapsed
}

// TestFaultsStream runs every fault mode over the byte-stream transport in
// a synctest bubble: time is virtual, so "returns by its deadline" is exact
// and a call that blocked forever would fail the test as a deadlock.
func TestFaultsStream(t *testing.T) {
	const faultTimeout = time.Second
	for _, tc := range faultCases(faultTimeout) {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				cfg := testGuest()
				cfg.Fault = tc.fault
				srv := qgaserver.New(cfg)
				tr := guestagent.NewStreamTransport(pipeDialer(ctx, srv), guestagent.Options{})
				defer func() { _ = tr.Close() }()
				c := guestagent.New(tr, guestagent.Options{})
				elapsed := checkFault(t, c, tc, faultTimeout)
				assert.LessOrEqual(t, elapsed, faultTimeout)
			})
		})
	}
}

// TestFaultsUnixSocket runs the same modes over a real unix socket in real
// time; the bound on the elapsed time is loose (scheduling), but a call that
// ignored its deadline would exceed it by far.
func TestFaultsUnixSocket(t *testing.T) {
	const faultTimeout = 200 * time.Millisecond
	for _, tc := range faultCases(faultTimeout) {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testGuest()
			cfg.Fault = tc.fault
			srv := qgaserver.New(cfg)
			tr := guestagent.DialUnix(serveUnix(t, srv), guestagent.Options{})
			defer func() { _ = tr.Close() }()
			elapsed := checkFault(t, guestagent.New(tr, guestagent.Options{}), tc, faultTimeout)
			assert.Less(t, elapsed, faultTimeout+time.Second)
		})
	}
}

// TestFaultsPassthrough runs the modes through the agent-command transport,
// as the simulated hypervisor serves them.
func TestFaultsPassthrough(t *testing.T) {
	const faultTimeout = time.Second
	for _, tc := range faultCases(faultTimeout) {
		if tc.stream {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := testGuest()
				cfg.Fault = tc.fault
				srv := qgaserver.New(cfg)
				tr := guestagent.NewPassthroughTransport(passthrough{srv}, "vm-1", guestagent.Options{})
				elapsed := checkFault(t, guestagent.New(tr, guestagent.Options{}), tc, faultTimeout)
				assert.LessOrEqual(t, elapsed, faultTimeout)
			})
		})
	}
}

// TestCancelMidRead: cancelling (not a deadline) unblocks a read at once.
func TestCancelMidRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cfg := testGuest()
		cfg.Fault = qgaserver.Fault{Mode: qgaserver.FaultSilent, Count: 1}
		srv := qgaserver.New(cfg)
		tr := guestagent.NewStreamTransport(pipeDialer(ctx, srv), guestagent.Options{})
		defer func() { _ = tr.Close() }()
		c := guestagent.New(tr, guestagent.Options{})

		callCtx, callCancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, callCancel)
		start := time.Now()
		err := c.Ping(callCtx)
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 300*time.Millisecond, time.Since(start))
		require.NoError(t, c.Ping(context.Background()))
	})
}

// TestNoDeadlineUsesCallTimeout: a context without deadline gets
// Options.CallTimeout.
func TestNoDeadlineUsesCallTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cfg := testGuest()
		cfg.Fault = qgaserver.Fault{Mode: qgaserver.FaultSilent}
		srv := qgaserver.New(cfg)
		tr := guestagent.NewStreamTransport(pipeDialer(ctx, srv), guestagent.Options{})
		defer func() { _ = tr.Close() }()
		c := guestagent.New(tr, guestagent.Options{CallTimeout: 7 * time.Second})
		start := time.Now()
		require.ErrorIs(t, c.Ping(context.Background()), context.DeadlineExceeded)
		assert.Equal(t, 7*time.Second, time.Since(start))
	})
}

// TestOversizedReplyMemoryBounded: a 64 MiB reply is rejected after about
// MaxReplyBytes without the client buffering it.
func TestOversizedReplyMemoryBounded(t *testing.T) {
	const replySize = 64 << 20
	cfg := testGuest()
	srv := qgaserver.New(cfg)
	tr := guestagent.DialUnix(serveUnix(t, srv), guestagent.Options{})
	defer func() { _ = tr.Close() }()
	c := guestagent.New(tr, guestagent.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.Ping(ctx))
	srv.SetFault(qgaserver.Fault{Mode: qgaserver.FaultOversized, Size: replySize, Count: 1})

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := c.OSInfo(ctx)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, guestagent.ErrReplyTooLarge)
	allocated := after.TotalAlloc - before.TotalAlloc
	assert.Less(t, allocated, uint64(8<<20), "allocated %d bytes for a %d-byte reply", allocated, replySize)

	// The rest of the reply is skipped by the next call's resync.
	runtime.ReadMemStats(&before)
	os, err := c.OSInfo(ctx)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	assert.Equal(t, "fedora", os.ID)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8<<20))
}

// TestStaleReplyDiscarded: the reply to a timed-out call arrives late and
// must not be taken for the reply to the next call.
func TestStaleReplyDiscarded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cfg := testGuest()
		srv := qgaserver.New(cfg)
		srv.SetFault(qgaserver.Fault{Mode: qgaserver.FaultSlow, Delay: 2 * time.Second, Commands: []string{guestagent.CmdGetUsers}, Count: 1})
		tr := guestagent.NewStreamTransport(pipeDialer(ctx, srv), guestagent.Options{})
		defer func() { _ = tr.Close() }()
		c := guestagent.New(tr, guestagent.Options{})

		short, cancelShort := context.WithTimeout(context.Background(), time.Second)
		defer cancelShort()
		_, err := c.Users(short)
		require.ErrorIs(t, err, context.DeadlineExceeded)

		// The users reply is still in flight when the next call starts.
		host, err := c.HostName(context.Background())
		require.NoError(t, err)
		assert.Equal(t, "guest-1", host)
		assert.Equal(t, 1, srv.Calls(guestagent.CmdGetUsers))
		assert.Equal(t, 2, srv.Calls(guestagent.CmdSyncDelimited), "one sync per connection plus one after the timeout")
	})
}

// TestStaleReplyByID: a reply carrying another request's id is skipped even
// without a resync (an agent that sends an unsolicited extra reply).
func TestStaleReplyByID(t *testing.T) {
	var calls int
	tr := guestagent.TransportFunc(func(ctx context.Context, req []byte) ([]byte, error) {
		calls++
		return []byte(`{"return": {"host-name": "other"}, "id": "someone-else"}`), nil
	})
	c := guestagent.New(tr, guestagent.Options{})
	_, err := c.HostName(context.Background())
	require.ErrorIs(t, err, guestagent.ErrProtocol)
	assert.Equal(t, 1, calls)
}
