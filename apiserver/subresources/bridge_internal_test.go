package subresources

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

// wsURL is the ws:// URL of an httptest server.
func wsURL(srv *httptest.Server) string { return "ws" + strings.TrimPrefix(srv.URL, "http") }

// A client's half-close crosses the API server's bridge: the guest, which
// reads to EOF before it answers, gets the EOF and its whole answer comes
// back before the streams close.
func TestBridgeHalfClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// The guest port.
	guest, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer guest.Close()
	go func() {
		for {
			c, err := guest.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				_, _ = io.WriteString(c, "reply to "+string(b))
			}()
		}
	}()
	// The node agent: WebSocket to the guest port.
	nodeSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := net.Dial("tcp", guest.Addr().String())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			_ = c.Close()
			return
		}
		_ = node.Pump(r.Context(), ws, c, false)
	}))
	defer nodeSrv.Close()
	// The API server's proxy.
	bridged := make(chan error, 1)
	apiSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, resp, err := websocket.DefaultDialer.DialContext(r.Context(), wsURL(nodeSrv), nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		_ = resp.Body.Close()
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			_ = n.Close()
			return
		}
		bridged <- bridge(r.Context(), c, n)
	}))
	defer apiSrv.Close()

	// The client: a local TCP connection pumped to the API server.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		ws, resp, err := websocket.DefaultDialer.DialContext(ctx, wsURL(apiSrv), nil)
		if err != nil {
			_ = c.Close()
			return
		}
		_ = resp.Body.Close()
		_ = node.Pump(ctx, ws, c, false)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "last words")
	require.NoError(t, err)
	require.NoError(t, c.(*net.TCPConn).CloseWrite())
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.Equal(t, "reply to last words", string(got))
	select {
	case err := <-bridged:
		assert.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("bridge did not end after both close frames")
	}
}
