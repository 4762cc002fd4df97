package realqemu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"
)

// linkSample is how much MeasureLink sends.
const linkSample = 256 << 20

// MeasureLink measures the TCP throughput, in bytes/s, between two
// sockets on addr (a local address, such as 127.0.0.1, that both libvirt
// daemons' QEMUs migrate over): the capacity of the benchmark's link,
// which QEMU's stop-and-copy phase may use in full while the pre-copy
// phase keeps to the migration's bandwidth cap. It sends 256 MiB once and
// honours ctx.
func MeasureLink(ctx context.Context, addr string) (float64, error) {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return 0, fmt.Errorf("link address %q: %w", addr, err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", netip.AddrPortFrom(ip, 0).String())
	if err != nil {
		return 0, fmt.Errorf("listen on %s: %w", addr, err)
	}
	defer func() { _ = ln.Close() }()
	deadline := time.Now().Add(30 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	got := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err
			return
		}
		defer func() { _ = c.Close() }()
		_ = c.SetDeadline(deadline)
		n, err := io.Copy(io.Discard, c)
		if err == nil && n != linkSample {
			err = fmt.Errorf("received %d of %d bytes", n, linkSample)
		}
		got <- err
	}()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		return 0, fmt.Errorf("connect to %s: %w", ln.Addr(), err)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	_ = c.SetDeadline(deadline)
	buf := make([]byte, 1<<20)
	began := time.Now()
	for sent := 0; sent < linkSample; sent += len(buf) {
		if _, err := c.Write(buf); err != nil {
			_ = c.Close()
			return 0, errors.Join(fmt.Errorf("send: %w", err), ctx.Err())
		}
	}
	if err := c.Close(); err != nil {
		return 0, fmt.Errorf("send: %w", err)
	}
	if err := <-got; err != nil {
		return 0, errors.Join(fmt.Errorf("receive: %w", err), ctx.Err())
	}
	return linkSample / time.Since(began).Seconds(), nil
}
