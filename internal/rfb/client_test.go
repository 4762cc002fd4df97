package rfb

import (
	"context"
	"encoding/binary"
	"image/color"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeServer runs script on the server end of a pipe.
func fakeServer(t *testing.T, script func(s net.Conn)) net.Conn {
	t.Helper()
	server, client := net.Pipe()
	go func() {
		defer server.Close()
		script(server)
	}()
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func rfbString(s string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(s))), s...)
}

// serverInit answers a 3.8 handshake with a 2x1 framebuffer named "t".
func serverInit(s net.Conn) {
	_, _ = io.WriteString(s, "RFB 003.008\n")
	_, _ = io.ReadFull(s, make([]byte, 12))
	_, _ = s.Write([]byte{1, 1})
	_, _ = io.ReadFull(s, make([]byte, 1))
	_, _ = s.Write([]byte{0, 0, 0, 0})
	_, _ = io.ReadFull(s, make([]byte, 1))
	init := []byte{0, 2, 0, 1, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0}
	_, _ = s.Write(append(init, rfbString("t")...))
	_, _ = io.ReadFull(s, make([]byte, 20+8)) // SetPixelFormat, SetEncodings
}

func TestHandshakeAndUpdate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tests := []struct {
		name    string
		script  func(s net.Conn)
		wantErr string
	}{
		{"not rfb", func(s net.Conn) { _, _ = io.WriteString(s, "SSH-2.0-x\r\n\r\n") }, "not an RFB server"},
		{"refused", func(s net.Conn) {
			_, _ = io.WriteString(s, "RFB 003.008\n")
			_, _ = io.ReadFull(s, make([]byte, 12))
			_, _ = s.Write(append([]byte{0}, rfbString("too many clients")...))
		}, "connection refused: too many clients"},
		{"no None", func(s net.Conn) {
			_, _ = io.WriteString(s, "RFB 003.008\n")
			_, _ = io.ReadFull(s, make([]byte, 12))
			_, _ = s.Write([]byte{1, 2})
		}, "offer no None"},
		{"rectangle outside", func(s net.Conn) {
			serverInit(s)
			_, _ = io.ReadFull(s, make([]byte, 10))
			_, _ = s.Write([]byte{0, 0, 0, 1, 0, 1, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0})
		}, "outside"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Handshake(ctx, fakeServer(t, tc.script))
			if err == nil {
				_, err = c.Update(ctx, false)
			}
			if tc.wantErr != "" {
				require.ErrorIs(t, err, ErrProtocol)
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			t.Fatal("no error")
		})
	}
}

// A Bell and a ServerCutText before the update are skipped; Raw pixels in
// little-endian XRGB land in the framebuffer.
func TestUpdateRawPixels(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn := fakeServer(t, func(s net.Conn) {
		serverInit(s)
		_, _ = io.ReadFull(s, make([]byte, 10))
		msg := []byte{2, 3, 0, 0, 0}
		msg = append(msg, rfbString("cut")...)
		msg = append(msg, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0)
		_, _ = s.Write(append(msg, 0x30, 0x20, 0x10, 0, 0xff, 0xff, 0xff, 0))
	})
	c, err := Handshake(ctx, conn)
	require.NoError(t, err)
	assert.Equal(t, "t", c.Name)
	img, err := c.Update(ctx, false)
	require.NoError(t, err)
	assert.Equal(t, color.RGBA{R: 0x10, G: 0x20, B: 0x30, A: 255}, img.RGBAAt(0, 0))
	assert.Equal(t, color.RGBA{R: 0xff, G: 0xff, B: 0xff, A: 255}, img.RGBAAt(1, 0))
	_, err = c.Update(ctx, false)
	assert.Error(t, err, "the server is gone")
}

// ctx bounds a read the server never answers.
func TestUpdateHonoursContext(t *testing.T) {
	conn := fakeServer(t, func(s net.Conn) {
		serverInit(s)
		_, _ = io.Copy(io.Discard, s)
	})
	c, err := Handshake(context.Background(), conn)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := c.Update(ctx, true); done <- err }()
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	case <-time.After(30 * time.Second):
		t.Fatal("Update ignored the context")
	}
}
