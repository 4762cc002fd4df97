package sim

import (
	"context"
	"io"
	"net"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// OpenVNC opens the running domain's display as RFB 3.8 (3.3 and 3.7
// clients are served too), as QEMU's VNC socket does, but text only: an
// 80x25 console of 8x16 character cells (640x400 pixels) showing a
// session of the simulated shell of OpenConsole. The display is the
// domain's, as QEMU's is: every viewer sees the same screen, which shows
// the boot messages and a prompt from the first frame on, and it moves
// with a live migration (a viewer on the target sees what the source
// showed). Keys typed in any viewer reach that shell (X keysyms of
// printable ASCII, Return, BackSpace, Tab, Escape, the arrows and
// Control-letter); pointer events and cut text are ignored; the client's
// shared flag is ignored (every viewer shares). The display offers
// security type None only and sends Raw updates in the client's pixel
// format (true colour, 8, 16 or 32 bits per pixel; others close the
// connection). The connection closes when the domain stops running on the
// host (stopped, or migrated away) or the client leaves.
func (h *Host) OpenVNC(ctx context.Context, name string) (io.ReadWriteCloser, error) {
	const op = "open vnc"
	f, err := newFont()
	if err != nil {
		return nil, hypervisor.WrapDomain(op, name, err)
	}
	var (
		disp    *display
		stopped <-chan struct{}
	)
	err = h.do(ctx, func(time.Time) error {
		d, err := h.lookup(op, name)
		if err != nil {
			return err
		}
		if !d.state.IsActive() {
			return invalidState(op, name, "domain is not running")
		}
		if d.display == nil {
			d.display = newDisplay(h.info(d))
		}
		disp, stopped = d.display, d.stopped
		return nil
	})
	if err != nil {
		return nil, err
	}
	server, client := net.Pipe()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		// The display ends with the domain's run on this host.
		select {
		case <-stopped:
			cancel()
		case <-sctx.Done():
		}
	}()
	go func() {
		defer cancel()
		_ = serveRFB(sctx, server, disp.term, f, disp, name)
	}()
	return client, nil
}

// X keysyms the display maps to console input (X11 keysymdef.h).
const (
	xkBackSpace = 0xff08
	xkTab       = 0xff09
	xkReturn    = 0xff0d
	xkEscape    = 0xff1b
	xkLeft      = 0xff51
	xkUp        = 0xff52
	xkRight     = 0xff53
	xkDown      = 0xff54
	xkKPEnter   = 0xff8d
	xkKP0       = 0xffb0
	xkKP9       = 0xffb9
	xkControlL  = 0xffe3
	xkControlR  = 0xffe4
	xkDelete    = 0xffff
)

// keyBytes is what a pressed key types on the console, nil for keys
// that type nothing (modifiers, function keys, non-ASCII).
func keyBytes(sym uint32, ctrl bool) []byte {
	switch {
	case sym >= 0x20 && sym <= 0x7e:
		b := byte(sym)
		if ctrl && (b >= '@' && b <= '_' || b >= 'a' && b <= 'z') {
			b &= 0x1f
		}
		return []byte{b}
	case sym >= xkKP0 && sym <= xkKP9:
		return []byte{byte('0' + sym - xkKP0)}
	}
	switch sym {
	case xkBackSpace:
		return []byte{0x7f}
	case xkTab:
		return []byte{'\t'}
	case xkReturn, xkKPEnter:
		return []byte{'\r'}
	case xkEscape:
		return []byte{0x1b}
	case xkUp:
		return []byte("\x1b[A")
	case xkDown:
		return []byte("\x1b[B")
	case xkRight:
		return []byte("\x1b[C")
	case xkLeft:
		return []byte("\x1b[D")
	case xkDelete:
		return []byte("\x1b[3~")
	}
	return nil
}

// key handles a KeyEvent: Control is tracked, other presses typed.
func (s *rfbServer) key(down bool, sym uint32) error {
	if sym == xkControlL || sym == xkControlR {
		s.ctrl = down
		return nil
	}
	if !down {
		return nil
	}
	b := keyBytes(sym, s.ctrl)
	if b == nil {
		return nil
	}
	_, err := s.keys.Write(b)
	return err
}
