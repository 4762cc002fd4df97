package node_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/node"
)

// readToEOFServer is a loopback TCP "guest" that reads its client to EOF,
// then answers with what it read and closes: a client that does not
// half-close gets nothing.
func readToEOFServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				b, err := io.ReadAll(c)
				if err != nil {
					return
				}
				_, _ = io.WriteString(c, "got "+strings.ToUpper(string(b)))
			}()
		}
	}()
	return ln.Addr().String()
}

// pumpServer is a WebSocket server that pumps each connection to a new
// TCP connection to target, as the node endpoint does for port-forward.
func pumpServer(t *testing.T, target string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := net.Dial("tcp", target)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		up := websocket.Upgrader{}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			_ = c.Close()
			return
		}
		_ = node.Pump(r.Context(), ws, c, false)
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// localForward listens on loopback and pumps each connection over a new
// WebSocket to url, as virtkit port-forward does.
func localForward(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				ws, resp, err := websocket.DefaultDialer.DialContext(ctx, url, nil)
				if err != nil {
					_ = c.Close()
					return
				}
				_ = resp.Body.Close()
				_ = node.Pump(ctx, ws, c, false)
			}()
		}
	}()
	return ln.Addr().String()
}

// A client that sends and half-closes at once still gets the guest's whole
// reply: the half-close travels over the WebSocket as a close frame, the
// far end half-closes the guest connection and keeps reading until the
// guest closes.
func TestPumpHalfClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	local := localForward(t, ctx, pumpServer(t, readToEOFServer(t)))
	for _, msg := range []string{"hello", strings.Repeat("x", 100<<10)} {
		c, err := net.Dial("tcp", local)
		require.NoError(t, err)
		_, err = io.WriteString(c, msg)
		require.NoError(t, err)
		require.NoError(t, c.(*net.TCPConn).CloseWrite())
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		got, err := io.ReadAll(c)
		require.NoError(t, err)
		want := "got " + strings.ToUpper(msg)
		assert.Equal(t, len(want), len(got))
		assert.True(t, want == string(got), "reply differs")
		_ = c.Close()
	}
}

// A stream without CloseWrite (a console) ends both directions at the
// peer's close frame, and Pump returns.
func TestPumpCloseWithoutHalfClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	pr, pw := io.Pipe()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up := websocket.Upgrader{}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		done <- node.Pump(ctx, ws, struct {
			io.Reader
			io.Writer
			io.Closer
		}{pr, io.Discard, pw}, false)
	}))
	defer srv.Close()
	ws, resp, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	defer ws.Close()
	require.NoError(t, ws.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second)))
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("Pump did not return after the peer's close frame")
	}
}
