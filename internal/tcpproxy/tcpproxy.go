package tcpproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/virtkit/virtkit"
)

// errInvalidOptions wraps every configuration error of this package; it
// matches virtkit.ErrInvalidOptions.
var errInvalidOptions = virtkit.InvalidOptions("TCP proxy")

// DefaultDialTimeout bounds the dial of the target when [Options.DialTimeout]
// is zero.
const DefaultDialTimeout = 5 * time.Second

// Options configure a [Proxy]. Target is required; the zero value of every
// other field works.
type Options struct {
	// Target is the HOST:PORT every connection is forwarded to.
	Target string
	// Listen is the address to listen on; default 127.0.0.1:0 (a free
	// loopback port).
	Listen string
	// DialTimeout bounds each dial of Target; default DefaultDialTimeout.
	DialTimeout time.Duration
	// Logger receives connection errors at debug level; default discards.
	Logger *slog.Logger
}

// Stats count what a [Proxy] did.
type Stats struct {
	// Accepted is the number of client connections accepted.
	Accepted int64
	// Forwarded is the number of bytes forwarded in both directions.
	Forwarded int64
	// Open is the number of client connections open now.
	Open int64
}

// Proxy forwards connections to one target. Its methods are safe for
// concurrent use.
type Proxy struct {
	opts Options
	ln   net.Listener
	log  *slog.Logger

	gate    gate
	latency atomic.Int64 // nanoseconds each chunk is held before it is forwarded

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}

	accepted, forwarded, open atomic.Int64
}

// Start listens and forwards connections until ctx ends or Close is called.
// The link starts healed.
func Start(ctx context.Context, opts Options) (*Proxy, error) {
	if opts.Target == "" {
		return nil, fmt.Errorf("%w: Target: required", errInvalidOptions)
	}
	if _, _, err := net.SplitHostPort(opts.Target); err != nil {
		return nil, fmt.Errorf("%w: Target: %w", errInvalidOptions, err)
	}
	if opts.DialTimeout < 0 {
		return nil, fmt.Errorf("%w: DialTimeout: %v is negative", errInvalidOptions, opts.DialTimeout)
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if opts.DialTimeout == 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("tcpproxy: listen %s: %w", opts.Listen, err)
	}
	pctx, cancel := context.WithCancel(ctx)
	p := &Proxy{opts: opts, ln: ln, log: log, ctx: pctx, cancel: cancel, conns: map[net.Conn]struct{}{}}
	p.gate.init()
	p.wg.Go(func() {
		<-pctx.Done()
		_ = ln.Close()
		p.closeAll()
	})
	p.wg.Go(p.acceptLoop)
	return p, nil
}

// Addr is the HOST:PORT the proxy listens on.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut partitions the link: bytes stop flowing and new connections wait.
func (p *Proxy) Cut() { p.gate.close() }

// Heal ends a partition: held bytes and waiting connections go through.
func (p *Proxy) Heal() { p.gate.open() }

// SetLatency makes the link slow: every chunk of bytes read from one side
// is held for d before it is written to the other (in order, so a burst
// takes d per chunk). Zero restores a fast link.
func (p *Proxy) SetLatency(d time.Duration) { p.latency.Store(int64(max(d, 0))) }

// Latency is the delay SetLatency set.
func (p *Proxy) Latency() time.Duration { return time.Duration(p.latency.Load()) }

// IsCut reports whether the link is cut.
func (p *Proxy) IsCut() bool { return !p.gate.isOpen() }

// Stats returns the proxy's counters.
func (p *Proxy) Stats() Stats {
	return Stats{Accepted: p.accepted.Load(), Forwarded: p.forwarded.Load(), Open: p.open.Load()}
}

// Close stops listening, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	p.cancel()
	p.wg.Wait()
	return nil
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx.Err() != nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

func (p *Proxy) acceptLoop() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() == nil {
				p.log.Debug("tcpproxy: accept", "err", err)
			}
			return
		}
		if !p.track(c) {
			_ = c.Close()
			return
		}
		p.accepted.Add(1)
		p.wg.Go(func() { p.serve(c) })
	}
}

// serve forwards one client connection.
func (p *Proxy) serve(client net.Conn) {
	p.open.Add(1)
	defer p.open.Add(-1)
	defer p.untrack(client)
	// A new connection during a partition waits, like a SYN that gets no
	// answer.
	if !p.gate.wait(p.ctx) {
		return
	}
	d := net.Dialer{Timeout: p.opts.DialTimeout}
	target, err := d.DialContext(p.ctx, "tcp", p.opts.Target)
	if err != nil {
		p.log.Debug("tcpproxy: dial target", "target", p.opts.Target, "err", err)
		return
	}
	if !p.track(target) {
		_ = target.Close()
		return
	}
	defer p.untrack(target)
	done := make(chan struct{}, 2)
	go func() { p.pump(target, client); done <- struct{}{} }()
	go func() { p.pump(client, target); done <- struct{}{} }()
	// When one direction ends, the other has nothing to talk to.
	<-done
	_ = client.Close()
	_ = target.Close()
	<-done
}

// pump copies src to dst, holding data while the link is cut.
func (p *Proxy) pump(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		if !p.gate.wait(p.ctx) {
			return
		}
		n, err := src.Read(buf)
		if n > 0 {
			if d := time.Duration(p.latency.Load()); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-p.ctx.Done():
					t.Stop()
					return
				}
			}
			// Read may have returned while the link was being cut: hold
			// the bytes until it heals.
			if !p.gate.wait(p.ctx) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			p.forwarded.Add(int64(n))
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				p.log.Debug("tcpproxy: read", "err", err)
			}
			return
		}
	}
}

// gate is open or closed; wait blocks while it is closed.
type gate struct {
	mu sync.Mutex
	ch chan struct{} // closed while the gate is open
}

func (g *gate) init() {
	g.ch = make(chan struct{})
	close(g.ch)
}

func (g *gate) isOpen() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.ch:
		return true
	default:
		return false
	}
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.ch:
	default:
		close(g.ch)
	}
}

func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.ch:
		g.ch = make(chan struct{})
	default:
	}
}

// wait returns true once the gate is open, false when ctx ends first.
func (g *gate) wait(ctx context.Context) bool {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	select {
	case <-ch:
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}
