package testnet

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// ServeTCP listens on a loopback port until the test ends and runs handle
// for each connection in its own goroutine, closing the connection when
// handle returns. It returns the listener's address.
func ServeTCP(t testing.TB, handle func(net.Conn)) string {
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
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}
