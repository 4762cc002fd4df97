package sim

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every printable character has its own glyph, told apart from the others
// also when inverted under the cursor, and none is the unknown-byte box.
func TestVNCFontGlyphsDistinct(t *testing.T) {
	f, err := newFont()
	require.NoError(t, err)
	seen := map[glyph]byte{}
	for ch := byte(0x20); ch <= 0x7e; ch++ {
		g := f[ch]
		prev, dup := seen[g]
		require.False(t, dup, "%q and %q share a glyph", ch, prev)
		seen[g] = ch
		assert.NotEqual(t, f[0], g, "%q is the box", ch)
	}
	for ch := byte(0x20); ch <= 0x7e; ch++ {
		inv := f[ch]
		for i := range inv {
			inv[i] = ^inv[i]
		}
		_, dup := seen[inv]
		assert.False(t, dup, "inverted %q is another glyph", ch)
	}
	assert.Equal(t, glyph{}, f[' '])
}

func TestVNCKeyBytes(t *testing.T) {
	tests := []struct {
		name string
		sym  uint32
		ctrl bool
		want []byte
	}{
		{"letter", 'a', false, []byte("a")},
		{"shifted letter", 'A', false, []byte("A")},
		{"ctrl-c", 'c', true, []byte{0x03}},
		{"ctrl-d upper", 'D', true, []byte{0x04}},
		{"return", 0xff0d, false, []byte("\r")},
		{"keypad enter", 0xff8d, false, []byte("\r")},
		{"backspace", 0xff08, false, []byte{0x7f}},
		{"keypad 7", 0xffb7, false, []byte("7")},
		{"up", 0xff52, false, []byte("\x1b[A")},
		{"shift", 0xffe1, false, nil},
		{"F1", 0xffbe, false, nil},
		{"latin-1 e acute", 0xe9, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, keyBytes(tc.sym, tc.ctrl))
		})
	}
}

func TestVNCPixelFormats(t *testing.T) {
	pf := func(bpp, depth, bigEndian, trueColour byte, rmax, gmax, bmax uint16, rs, gs, bs byte) []byte {
		b := []byte{bpp, depth, bigEndian, trueColour}
		b = binary.BigEndian.AppendUint16(b, rmax)
		b = binary.BigEndian.AppendUint16(b, gmax)
		b = binary.BigEndian.AppendUint16(b, bmax)
		return append(b, rs, gs, bs, 0, 0, 0)
	}
	tests := []struct {
		name    string
		in      []byte
		wantErr string
		// fg is the light grey foreground encoded in the format.
		fg []byte
	}{
		{"default XRGB little-endian", pf(32, 24, 0, 1, 255, 255, 255, 16, 8, 0), "", []byte{0xc0, 0xc0, 0xc0, 0}},
		{"XBGR big-endian", pf(32, 24, 1, 1, 255, 255, 255, 0, 8, 16), "", []byte{0, 0xc0, 0xc0, 0xc0}},
		{"RGB565 big-endian", pf(16, 16, 1, 1, 31, 63, 31, 11, 5, 0), "", []byte{0xbd, 0xf7}},
		{"BGR233", pf(8, 8, 0, 1, 7, 7, 3, 0, 3, 6), "", []byte{0x80 | 0x28 | 0x05}},
		{"colour map", pf(8, 8, 0, 0, 0, 0, 0, 0, 0, 0), "colour-map", nil},
		{"24 bpp", pf(24, 24, 0, 1, 255, 255, 255, 16, 8, 0), "24 bits per pixel", nil},
		{"max not 2^n-1", pf(32, 24, 0, 1, 200, 255, 255, 16, 8, 0), "max 200", nil},
		{"shift overflow", pf(16, 16, 0, 1, 31, 63, 31, 12, 5, 0), "shift 12", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := parsePixelFormat(tc.in)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, errRFB)
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			got := make([]byte, p.bpp/8)
			p.pixel(fgGrey, fgGrey, fgGrey, got)
			assert.Equal(t, tc.fg, got)
		})
	}
}

// rfbPair runs serveRFB on one end of a pipe over a fresh terminal; keys
// typed are collected.
type rfbPair struct {
	client net.Conn
	term   *terminal
	done   chan error
	mu     sync.Mutex
	keys   []byte
}

func (p *rfbPair) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys = append(p.keys, b...)
	return len(b), nil
}

