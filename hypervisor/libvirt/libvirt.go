//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	lv "libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hypervisor"
)

// Hypervisor is a client of one libvirt URI: a primary connection that
// carries events and keepalives, and a pool of connections for the calls.
// It is safe for concurrent use.
type Hypervisor struct {
	opts Options
	log  *slog.Logger

	mu     sync.RWMutex // guards closed against Ref on a closed connection
	closed bool
	conn   *lv.Connect // primary: event callbacks

	pool   *connPool // every call's connection
	events dispatcher
	loop   *eventLoop
}

var (
	_ hypervisor.Hypervisor        = (*Hypervisor)(nil)
	_ hypervisor.DirtyRateMeasurer = (*Hypervisor)(nil)
	_ hypervisor.Migrator          = (*Hypervisor)(nil)
	_ hypervisor.AgentCommander    = (*Hypervisor)(nil)
	_ hypervisor.Throttler         = (*Hypervisor)(nil)
	_ hypervisor.ShutdownRequester = (*Hypervisor)(nil)
)

// closeLoopWait bounds how long Close waits for the event loop goroutine.
const closeLoopWait = 2 * time.Second

// New connects to opts.URI. ctx bounds the connection attempt only (the
// first connection to qemu:///system probes QEMU's capabilities, about 7 s
// on a cold host). The connection's event loop runs in a goroutine until
// Close: it answers the daemon's keepalive pings and dispatches events.
// Close the Hypervisor when done.
func New(ctx context.Context, opts Options) (*Hypervisor, error) {
	opts = opts.withDefaults()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Must precede the first connection, or a remote connection never
	// delivers events. Idempotent in libvirt.
	if err := lv.EventRegisterDefaultImpl(); err != nil {
		return nil, fmt.Errorf("libvirt %s: register event loop: %w", opts.URI, connectError(err))
	}
	type result struct {
		conn *lv.Connect
		err  error
	}
	done := make(chan result, 1)
	go func() {
		c, err := lv.NewConnect(opts.URI)
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("libvirt connect %s: %w", opts.URI, connectError(r.err))
		}
		return &Hypervisor{
			opts: opts, log: opts.Logger, conn: r.conn,
			pool: &connPool{uri: opts.URI, log: opts.Logger},
			loop: startEventLoop(opts.Logger),
		}, nil
	case <-ctx.Done():
		// The connection may still arrive; close it then.
		go func() {
			if r := <-done; r.err == nil {
				_, _ = r.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// connectError makes a failed connection match ErrConnection whatever the
// code (no daemon, refused, auth, missing library in dlopen builds).
func connectError(err error) error {
	var le lv.Error
	if errors.As(err, &le) {
		return &libvirtError{sentinel: hypervisor.ErrConnection, cause: le}
	}
	return fmt.Errorf("%w: %w", hypervisor.ErrConnection, err)
}

// URI is the connection's URI.
func (h *Hypervisor) URI() string { return h.opts.URI }

// Close stops the event loop, closes every Events channel and releases the
// connection. Calls still running in C (past their context) keep their own
// reference and finish first.
func (h *Hypervisor) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	h.pool.close()
	h.deregisterEvents()
	if !h.loop.stop(closeLoopWait) {
		h.log.Debug("libvirt event loop did not stop in time", "uri", h.opts.URI)
	}
	if _, err := h.conn.Close(); err != nil {
		return fmt.Errorf("libvirt close %s: %w", h.opts.URI, translate(err))
	}
	return nil
}

// ref takes a reference on the connection for one call.
func (h *Hypervisor) ref() error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return fmt.Errorf("libvirt %s: connection closed: %w", h.opts.URI, hypervisor.ErrConnection)
	}
	if err := h.conn.Ref(); err != nil {
		return translate(err)
	}
	return nil
}

func (h *Hypervisor) unref() {
	if _, err := h.conn.Close(); err != nil {
		h.log.Debug("libvirt unref", "uri", h.opts.URI, "err", err)
	}
}

// call runs fn under ctx on a connection of its own from the pool (see
// connPool). fn must free every libvirt object it obtains and return only
// Go values: when ctx ends first, call returns ctx.Err() and fn's result is
// discarded when it arrives.
func call[T any](ctx context.Context, h *Hypervisor, fn func(c *lv.Connect) (T, error)) (T, error) {
	return underCtx(ctx, func() (T, error) {
		c, err := h.pool.get()
		if err != nil {
			var zero T
			return zero, err
		}
		v, err := fn(c)
		h.pool.put(c, err)
		return v, err
	})
}

// callPrimary runs fn under ctx on the primary connection, the one that
// carries the event callbacks.
func callPrimary[T any](ctx context.Context, h *Hypervisor, fn func(c *lv.Connect) (T, error)) (T, error) {
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, err
	}
	if err := h.ref(); err != nil {
		var zero T
		return zero, err
	}
	return underCtx(ctx, func() (T, error) {
		defer h.unref()
		return fn(h.conn)
	})
}

// underCtx runs f and returns its result, or ctx.Err() as soon as ctx ends
// (f then finishes on its own).
func underCtx[T any](ctx context.Context, f func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if ctx.Done() == nil {
		return f() // nothing to wait for besides the call
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// withDomain looks name up and runs fn on it under ctx; the domain is freed
// on every path and errors come back translated and wrapped.
func withDomain[T any](ctx context.Context, h *Hypervisor, op, name string, fn func(c *lv.Connect, d *lv.Domain) (T, error)) (T, error) {
	v, err := call(ctx, h, func(c *lv.Connect) (T, error) {
		d, err := c.LookupDomainByName(name)
		if err != nil {
			var zero T
			return zero, err
		}
		defer freeDomain(h.log, d)
		return fn(c, d)
	})
	return v, wrap(op, name, err)
}

// doDomain is withDomain for calls that return nothing.
func doDomain(ctx context.Context, h *Hypervisor, op, name string, fn func(d *lv.Domain) error) error {
	_, err := withDomain(ctx, h, op, name, func(_ *lv.Connect, d *lv.Domain) (struct{}, error) {
		return struct{}{}, fn(d)
	})
	return err
}

func freeDomain(log *slog.Logger, d *lv.Domain) {
	if err := d.Free(); err != nil {
		log.Debug("libvirt free domain", "err", err)
	}
}

// Host describes the machine behind the connection.
func (h *Hypervisor) Host(ctx context.Context) (hypervisor.HostInfo, error) {
	info, err := call(ctx, h, func(c *lv.Connect) (hypervisor.HostInfo, error) {
		var hi hypervisor.HostInfo
		var err error
		if hi.Hostname, err = c.GetHostname(); err != nil {
			return hi, err
		}
		node, err := c.GetNodeInfo()
		if err != nil {
			return hi, err
		}
		hi.CPUs = int(node.Cpus)
		hi.MemoryBytes = node.Memory * 1024
		hi.Arch = node.Model
		typ, err := c.GetType()
		if err != nil {
			return hi, err
		}
		hi.Model = strings.ToLower(typ)
		capsXML, err := c.GetCapabilities()
		if err != nil {
			return hi, err
		}
		var caps libvirtxml.Caps
		if err := caps.Unmarshal(capsXML); err != nil {
			return hi, fmt.Errorf("parse capabilities: %w", err)
		}
		hi.UUID = caps.Host.UUID
		if caps.Host.CPU != nil && caps.Host.CPU.Arch != "" {
			hi.Arch = caps.Host.CPU.Arch
		}
		return hi, nil
	})
	if err != nil {
		return hypervisor.HostInfo{}, wrap("host", "", err)
	}
	return info, nil
}
