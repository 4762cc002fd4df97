package sim

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// RFB limits of the simulated display.
const (
	// rfbHandshakeTimeout bounds the handshake up to ClientInit.
	rfbHandshakeTimeout = 30 * time.Second
	// rfbMessageTimeout bounds the rest of a client message once its type
	// byte arrived, and each framebuffer update written.
	rfbMessageTimeout = 30 * time.Second
	// maxCutText bounds a ClientCutText message's text.
	maxCutText = 1 << 20
)

// errRFB is wrapped by protocol violations of a VNC client.
var errRFB = errors.New("rfb protocol error")

// pixelFormat is RFB's PIXEL_FORMAT (RFC 6143 7.4), true colour only.
type pixelFormat struct {
	bpp, depth                     uint8
	bigEndian                      bool
	redMax, greenMax, blueMax      uint16
	redShift, greenShift, bluShift uint8
}

// defaultPixelFormat is what ServerInit announces: 32 bits per pixel,
// depth 24, little-endian XRGB.
func defaultPixelFormat() pixelFormat {
	return pixelFormat{bpp: 32, depth: 24, redMax: 255, greenMax: 255, blueMax: 255,
		redShift: 16, greenShift: 8, bluShift: 0}
}

func (p pixelFormat) bytes() []byte {
	b := make([]byte, 16)
	b[0], b[1] = p.bpp, p.depth
	if p.bigEndian {
		b[2] = 1
	}
	b[3] = 1 // true colour
	binary.BigEndian.PutUint16(b[4:], p.redMax)
	binary.BigEndian.PutUint16(b[6:], p.greenMax)
	binary.BigEndian.PutUint16(b[8:], p.blueMax)
	b[10], b[11], b[12] = p.redShift, p.greenShift, p.bluShift
	return b
}

// parsePixelFormat accepts the true-colour formats of 8, 16 or 32 bits per
// pixel whose channels fit the pixel; colour maps are refused.
func parsePixelFormat(b []byte) (pixelFormat, error) {
	p := pixelFormat{bpp: b[0], depth: b[1], bigEndian: b[2] != 0,
		redMax: binary.BigEndian.Uint16(b[4:]), greenMax: binary.BigEndian.Uint16(b[6:]), blueMax: binary.BigEndian.Uint16(b[8:]),
		redShift: b[10], greenShift: b[11], bluShift: b[12]}
	if b[3] == 0 {
		return p, fmt.Errorf("%w: SetPixelFormat: colour-map pixel formats are not supported (true colour only)", errRFB)
	}
	if p.bpp != 8 && p.bpp != 16 && p.bpp != 32 {
		return p, fmt.Errorf("%w: SetPixelFormat: %d bits per pixel is not supported (8, 16 or 32)", errRFB, p.bpp)
	}
	for _, c := range []struct {
		max   uint16
		shift uint8
	}{{p.redMax, p.redShift}, {p.greenMax, p.greenShift}, {p.blueMax, p.bluShift}} {
		if c.max == 0 || c.max&(c.max+1) != 0 || int(c.shift)+bitLen(c.max) > int(p.bpp) {
			return p, fmt.Errorf("%w: SetPixelFormat: colour channel max %d shift %d does not fit %d bits per pixel", errRFB, c.max, c.shift, p.bpp)
		}
	}
	return p, nil
}

func bitLen(v uint16) int {
	n := 0
	for ; v != 0; v >>= 1 {
		n++
	}
	return n
}

// pixel encodes an 8-bit-per-channel colour in the format.
func (p pixelFormat) pixel(r, g, b uint8, dst []byte) {
	v := uint32(r)*uint32(p.redMax)/255<<p.redShift |
		uint32(g)*uint32(p.greenMax)/255<<p.greenShift |
		uint32(b)*uint32(p.blueMax)/255<<p.bluShift
	switch p.bpp {
	case 8:
		dst[0] = byte(v)
	case 16:
		if p.bigEndian {
			binary.BigEndian.PutUint16(dst, uint16(v))
		} else {
			binary.LittleEndian.PutUint16(dst, uint16(v))
		}
	default:
		if p.bigEndian {
			binary.BigEndian.PutUint32(dst, v)
		} else {
			binary.LittleEndian.PutUint32(dst, v)
		}
	}
}