func startRFB(t *testing.T, ctx context.Context) *rfbPair {
	t.Helper()
	f, err := newFont()
	require.NoError(t, err)
	server, client := net.Pipe()
	p := &rfbPair{client: client, term: newTerminal(), done: make(chan error, 1)}
	go func() { p.done <- serveRFB(ctx, server, p.term, f, p, "test") }()
	t.Cleanup(func() { _ = client.Close() })
	require.NoError(t, client.SetDeadline(time.Now().Add(30*time.Second)))
	return p
}

func (p *rfbPair) send(t *testing.T, b ...byte) {
	t.Helper()
	_, err := p.client.Write(b)
	require.NoError(t, err)
}

func (p *rfbPair) recv(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	_, err := io.ReadFull(p.client, b)
	require.NoError(t, err)
	return b
}

// handshake38 runs the 3.8 handshake up to ServerInit.
func (p *rfbPair) handshake38(t *testing.T) {
	t.Helper()
	assert.Equal(t, "RFB 003.008\n", string(p.recv(t, 12)))
	p.send(t, []byte("RFB 003.008\n")...)
	assert.Equal(t, []byte{1, 1}, p.recv(t, 2), "one security type: None")
	p.send(t, 1)
	assert.Equal(t, []byte{0, 0, 0, 0}, p.recv(t, 4), "security result OK")
	p.send(t, 1)
	init := p.recv(t, 24)
	assert.Equal(t, []byte{0x02, 0x80, 0x01, 0x90}, init[:4], "640x400")
	assert.Equal(t, defaultPixelFormat().bytes(), init[4:20])
	assert.Equal(t, "test", string(p.recv(t, int(binary.BigEndian.Uint32(init[20:])))))
}

func (p *rfbPair) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-p.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not end")
		return nil
	}
}

// The protocol: 3.3 clients get security None without a list, refused
// versions and security types get a reason, updates follow the pixel
// format asked for, an incremental request waits for a change, keys are
// typed, pointer events ignored, oversized cut text closes the
// connection.
func TestVNCProtocol(t *testing.T) {
	ctx := context.Background()
	t.Run("3.3", func(t *testing.T) {
		p := startRFB(t, ctx)
		p.recv(t, 12)
		p.send(t, []byte("RFB 003.003\n")...)
		assert.Equal(t, []byte{0, 0, 0, 1}, p.recv(t, 4))
		p.send(t, 0)
		p.recv(t, 24)
	})
	t.Run("bad version", func(t *testing.T) {
		p := startRFB(t, ctx)
		p.recv(t, 12)
		p.send(t, []byte("RFB 002.000\n")...)
		assert.Equal(t, byte(0), p.recv(t, 1)[0])
		reason := p.recv(t, int(binary.BigEndian.Uint32(p.recv(t, 4))))
		assert.Contains(t, string(reason), "unsupported protocol version")
		assert.ErrorIs(t, p.wait(t), errRFB)
	})
	t.Run("security type VNC auth", func(t *testing.T) {
		p := startRFB(t, ctx)
		p.recv(t, 12)
		p.send(t, []byte("RFB 003.008\n")...)
		p.recv(t, 2)
		p.send(t, 2)
		assert.Equal(t, []byte{0, 0, 0, 1}, p.recv(t, 4), "security result failed")
		reason := p.recv(t, int(binary.BigEndian.Uint32(p.recv(t, 4))))
		assert.Contains(t, string(reason), "None only")
		assert.ErrorIs(t, p.wait(t), errRFB)
	})
	t.Run("updates keys and pointer", func(t *testing.T) {
		p := startRFB(t, ctx)
		p.handshake38(t)
		// SetEncodings (Raw, CopyRect, DesktopSize), SetPixelFormat RGB565 big-endian.
		p.send(t, 2, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0x21)
		p.send(t, 0, 0, 0, 0, 16, 16, 1, 1, 0, 31, 0, 63, 0, 31, 11, 5, 0, 0, 0, 0)
		// A full update of one cell row: 640x16 at 2 bytes a pixel.
		p.send(t, 3, 0, 0, 0, 0, 0, 0x02, 0x80, 0, 16)
		hdr := p.recv(t, 16)
		assert.Equal(t, []byte{0, 0, 0, 1, 0, 0, 0, 0, 0x02, 0x80, 0, 16, 0, 0, 0, 0}, hdr)
		px := p.recv(t, 640*16*2)
		assert.Equal(t, []byte{0xbd, 0xf7}, px[:2], "the cursor cell (inverted) in RGB565")
		// Incremental: nothing until the screen changes, then the changed cells.
		p.send(t, 3, 1, 0, 0, 0, 0, 0x02, 0x80, 0x01, 0x90)
		p.send(t, 5, 0, 0, 10, 0, 10) // PointerEvent, ignored
		p.send(t, 4, 1, 0, 0, 0, 0, 0, 'x')
		p.send(t, 4, 0, 0, 0, 0, 0, 0, 'x')
		require.Eventually(t, func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			return string(p.keys) == "x"
		}, 10*time.Second, time.Millisecond, "the key reaches the console")
		_, _ = p.term.Write([]byte("ab"))
		hdr = p.recv(t, 16)
		assert.Equal(t, []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 24, 0, 16, 0, 0, 0, 0}, hdr, "cells 0-2 of row 0: a, b, the cursor")
		p.recv(t, 24*16*2)
		// ClientCutText within the bound is read and dropped.
		p.send(t, 6, 0, 0, 0, 0, 0, 0, 3, 'a', 'b', 'c')
		p.send(t, 3, 0, 0, 0, 0, 0, 0, 8, 0, 16)
		assert.Equal(t, []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 8, 0, 16, 0, 0, 0, 0}, p.recv(t, 16))
		p.recv(t, 8*16*2)
		require.NoError(t, p.client.Close())
		assert.NoError(t, p.wait(t), "a client leaving is no error")
	})
	t.Run("cut text too long", func(t *testing.T) {
		p := startRFB(t, ctx)
		p.handshake38(t)
		p.send(t, 6, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff)
		err := p.wait(t)
		require.ErrorIs(t, err, errRFB)
		assert.ErrorContains(t, err, "ClientCutText")
	})
	t.Run("colour map refused", func(t *testing.T) {
		p := startRFB(t, ctx)
		p.handshake38(t)
		p.send(t, 0, 0, 0, 0, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
		assert.ErrorContains(t, p.wait(t), "colour-map")
		_, err := p.client.Read(make([]byte, 1))
		assert.Error(t, err, "the connection is closed")
	})
	t.Run("context ends", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		p := startRFB(t, cctx)
		p.handshake38(t)
		cancel()
		p.wait(t)
		_, err := p.client.Read(make([]byte, 1))
		assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe), "%v", err)
	})
}

