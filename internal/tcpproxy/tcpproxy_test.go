package tcpproxy_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/internal/tcpproxy"
	"github.com/virtkit/virtkit/internal/testnet"
)

// echoServer echoes every line back until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	return testnet.ServeTCP(t, func(c net.Conn) { _, _ = io.Copy(c, c) })
}

func start(t *testing.T, target string) *tcpproxy.Proxy {
	t.Helper()
	p, err := tcpproxy.Start(t.Context(), tcpproxy.Options{Target: target})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

type lineConn struct {
	net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *lineConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return &lineConn{Conn: c, r: bufio.NewReader(c)}
}

// roundTrip sends a line and waits up to wait for its echo; it returns
// the echo or an error.
func (c *lineConn) roundTrip(t *testing.T, line string, wait time.Duration) (string, error) {
	t.Helper()
	_, err := c.Write([]byte(line + "\n"))
	require.NoError(t, err)
	return c.readLine(wait)
}

func (c *lineConn) readLine(wait time.Duration) (string, error) {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	s, err := c.r.ReadString('\n')
	return s, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestForwardCutHeal(t *testing.T) {
	p := start(t, echoServer(t))
	c := dial(t, p.Addr())
	got, err := c.roundTrip(t, "one", 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "one\n", got)

	p.Cut()
	assert.True(t, p.IsCut())
	// An open connection goes silent: no error, no echo.
	_, err = c.roundTrip(t, "two", 300*time.Millisecond)
	require.True(t, isTimeout(err), "want silence while cut, got %v", err)
	// A new connection is accepted but not forwarded.
	c2 := dial(t, p.Addr())
	_, err = c2.roundTrip(t, "three", 300*time.Millisecond)
	require.True(t, isTimeout(err), "want silence on a new connection while cut, got %v", err)

	p.Heal()
	assert.False(t, p.IsCut())
	// What was held arrives after the heal, in order.
	got, err = c.readLine(10 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, "two\n", got)
	got, err = c2.readLine(10 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, "three\n", got)
	got, err = c.roundTrip(t, "four", 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "four\n", got)

	st := p.Stats()
	assert.EqualValues(t, 2, st.Accepted)
	assert.EqualValues(t, 2, st.Open)
	// Each line crossed twice (there and back). The proxy counts a chunk
	// once its write returns, which can be after the client has read it.
	want := int64(2 * len("one\ntwo\nthree\nfour\n"))
	assert.Eventually(t, func() bool { return p.Stats().Forwarded == want }, 10*time.Second, time.Millisecond,
		"forwarded %d bytes, want %d", p.Stats().Forwarded, want)
}

func TestLatency(t *testing.T) {
	p := start(t, echoServer(t))
	c := dial(t, p.Addr())
	_, err := c.roundTrip(t, "warm", 10*time.Second)
	require.NoError(t, err)
	p.SetLatency(200 * time.Millisecond)
	began := time.Now()
	got, err := c.roundTrip(t, "slow", 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "slow\n", got)
	// Held once each way.
	assert.GreaterOrEqual(t, time.Since(began), 400*time.Millisecond)
	p.SetLatency(0)
	_, err = c.roundTrip(t, "fast", 10*time.Second)
	require.NoError(t, err)
}

func TestCloseEndsConnections(t *testing.T) {
	p := start(t, echoServer(t))
	c := dial(t, p.Addr())
	_, err := c.roundTrip(t, "x", 10*time.Second)
	require.NoError(t, err)
	p.Cut()
	require.NoError(t, p.Close())
	_, err = c.readLine(10 * time.Second)
	require.Error(t, err)
	require.False(t, isTimeout(err), "a closed proxy closes its connections: %v", err)
	_, err = net.DialTimeout("tcp", p.Addr(), time.Second)
	require.Error(t, err, "a closed proxy no longer listens")
}

func TestContextEndsProxy(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	p, err := tcpproxy.Start(ctx, tcpproxy.Options{Target: echoServer(t)})
	require.NoError(t, err)
	c := dial(t, p.Addr())
	_, err = c.roundTrip(t, "x", 10*time.Second)
	require.NoError(t, err)
	cancel()
	_, err = c.readLine(10 * time.Second)
	require.Error(t, err)
	require.NoError(t, p.Close())
}

func TestUnreachableTargetClosesClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	require.NoError(t, ln.Close())
	p := start(t, dead)
	c := dial(t, p.Addr())
	_, err = c.readLine(10 * time.Second)
	require.Error(t, err)
	require.False(t, isTimeout(err), "the client sees the failed dial as a closed connection: %v", err)
}

func TestInvalidOptions(t *testing.T) {
	tests := []struct {
		name string
		opts tcpproxy.Options
	}{
		{"no target", tcpproxy.Options{}},
		{"target without port", tcpproxy.Options{Target: "127.0.0.1"}},
		{"negative dial timeout", tcpproxy.Options{Target: "127.0.0.1:1", DialTimeout: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tcpproxy.Start(t.Context(), tt.opts)
			require.ErrorIs(t, err, virtkit.ErrInvalidOptions)
		})
	}
}