// rect is a framebuffer rectangle in pixels.
type rect struct{ x, y, w, h int }

// updateRequest is a pending FramebufferUpdateRequest with the pixel
// format in force when it arrived.
type updateRequest struct {
	area        rect
	incremental bool
	format      pixelFormat
}

// rfbServer serves one VNC client the simulated display: the terminal's
// grid drawn with the font, keys typed into the console.
type rfbServer struct {
	conn net.Conn
	term *terminal
	font *font
	keys io.Writer
	name string
	mu   sync.Mutex
	req  *updateRequest
	wake chan struct{} // a request arrived
	ctrl bool          // a Control key is down
	sent *screen       // what the client has, nil before the first update
}

// serveRFB runs the RFB 3.8 server side (3.3 and 3.7 clients are served
// too) on conn until the client leaves, ctx ends or the client breaks the
// protocol. Only security type None is offered.
func serveRFB(ctx context.Context, conn net.Conn, term *terminal, f *font, keys io.Writer, name string) error {
	s := &rfbServer{conn: conn, term: term, font: f, keys: keys, name: name, wake: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if err := s.handshake(); err != nil {
		return err
	}
	writeErr := make(chan error, 1)
	go func() {
		err := s.writeLoop(ctx)
		_ = conn.Close() // a failed update ends the reader too
		writeErr <- err
	}()
	err := s.readLoop()
	cancel()
	_ = conn.Close()
	werr := <-writeErr
	if closed(err) && !closed(werr) && !errors.Is(werr, context.Canceled) {
		err = werr // the reader ended because the writer failed
	}
	if closed(err) {
		return nil
	}
	return err
}

// closed tells whether err is the end of the connection.
func closed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe)
}

func (s *rfbServer) handshake() error {
	if err := s.conn.SetDeadline(time.Now().Add(rfbHandshakeTimeout)); err != nil {
		return err
	}
	if _, err := io.WriteString(s.conn, "RFB 003.008\n"); err != nil {
		return err
	}
	v := make([]byte, 12)
	if _, err := io.ReadFull(s.conn, v); err != nil {
		return err
	}
	var minor int
	switch string(v) {
	case "RFB 003.003\n":
		minor = 3
	case "RFB 003.007\n":
		minor = 7
	case "RFB 003.008\n", "RFB 003.889\n": // 3.889: Apple's 3.8
		minor = 8
	default:
		if v[0] == 'R' && string(v[:4]) == "RFB " && string(v[4:7]) == "003" && v[8] > '8' {
			minor = 8 // a later 3.x minor: speak 3.8 (RFC 6143 7.1.1)
			break
		}
		// Tell the client why, in 3.8's failure form.
		reason := fmt.Sprintf("unsupported protocol version %q", v)
		_, _ = s.conn.Write(append([]byte{0}, reasonBytes(reason)...))
		return fmt.Errorf("%w: %s", errRFB, reason)
	}
	if minor == 3 {
		if _, err := s.conn.Write([]byte{0, 0, 0, 1}); err != nil { // None
			return err
		}
	} else {
		if _, err := s.conn.Write([]byte{1, 1}); err != nil { // one type: None
			return err
		}
		t := make([]byte, 1)
		if _, err := io.ReadFull(s.conn, t); err != nil {
			return err
		}
		if t[0] != 1 {
			reason := fmt.Sprintf("security type %d is not offered (None only)", t[0])
			if minor == 8 {
				_, _ = s.conn.Write(append([]byte{0, 0, 0, 1}, reasonBytes(reason)...))
			}
			return fmt.Errorf("%w: %s", errRFB, reason)
		}
		if minor == 8 {
			if _, err := s.conn.Write([]byte{0, 0, 0, 0}); err != nil { // SecurityResult OK
				return err
			}
		}
	}
	shared := make([]byte, 1) // ClientInit; every client shares the display
	if _, err := io.ReadFull(s.conn, shared); err != nil {
		return err
	}
	init := make([]byte, 4, 24+len(s.name))
	binary.BigEndian.PutUint16(init[0:], termCols*cellWidth)
	binary.BigEndian.PutUint16(init[2:], termRows*cellHeight)
	init = append(init, defaultPixelFormat().bytes()...)
	init = append(init, reasonBytes(s.name)...)
	if _, err := s.conn.Write(init); err != nil {
		return err
	}
	return s.conn.SetDeadline(time.Time{})
}

