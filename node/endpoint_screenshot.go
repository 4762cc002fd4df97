package node

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/virtkit/virtkit/internal/rfb"
)

// Bounds of a VNC screenshot.
const (
	// screenshotTimeout bounds connecting to the display, the RFB
	// handshake and the one full frame.
	screenshotTimeout = 10 * time.Second
	// MaxScreenshotSide is the largest display width and height a
	// screenshot takes (64 MiB of pixels); a larger one is refused.
	MaxScreenshotSide = 4096
	// ScreenshotVerb is the endpoint verb of a screenshot:
	// .../virtualmachineinstances/NAME/vnc/screenshot[?moveCursor=true].
	ScreenshotVerb = "vnc/screenshot"
)

// serveScreenshot connects to the domain's VNC display, takes one full
// frame and answers it as image/png. moveCursor=true first moves the
// pointer, to wake a screen saver.
func (e *Endpoint) serveScreenshot(w http.ResponseWriter, r *http.Request, req endpointRequest) {
	moveCursor := false
	switch q := r.URL.Query().Get("moveCursor"); q {
	case "", "false":
	case "true":
		moveCursor = true
	default:
		http.Error(w, fmt.Sprintf("moveCursor: %q is not true or false", q), http.StatusBadRequest)
		return
	}
	select {
	case e.slots <- struct{}{}:
		defer func() { <-e.slots }()
	default:
		http.Error(w, fmt.Sprintf("node %s: too many streams (%d)", e.a.opts.NodeName, e.opts.MaxStreams), http.StatusTooManyRequests)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), screenshotTimeout)
	defer cancel()
	img, err := e.screenshot(ctx, req, moveCursor)
	if err != nil {
		e.log.Debug("screenshot", "vmi", req.namespace+"/"+req.name, "err", err)
		http.Error(w, "screenshot: "+endpointMessage(err), errorCode(err))
		return
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		http.Error(w, "screenshot: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Content-Length", fmt.Sprint(buf.Len()))
	_, _ = w.Write(buf.Bytes())
}

// screenshot takes one full frame of the domain's display.
func (e *Endpoint) screenshot(ctx context.Context, req endpointRequest, moveCursor bool) (*image.RGBA, error) {
	vnc := req
	vnc.verb = "vnc"
	target, err := e.open(ctx, vnc, nil)
	if err != nil {
		return nil, err
	}
	conn, ok := target.(net.Conn)
	if !ok {
		local, remote := net.Pipe()
		go func() { _, _ = io.Copy(remote, target); _ = remote.Close() }()
		go func() { _, _ = io.Copy(target, remote); _ = target.Close() }()
		conn = local
	}
	defer conn.Close()
	defer target.Close()
	c, err := rfb.HandshakeMax(ctx, conn, image.Pt(MaxScreenshotSide, MaxScreenshotSide))
	if err != nil {
		return nil, fmt.Errorf("vnc of %s: %w", DomainName(req.namespace, req.name), err)
	}
	if moveCursor {
		size := c.Size()
		if size.X > 1 && size.Y > 1 {
			if err := c.Pointer(ctx, image.Pt(1, 1), 0); err != nil {
				return nil, err
			}
			if err := c.Pointer(ctx, image.Pt(0, 0), 0); err != nil {
				return nil, err
			}
		}
	}
	img, err := c.Update(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("vnc of %s: %w", DomainName(req.namespace, req.name), err)
	}
	return img, nil
}
