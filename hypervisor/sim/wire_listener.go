package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// ListenOptions tunes a [MigrationListener]; the zero value works.
type ListenOptions struct {
	// Logger receives the listener's logs; nil discards them.
	Logger *slog.Logger
	// MaxConnections bounds concurrent incoming migrations; 0 means 16.
	// Connections beyond it are refused at the hello.
	MaxConnections int
}

// MigrationListener receives live migrations from simulated hosts in
// other processes over TCP: a source host whose migration names
// tcp://ADDRESS as its destination (or data) URI connects here, and the
// domain arrives on the listener's host as it would from a host on the
// same [Network]: paused while the pages of each pass arrive, running
// after the switchover. The stream carries no authentication or
// encryption: listen on a trusted network only.
type MigrationListener struct {
	h    *Host
	ln   net.Listener
	log  *slog.Logger
	opts ListenOptions

	active    atomic.Int64
	received  atomic.Uint64
	completed atomic.Uint64
}

// ListenMigration listens for incoming migrations to h on address
// (tcp://HOST:PORT or HOST:PORT; port 0 picks a free one, see
// [MigrationListener.URI]). Call Serve to accept them.
func ListenMigration(ctx context.Context, h *Host, address string, opts ListenOptions) (*MigrationListener, error) {
	addr, err := ParseMigrationAddress(address)
	if err != nil {
		return nil, err
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = 16
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("migration listener: %w", err)
	}
	return &MigrationListener{h: h, ln: ln, log: opts.Logger, opts: opts}, nil
}

// URI is the listener's address as a destination URI: tcp://HOST:PORT
// with the port it really listens on.
func (l *MigrationListener) URI() string { return "tcp://" + l.ln.Addr().String() }

// Addr is the address the listener listens on.
func (l *MigrationListener) Addr() net.Addr { return l.ln.Addr() }

// ReceivedBytes is how many bytes of guest memory arrived so far.
func (l *MigrationListener) ReceivedBytes() uint64 { return l.received.Load() }

// Completed is how many migrations switched over to this host.
func (l *MigrationListener) Completed() uint64 { return l.completed.Load() }

// Close stops accepting; running migrations end when Serve's ctx does.
func (l *MigrationListener) Close() error { return l.ln.Close() }

// Serve accepts migrations until ctx ends (or Close), then closes the
// listener, ends the migrations under way (their incoming copies are
// dropped) and returns nil.
func (l *MigrationListener) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { _ = l.ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("migration listener: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.handle(cctx, c)
		}()
	}
}

// inbound is one incoming migration.
type inbound struct {
	l    *MigrationListener
	c    net.Conn
	wmu  sync.Mutex // one writer at a time: answers, pings, lost
	j    *job
	peer string
}

func (in *inbound) write(t byte, v any) error {
	in.wmu.Lock()
	defer in.wmu.Unlock()
	if v == nil {
		return writeFrame(in.c, t)
	}
	return writeJSON(in.c, t, v)
}

func (l *MigrationListener) handle(ctx context.Context, c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	in := &inbound{l: l, c: c, peer: c.RemoteAddr().String()}
	if n := l.active.Add(1); n > int64(l.opts.MaxConnections) {
		defer l.active.Add(-1)
		_ = in.write(frameReady, wireReply{Error: fmt.Sprintf("too many incoming migrations (limit %d)", l.opts.MaxConnections), Code: "state"})
		return
	}
	defer l.active.Add(-1)
	j, err := in.hello()
	if err != nil {
		l.log.Warn("incoming migration refused", "peer", in.peer, "err", err)
		_ = in.write(frameReady, wireReply{Error: err.Error(), Code: errorCode(err)})
		return
	}
	in.j = j
	if err := in.write(frameReady, wireReply{}); err != nil {
		l.h.receiveEnd(j, false)
		return
	}
	l.log.Info("incoming migration", "domain", j.name, "peer", in.peer)
	watchDone := make(chan struct{})
	go in.watch(watchDone)
	ok, err := in.receive()
	close(watchDone)
	if err != nil {
		l.log.Warn("incoming migration failed", "domain", j.name, "peer", in.peer, "err", err)
	}
	if !ok {
		l.h.receiveEnd(j, false)
	}
}

