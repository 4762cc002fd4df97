package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
)

// streamBufferBytes is the size of one read from a console, display or
// guest port, and so the largest frame sent.
const streamBufferBytes = 32 << 10

// statusForHypervisor maps a hypervisor error to an HTTP status.
func statusForHypervisor(err error) int {
	switch {
	case errors.Is(err, hypervisor.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, hypervisor.ErrInvalidState):
		return http.StatusConflict
	case errors.Is(err, hypervisor.ErrNotSupported):
		return http.StatusNotImplemented
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

// serveStream opens the console, display or guest port, then upgrades the
// request to a WebSocket and copies bytes both ways until either side ends.
func (e *Endpoint) serveStream(w http.ResponseWriter, r *http.Request, req endpointRequest, vmi *virtkit.VirtualMachineInstance) {
	select {
	case e.slots <- struct{}{}:
		defer func() { <-e.slots }()
	default:
		http.Error(w, fmt.Sprintf("node %s: too many streams (%d)", e.a.opts.NodeName, e.opts.MaxStreams), http.StatusTooManyRequests)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), e.opts.DialTimeout)
	target, err := e.open(ctx, req, vmi)
	cancel()
	if err != nil {
		e.log.Debug("open stream", "vmi", req.namespace+"/"+req.name, "verb", req.verb, "err", err)
		http.Error(w, endpointMessage(err), errorCode(err))
		return
	}
	defer target.Close()
	up := websocket.Upgrader{
		Subprotocols:     []string{StreamSubprotocol},
		HandshakeTimeout: e.opts.DialTimeout,
		// Only the API server, authenticated by its certificate, gets
		// here; there is no browser origin to check.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	defer ws.Close()
	ws.SetReadLimit(e.opts.MaxMessageBytes)
	datagrams := req.verb == "portforward" && req.protocol == "udp"
	if err := Pump(r.Context(), ws, target, datagrams); err != nil {
		e.log.Debug("stream ended", "vmi", req.namespace+"/"+req.name, "verb", req.verb, "err", err)
	}
}

// open connects to what the request names.
func (e *Endpoint) open(ctx context.Context, req endpointRequest, vmi *virtkit.VirtualMachineInstance) (rwc io.ReadWriteCloser, err error) {
	dom := DomainName(req.namespace, req.name)
	hv := e.a.opts.Hypervisor
	switch req.verb {
	case "console":
		c, ok := hv.(hypervisor.ConsoleOpener)
		if !ok {
			return nil, hypervisor.NotSupportedError("OpenConsole", "the node's hypervisor has no console access")
		}
		return c.OpenConsole(ctx, dom)
	case "vnc":
		v, ok := hv.(hypervisor.VNCOpener)
		if !ok {
			return nil, hypervisor.NotSupportedError("OpenVNC", "the node's hypervisor has no VNC access")
		}
		return v.OpenVNC(ctx, dom)
	}
	var natMACs map[string]bool
	if _, ok := hv.(hypervisor.GuestDialer); !ok {
		if natMACs, err = e.userModeMACs(ctx, dom); err != nil {
			return nil, err
		}
	}
	addr, err := e.guestAddress(ctx, vmi, natMACs)
	if d, ok := hv.(hypervisor.GuestDialer); ok {
		// The backend reaches its guests its own way; it gets the
		// address the node assigned, if any, and, when it models the
		// guest's services, what the VMI declares of them.
		if c, ok := hv.(hypervisor.GuestConfigurer); ok {
			cfg, err := guestConfig(vmi)
			if err != nil {
				return nil, err
			}
			if err := c.ConfigureGuest(ctx, dom, cfg); err != nil {
				return nil, err
			}
		}
		return d.DialGuest(ctx, dom, req.protocol, net.JoinHostPort(addr, strconv.Itoa(req.port)))
	}
	if err != nil {
		return nil, err
	}
	target := net.JoinHostPort(addr, strconv.Itoa(req.port))
	c, err := e.policy.Dialer(nil).DialContext(ctx, req.protocol, target)
	if err != nil {
		return nil, fmt.Errorf("portforward to %s %s: %w", req.protocol, target, err)
	}
	return c, nil
}

// userModeMACs returns the MACs of the domain's NICs on QEMU's user-mode
// NAT: the addresses the guest reports for them are private to QEMU.
func (e *Endpoint) userModeMACs(ctx context.Context, dom string) (map[string]bool, error) {
	x, err := e.a.opts.Hypervisor.XML(ctx, dom)
	if err != nil {
		return nil, err
	}
	var d libvirtxml.Domain
	if err := d.Unmarshal(x); err != nil {
		return nil, fmt.Errorf("domain %s XML: %w", dom, err)
	}
	macs := map[string]bool{}
	if d.Devices != nil {
		for _, i := range d.Devices.Interfaces {
			if i.Source != nil && i.Source.User != nil && i.MAC != nil {
				macs[strings.ToLower(i.MAC.Address)] = true
			}
		}
	}
	return macs, nil
}

// Pump copies bytes between a WebSocket and a stream until both
// directions end, or one fails, or ctx ends, then closes both: each binary
// (or text) message is written to the stream, each read from the stream
// is sent as one binary message. With datagrams, each message is written
// with one Write (UDP keeps the boundaries).
//
// A direction ends as a TCP half-close does: when the stream reaches EOF,
// Pump sends a normal close frame and keeps writing what the WebSocket
// brings; when the peer's normal close frame arrives, Pump half-closes the
// stream (CloseWrite, when the stream has it, as a *net.TCPConn does) and
// keeps sending what the stream yields until its EOF. A stream without
// CloseWrite ends both directions at the peer's close frame. Pump does not
// echo the peer's close frame at once (it would end the other direction):
// its own close frame follows its own EOF. It returns the error that ended
// the copy, nil on normal ends.
func Pump(ctx context.Context, ws *websocket.Conn, rwc io.ReadWriteCloser, datagrams bool) error {
	ws.SetCloseHandler(func(int, string) error { return nil })
	inDone := make(chan error, 1)  // WebSocket -> stream ended
	outDone := make(chan error, 1) // stream -> WebSocket ended
	go func() { inDone <- pumpIn(ws, rwc, datagrams) }()
	go func() { outDone <- pumpOut(ws, rwc) }()
	closeSent := false
	sendClose := func() error {
		if closeSent {
			return nil
		}
		closeSent = true
		msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
		return ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
	}
	var err error
	in, out := false, false
loop:
	for !in || !out {
		select {
		case <-ctx.Done():
			break loop
		case e := <-inDone:
			in = true
			if !normalClose(e) {
				err = e
				break loop
			}
			cw, ok := rwc.(interface{ CloseWrite() error })
			if !ok {
				break loop
			}
			if e := cw.CloseWrite(); e != nil {
				err = e
				break loop
			}
		case e := <-outDone:
			out = true
			if !errors.Is(e, io.EOF) {
				err = e
				break loop
			}
			if e := sendClose(); e != nil {
				err = e
				break loop
			}
		}
	}
	_ = sendClose()
	_ = rwc.Close()
	_ = ws.Close()
	if err == nil || errors.Is(err, io.EOF) || normalClose(err) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// normalClose reports whether err is the peer's normal close frame.
func normalClose(err error) bool {
	return websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway)
}

// pumpIn writes the WebSocket's data messages to w until the WebSocket
// ends (its error: a *websocket.CloseError on a close frame).
func pumpIn(ws *websocket.Conn, w io.Writer, datagrams bool) error {
	for {
		mt, r, err := ws.NextReader()
		if err != nil {
			return err
		}
		if mt != websocket.BinaryMessage && mt != websocket.TextMessage {
			continue
		}
		if datagrams {
			b, err := io.ReadAll(r)
			if err == nil {
				_, err = w.Write(b)
			}
			if err != nil {
				return err
			}
			continue
		}
		if _, err := io.Copy(w, r); err != nil {
			return err
		}
	}
}

// pumpOut sends what r yields as binary messages until r ends (io.EOF at
// its end).
func pumpOut(ws *websocket.Conn, r io.Reader) error {
	buf := make([]byte, streamBufferBytes)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if werr := ws.WriteMessage(websocket.BinaryMessage, buf[:n]); werr != nil {
				return werr
			}
		}
		if err != nil {
			return err
		}
	}
}