// reasonBytes is an RFB string: a 32-bit length, then the bytes.
func reasonBytes(s string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(s)))
	return append(b, s...)
}

// readLoop handles client messages until an error.
func (s *rfbServer) readLoop() error {
	format := defaultPixelFormat()
	t := make([]byte, 1)
	for {
		if _, err := io.ReadFull(s.conn, t); err != nil {
			return err
		}
		// The rest of the message must follow promptly.
		if err := s.conn.SetReadDeadline(time.Now().Add(rfbMessageTimeout)); err != nil {
			return err
		}
		var err error
		switch t[0] {
		case 0: // SetPixelFormat
			var b []byte
			if b, err = s.read(19); err == nil {
				format, err = parsePixelFormat(b[3:])
			}
		case 2: // SetEncodings: Raw is always used, the list is read and ignored
			var b []byte
			if b, err = s.read(3); err == nil {
				_, err = s.read(4 * int(binary.BigEndian.Uint16(b[1:])))
			}
		case 3: // FramebufferUpdateRequest
			var b []byte
			if b, err = s.read(9); err == nil {
				s.request(updateRequest{incremental: b[0] != 0, format: format, area: rect{
					x: int(binary.BigEndian.Uint16(b[1:])), y: int(binary.BigEndian.Uint16(b[3:])),
					w: int(binary.BigEndian.Uint16(b[5:])), h: int(binary.BigEndian.Uint16(b[7:]))}})
			}
		case 4: // KeyEvent
			var b []byte
			if b, err = s.read(7); err == nil {
				err = s.key(b[0] != 0, binary.BigEndian.Uint32(b[3:]))
			}
		case 5: // PointerEvent: no pointer on a text console
			_, err = s.read(5)
		case 6: // ClientCutText: accepted and dropped
			var b []byte
			if b, err = s.read(7); err == nil {
				n := binary.BigEndian.Uint32(b[3:])
				if n > maxCutText {
					return fmt.Errorf("%w: ClientCutText of %d bytes (at most %d)", errRFB, n, maxCutText)
				}
				_, err = io.CopyN(io.Discard, s.conn, int64(n))
			}
		default:
			return fmt.Errorf("%w: unknown client message type %d", errRFB, t[0])
		}
		if err != nil {
			return err
		}
		if err := s.conn.SetReadDeadline(time.Time{}); err != nil {
			return err
		}
	}
}

func (s *rfbServer) read(n int) ([]byte, error) {
	b := make([]byte, n)
	_, err := io.ReadFull(s.conn, b)
	return b, err
}