// hello reads the source's hello and creates the paused incoming domain.
func (in *inbound) hello() (*job, error) {
	t, payload, err := readFrame(in.c, nil, wireHandshakeTimeout)
	if err != nil {
		return nil, fmt.Errorf("reading the hello: %w", err)
	}
	if t != frameHello {
		return nil, fmt.Errorf("%w: want a hello, got frame type %d", ErrStream, t)
	}
	var h wireHello
	if err := decodeJSON(t, payload, &h); err != nil {
		return nil, err
	}
	if h.Version != wireVersion {
		return nil, fmt.Errorf("%w: protocol version %d, want %d", ErrStream, h.Version, wireVersion)
	}
	sp, err := parseSpec(h.XML)
	if err != nil {
		return nil, err
	}
	if sp.name != h.Name {
		return nil, invalid("hello.name", fmt.Sprintf("%q but the domain XML names %q", h.Name, sp.name))
	}
	if err := h.Workload.Validate(sp.curMemory); err != nil {
		return nil, err
	}
	j := &job{name: sp.name, inc: &incoming{}}
	if err := in.l.h.receiveStart(j, sp, h.Workload); err != nil {
		return nil, err
	}
	return j, nil
}

// receive takes pages until the switchover (true: the guest runs here) or
// an abort or a broken stream (false).
func (in *inbound) receive() (bool, error) {
	var buf []byte
	for {
		t, payload, err := readFrame(in.c, buf, wireIdleTimeout)
		if err != nil {
			return false, err
		}
		buf = payload[:0]
		switch t {
		case framePing:
		case framePages:
			if len(payload) < 4 || (len(payload)-4)%pageSize != 0 {
				return false, fmt.Errorf("%w: a pages frame of %d bytes", ErrStream, len(payload))
			}
			in.l.received.Add(uint64(len(payload) - 4))
		case framePostCopy:
			if len(payload) > 0 {
				var pc wirePostCopy
				if err := decodeJSON(t, payload, &pc); err != nil {
					return false, err
				}
				in.j.display = pc.Display
			}
			in.l.h.receivePostCopy(in.j)
		case frameAbort:
			var r wireReply
			_ = decodeJSON(t, payload, &r)
			return false, fmt.Errorf("aborted by the source: %s: %w", r.Error, hypervisor.ErrMigrationAborted)
		case frameSwitchover:
			var s wireSwitchover
			if err := decodeJSON(t, payload, &s); err != nil {
				return false, err
			}
			in.j.userPaused, in.j.params.Persist = s.UserPaused, s.Persist
			if s.Display != nil {
				in.j.display = s.Display
			}
			present := in.l.h.receiveEnd(in.j, true)
			r := wireReply{Present: present}
			if !present {
				r.Error = "the domain went away on the target"
			}
			if present {
				in.l.completed.Add(1)
			}
			if err := in.write(frameDone, r); err != nil {
				// The guest runs here already; the source learns it
				// from the closed stream and fails its side.
				return true, fmt.Errorf("sending done: %w", err)
			}
			return true, nil
		default:
			return false, fmt.Errorf("%w: unexpected frame type %d from the source", ErrStream, t)
		}
	}
}

// watch pings the source while the migration runs and tells it when the
// incoming domain goes away.
func (in *inbound) watch(done <-chan struct{}) {
	t := time.NewTicker(wirePingInterval / 2)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		if in.j.inc.lost.Load() {
			_ = in.write(frameLost, wireReply{Error: "the domain went away on the target " + in.l.h.Name()})
			return
		}
		if err := in.write(framePing, nil); err != nil {
			return
		}
	}
}
