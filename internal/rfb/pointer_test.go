package rfb

import (
	"context"
	"encoding/binary"
	"image"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A server announcing a framebuffer over the limit is refused before the
// client allocates it.
func TestHandshakeMaxRefusesLargeFramebuffer(t *testing.T) {
	tests := []struct {
		name    string
		w, h    uint16
		limit   image.Point
		wantErr bool
	}{
		{"within", 640, 480, image.Pt(640, 480), false},
		{"too wide", 641, 480, image.Pt(640, 480), true},
		{"too tall", 640, 481, image.Pt(640, 480), true},
		{"absurd", 65535, 65535, image.Pt(DefaultMaxSide, DefaultMaxSide), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn := fakeServer(t, func(s net.Conn) {
				_, _ = io.WriteString(s, "RFB 003.008\n")
				_, _ = io.ReadFull(s, make([]byte, 12))
				_, _ = s.Write([]byte{1, 1})
				_, _ = io.ReadFull(s, make([]byte, 1))
				_, _ = s.Write([]byte{0, 0, 0, 0})
				_, _ = io.ReadFull(s, make([]byte, 1))
				init := binary.BigEndian.AppendUint16(nil, tc.w)
				init = binary.BigEndian.AppendUint16(init, tc.h)
				init = append(init, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0)
				_, _ = s.Write(append(init, rfbString("t")...))
				_, _ = io.Copy(io.Discard, s)
			})
			c, err := HandshakeMax(ctx, conn, tc.limit)
			if tc.wantErr {
				require.ErrorIs(t, err, ErrTooLarge)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, image.Pt(int(tc.w), int(tc.h)), c.Size())
		})
	}
}

// Pointer sends a PointerEvent inside the framebuffer and refuses a
// position outside it.
func TestPointer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan []byte, 1)
	conn := fakeServer(t, func(s net.Conn) {
		serverInit(s)
		b := make([]byte, 6)
		_, _ = io.ReadFull(s, b)
		got <- b
	})
	c, err := Handshake(ctx, conn)
	require.NoError(t, err)
	require.ErrorIs(t, c.Pointer(ctx, image.Pt(2, 0), 0), ErrProtocol)
	require.NoError(t, c.Pointer(ctx, image.Pt(1, 0), 1))
	assert.Equal(t, []byte{5, 1, 0, 1, 0, 0}, <-got)
}