// request records the latest update request; an earlier one not yet
// answered is replaced (clients wait for an answer before asking again).
func (s *rfbServer) request(r updateRequest) {
	s.mu.Lock()
	if s.req != nil && !s.req.incremental {
		r.incremental = false // keep the pending full update full
	}
	s.req = &r
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// writeLoop answers update requests: a full request at once, an
// incremental one when part of its area changed.
func (s *rfbServer) writeLoop(ctx context.Context) error {
	for {
		cur, changed := s.term.snapshot()
		s.mu.Lock()
		req := s.req
		s.mu.Unlock()
		if req != nil {
			if msg := s.update(*req, &cur); msg != nil {
				s.mu.Lock()
				if s.req == req {
					s.req = nil
				}
				s.mu.Unlock()
				if err := s.conn.SetWriteDeadline(time.Now().Add(rfbMessageTimeout)); err != nil {
					return err
				}
				if _, err := s.conn.Write(msg); err != nil {
					return err
				}
				s.sent = &cur
				continue
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.wake:
		case <-changed:
		}
	}
}

// update is the FramebufferUpdate message answering req on screen cur, or
// nil when an incremental request has nothing new in its area.
func (s *rfbServer) update(req updateRequest, cur *screen) []byte {
	fbW, fbH := termCols*cellWidth, termRows*cellHeight
	area := req.area
	x0, y0 := min(area.x, fbW), min(area.y, fbH)
	x1, y1 := min(area.x+area.w, fbW), min(area.y+area.h, fbH)
	var rects []rect
	if !req.incremental || s.sent == nil {
		if x1 > x0 && y1 > y0 {
			rects = append(rects, rect{x0, y0, x1 - x0, y1 - y0})
		}
	} else {
		// One rectangle a text row: the span of changed cells.
		for row := range termRows {
			first, last := -1, -1
			for col := range termCols {
				if cellOf(s.sent, col, row) != cellOf(cur, col, row) {
					if first < 0 {
						first = col
					}
					last = col
				}
			}
			if first < 0 {
				continue
			}
			r := rect{first * cellWidth, row * cellHeight, (last - first + 1) * cellWidth, cellHeight}
			rx0, ry0 := max(r.x, x0), max(r.y, y0)
			rx1, ry1 := min(r.x+r.w, x1), min(r.y+r.h, y1)
			if rx1 > rx0 && ry1 > ry0 {
				rects = append(rects, rect{rx0, ry0, rx1 - rx0, ry1 - ry0})
			}
		}
		if len(rects) == 0 {
			return nil
		}
	}
	bpp := int(req.format.bpp) / 8
	size := 4
	for _, r := range rects {
		size += 12 + r.w*r.h*bpp
	}
	msg := make([]byte, 4, size)
	binary.BigEndian.PutUint16(msg[2:], uint16(len(rects)))
	for _, r := range rects {
		msg = binary.BigEndian.AppendUint16(msg, uint16(r.x))
		msg = binary.BigEndian.AppendUint16(msg, uint16(r.y))
		msg = binary.BigEndian.AppendUint16(msg, uint16(r.w))
		msg = binary.BigEndian.AppendUint16(msg, uint16(r.h))
		msg = binary.BigEndian.AppendUint32(msg, 0) // Raw
		msg = s.draw(msg, r, cur, req.format, bpp)
	}
	return msg
}

// cell is what one character cell shows: the character and whether the
// cursor is on it.
type cell struct {
	ch     byte
	cursor bool
}

func cellOf(sc *screen, col, row int) cell {
	return cell{ch: sc.cells[row][col], cursor: row == sc.cursorY && col == min(sc.cursorX, termCols-1)}
}

// Colours of the display: light grey on black, as a VGA text console.
const (
	fgGrey = 0xc0
	bgGrey = 0
)

// draw appends the Raw pixels of r on screen sc.
func (s *rfbServer) draw(msg []byte, r rect, sc *screen, f pixelFormat, bpp int) []byte {
	var fg, bg [4]byte
	f.pixel(fgGrey, fgGrey, fgGrey, fg[:])
	f.pixel(bgGrey, bgGrey, bgGrey, bg[:])
	for y := r.y; y < r.y+r.h; y++ {
		row, gy := y/cellHeight, y%cellHeight
		for x := r.x; x < r.x+r.w; x++ {
			c := cellOf(sc, x/cellWidth, row)
			on := s.font[c.ch][gy]&(0x80>>(x%cellWidth)) != 0
			if on != c.cursor {
				msg = append(msg, fg[:bpp]...)
			} else {
				msg = append(msg, bg[:bpp]...)
			}
		}
	}
	return msg
}
