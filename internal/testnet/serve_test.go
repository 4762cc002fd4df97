package testnet_test

import (
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/internal/testnet"
)

func TestServeTCPRunsHandlerPerConnection(t *testing.T) {
	addr := testnet.ServeTCP(t, func(c net.Conn) { _, _ = io.WriteString(c, c.RemoteAddr().String()) })
	for range 2 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		got, err := io.ReadAll(c) // the server closes after the handler
		require.NoError(t, err)
		assert.Equal(t, c.LocalAddr().String(), string(got))
		_ = c.Close()
	}
}