// The terminal interprets console output as a plain terminal: carriage
// return, line feed, backspace, tab, wrapping at 80 columns, scrolling at
// 25 rows; escape sequences show nothing.
func TestVNCTerminal(t *testing.T) {
	row := func(sc screen, y int) string { return strings.TrimRight(string(sc.cells[y][:]), " ") }
	tests := []struct {
		name   string
		in     string
		rows   []string
		cursor [2]int
	}{
		{"lines", "ab\r\ncd", []string{"ab", "cd"}, [2]int{2, 1}},
		{"backspace erase", "abc\b \b", []string{"ab"}, [2]int{2, 0}},
		{"carriage return overwrites", "abc\rX", []string{"Xbc"}, [2]int{1, 0}},
		{"tab", "a\tb", []string{"a       b"}, [2]int{9, 0}},
		{"escape sequences", "a\x1b[1;31mb\x1b[0mc\x1bMd", []string{"abcd"}, [2]int{4, 0}},
		{"bell and NUL", "a\x07\x00b", []string{"ab"}, [2]int{2, 0}},
		{"wrap", strings.Repeat("x", 80) + "y", []string{strings.Repeat("x", 80), "y"}, [2]int{1, 1}},
		{"pending wrap", strings.Repeat("x", 80), []string{strings.Repeat("x", 80), ""}, [2]int{80, 0}},
		{"scroll", "first\r\n" + strings.Repeat("\r\n", 24) + "last", append(make([]string, 24), "last"), [2]int{4, 24}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			term := newTerminal()
			before, changed := term.snapshot()
			_, err := term.Write([]byte(tc.in))
			require.NoError(t, err)
			select {
			case <-changed:
			default:
				t.Fatal("a write signals a change")
			}
			sc, _ := term.snapshot()
			require.NotEqual(t, before, sc)
			for y, want := range tc.rows {
				assert.Equal(t, want, row(sc, y), "row %d", y)
			}
			assert.Equal(t, tc.cursor, [2]int{sc.cursorX, sc.cursorY})
		})
	}
}
