package rfb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"
	"net"
	"time"
)

// ErrProtocol is wrapped by errors of a server that breaks the protocol
// or refuses the connection.
var ErrProtocol = errors.New("rfb protocol error")

// maxServerText bounds the reason strings, desktop name and cut text a
// server sends.
const maxServerText = 1 << 20

// Client is one connection to a VNC server. It is not safe for
// concurrent use.
type Client struct {
	conn net.Conn
	// Name is the desktop name of ServerInit.
	Name string
	fb   *image.RGBA
}

// Handshake speaks RFB 3.8 on conn (security type None, a shared
// session), asks for 32-bit little-endian true colour and the Raw
// encoding. ctx bounds the handshake; conn is closed when ctx ends
// before it is done. A framebuffer wider or taller than DefaultMaxSide
// is refused.
func Handshake(ctx context.Context, conn net.Conn) (*Client, error) {
	return HandshakeMax(ctx, conn, image.Pt(DefaultMaxSide, DefaultMaxSide))
}

// HandshakeMax is Handshake refusing, with ErrTooLarge, a framebuffer
// wider or taller than limit before allocating it.
func HandshakeMax(ctx context.Context, conn net.Conn, limit image.Point) (*Client, error) {
	c := &Client{conn: conn}
	stop := c.bound(ctx)
	defer stop()
	v := make([]byte, 12)
	if _, err := io.ReadFull(conn, v); err != nil {
		return nil, fmt.Errorf("protocol version: %w", err)
	}
	if string(v[:4]) != "RFB " {
		return nil, fmt.Errorf("%w: not an RFB server (%q)", ErrProtocol, v)
	}
	if _, err := io.WriteString(conn, "RFB 003.008\n"); err != nil {
		return nil, err
	}
	n, err := c.read(1)
	if err != nil {
		return nil, fmt.Errorf("security types: %w", err)
	}
	if n[0] == 0 {
		return nil, c.failure("connection refused")
	}
	types, err := c.read(int(n[0]))
	if err != nil {
		return nil, err
	}
	none := false
	for _, t := range types {
		none = none || t == 1
	}
	if !none {
		return nil, fmt.Errorf("%w: security types %v offer no None (1)", ErrProtocol, types)
	}
	if _, err := conn.Write([]byte{1}); err != nil {
		return nil, err
	}
	res, err := c.read(4)
	if err != nil {
		return nil, fmt.Errorf("security result: %w", err)
	}
	if binary.BigEndian.Uint32(res) != 0 {
		return nil, c.failure("security handshake failed")
	}
	if _, err := conn.Write([]byte{1}); err != nil { // ClientInit: shared
		return nil, err
	}
	init, err := c.read(24)
	if err != nil {
		return nil, fmt.Errorf("server init: %w", err)
	}
	w, h := int(binary.BigEndian.Uint16(init[0:])), int(binary.BigEndian.Uint16(init[2:]))
	if w > limit.X || h > limit.Y {
		return nil, fmt.Errorf("%w: framebuffer %dx%d, limit %dx%d", ErrTooLarge, w, h, limit.X, limit.Y)
	}
	name, err := c.text(binary.BigEndian.Uint32(init[20:]))
	if err != nil {
		return nil, err
	}
	c.Name, c.fb = name, image.NewRGBA(image.Rect(0, 0, w, h))
	// SetPixelFormat: 32 bpp, depth 24, little-endian, true colour, XRGB.
	msg := []byte{0, 0, 0, 0, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0}
	// SetEncodings: Raw.
	msg = append(msg, 2, 0, 0, 1, 0, 0, 0, 0)
	if _, err := conn.Write(msg); err != nil {
		return nil, err
	}
	return c, nil
}

// Size is the framebuffer's size.
func (c *Client) Size() image.Point { return c.fb.Rect.Size() }

// bound makes ctx's deadline and cancellation the connection's; the
// returned func undoes it.
func (c *Client) bound(ctx context.Context) func() {
	if d, ok := ctx.Deadline(); ok {
		_ = c.conn.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Unix(1, 0)) })
	return func() {
		stop()
		_ = c.conn.SetDeadline(time.Time{})
	}
}

