package rfb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
)

// ErrTooLarge: the server's framebuffer exceeds the client's limit.
var ErrTooLarge = errors.New("rfb framebuffer too large")

// DefaultMaxSide is the largest framebuffer width and height Handshake
// accepts.
const DefaultMaxSide = 8192

// Pointer sends a PointerEvent: the pointer at p with the buttons of the
// mask (bit 0 the left button) down.
func (c *Client) Pointer(ctx context.Context, p image.Point, buttons uint8) error {
	if !p.In(c.fb.Rect) {
		return fmt.Errorf("%w: pointer %v outside the %v framebuffer", ErrProtocol, p, c.fb.Rect.Size())
	}
	stop := c.bound(ctx)
	defer stop()
	msg := []byte{5, buttons, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(msg[2:], uint16(p.X))
	binary.BigEndian.PutUint16(msg[4:], uint16(p.Y))
	_, err := c.conn.Write(msg)
	return err
}
