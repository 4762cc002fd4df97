package main

import (
	"context"
	"errors"
	"fmt"
	"image/png"
	"net"
	"os"
	"time"

	"github.com/gorilla/websocket"

	"github.com/virtkit/virtkit/internal/rfb"
	"github.com/virtkit/virtkit/node"
)

// screenshotTimeout bounds taking a screenshot once the stream is open.
const screenshotTimeout = time.Minute

// screenshot speaks VNC on the display stream ws, takes one full
// framebuffer update and writes it to file as PNG.
func screenshot(ctx context.Context, ws *websocket.Conn, file string) (err error) {
	defer ws.Close()
	ctx, cancel := context.WithTimeout(ctx, screenshotTimeout)
	defer cancel()
	local, remote := net.Pipe()
	pumped := make(chan error, 1)
	go func() { pumped <- node.Pump(ctx, ws, remote, false) }()
	defer func() {
		_ = local.Close()
		cancel()
		<-pumped
	}()
	c, err := rfb.Handshake(ctx, local)
	if err != nil {
		return fmt.Errorf("vnc handshake: %w", err)
	}
	img, err := c.Update(ctx, false)
	if err != nil {
		return fmt.Errorf("vnc framebuffer update: %w", err)
	}
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("--screenshot: %w", err)
	}
	if err := png.Encode(f, img); err != nil {
		return errors.Join(fmt.Errorf("--screenshot: %w", err), f.Close())
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--screenshot: %w", err)
	}
	return nil
}