func (c *Client) read(n int) ([]byte, error) {
	b := make([]byte, n)
	_, err := io.ReadFull(c.conn, b)
	return b, err
}

func (c *Client) text(n uint32) (string, error) {
	if n > maxServerText {
		return "", fmt.Errorf("%w: string of %d bytes", ErrProtocol, n)
	}
	b, err := c.read(int(n))
	return string(b), err
}

// failure reads a failure reason and returns it as an error.
func (c *Client) failure(what string) error {
	n, err := c.read(4)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrProtocol, what)
	}
	reason, err := c.text(binary.BigEndian.Uint32(n))
	if err != nil {
		return fmt.Errorf("%w: %s", ErrProtocol, what)
	}
	return fmt.Errorf("%w: %s: %s", ErrProtocol, what, reason)
}

// Type presses and releases the keys of the X keysyms, in order.
func (c *Client) Type(ctx context.Context, keysyms ...uint32) error {
	stop := c.bound(ctx)
	defer stop()
	var msg []byte
	for _, k := range keysyms {
		for _, down := range []byte{1, 0} {
			msg = append(msg, 4, down, 0, 0)
			msg = binary.BigEndian.AppendUint32(msg, k)
		}
	}
	_, err := c.conn.Write(msg)
	return err
}

// Keysyms are the X keysyms typing s: its printable ASCII, with Return for
// '\n'.
func Keysyms(s string) []uint32 {
	var k []uint32
	for _, r := range s {
		switch {
		case r == '\n':
			k = append(k, 0xff0d)
		case r >= 0x20 && r <= 0x7e:
			k = append(k, uint32(r))
		}
	}
	return k
}

// Update requests an update of the whole framebuffer (incremental: only
// what changed since the last one, which the server may hold back until
// something changes) and returns the framebuffer once it arrived.
func (c *Client) Update(ctx context.Context, incremental bool) (*image.RGBA, error) {
	stop := c.bound(ctx)
	defer stop()
	req := []byte{3, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if incremental {
		req[1] = 1
	}
	size := c.Size()
	binary.BigEndian.PutUint16(req[6:], uint16(size.X))
	binary.BigEndian.PutUint16(req[8:], uint16(size.Y))
	if _, err := c.conn.Write(req); err != nil {
		return nil, err
	}
	for {
		t, err := c.read(1)
		if err != nil {
			return nil, err
		}
		switch t[0] {
		case 0: // FramebufferUpdate
			if err := c.rects(); err != nil {
				return nil, err
			}
			out := image.NewRGBA(c.fb.Rect)
			copy(out.Pix, c.fb.Pix)
			return out, nil
		case 2: // Bell
		case 3: // ServerCutText
			b, err := c.read(7)
			if err != nil {
				return nil, err
			}
			if _, err := c.text(binary.BigEndian.Uint32(b[3:])); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("%w: server message type %d", ErrProtocol, t[0])
		}
	}
}

// rects reads the rectangles of a FramebufferUpdate into the framebuffer.
func (c *Client) rects() error {
	h, err := c.read(3)
	if err != nil {
		return err
	}
	for range binary.BigEndian.Uint16(h[1:]) {
		r, err := c.read(12)
		if err != nil {
			return err
		}
		x, y := int(binary.BigEndian.Uint16(r[0:])), int(binary.BigEndian.Uint16(r[2:]))
		w, hh := int(binary.BigEndian.Uint16(r[4:])), int(binary.BigEndian.Uint16(r[6:]))
		if enc := int32(binary.BigEndian.Uint32(r[8:])); enc != 0 {
			return fmt.Errorf("%w: encoding %d (asked for Raw)", ErrProtocol, enc)
		}
		if x+w > c.fb.Rect.Dx() || y+hh > c.fb.Rect.Dy() {
			return fmt.Errorf("%w: rectangle %dx%d+%d+%d outside the %v framebuffer", ErrProtocol, w, hh, x, y, c.fb.Rect.Size())
		}
		px, err := c.read(4 * w * hh)
		if err != nil {
			return err
		}
		for i := range w * hh {
			p := px[4*i:]
			c.fb.SetRGBA(x+i%w, y+i/w, color.RGBA{R: p[2], G: p[1], B: p[0], A: 255})
		}
	}
	return nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }
