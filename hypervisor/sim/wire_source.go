package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// wire is the source side of a migration to a host in another process:
// a migrationTarget that speaks the stream over one TCP connection. The
// model decides what is sent when; a writer goroutine puts those pages on
// the socket in order, so the bytes really cross it, and the socket's own
// throughput caps the modelled link when it is the slower of the two.
type wire struct {
	h    *Host
	addr string
	uuid string
	conn net.Conn
	log  *slog.Logger
	// ctx is StartMigration's: it bounds the hello and its answer.
	ctx context.Context

	mu       sync.Mutex
	queue    []wireItem
	pageDebt float64 // modelled bytes not yet a whole page
	closing  bool
	started  bool
	inc      *incoming
	wake     chan struct{} // 1-buffered
	flushed  chan struct{} // closed when the writer has stopped
	done     chan wireReply
	broken   chan struct{} // closed when the stream failed
	brokeErr error
	breakMu  sync.Once
	closeMu  sync.Once

	sentBytes   atomic.Uint64 // page bytes written to the socket
	queuedBytes atomic.Uint64 // page bytes handed to the writer
	busyNanos   atomic.Int64
	// switchover is the real time from queuing the switchover to the
	// target's done (whatever pages were still queued went first).
	switchover atomic.Int64
}

func (w *wire) switchoverTime() time.Duration { return time.Duration(w.switchover.Load()) }

// wireItem is one queued frame: pages of a pass, or a control frame.
type wireItem struct {
	t       byte
	pass    uint32
	pages   uint64
	payload any // JSON, for control frames
}

var _ migrationTarget = (*wire)(nil)

// maxBacklog bounds the page bytes handed to the writer but not yet on
// the socket: the model cannot send faster than the socket takes them.
const maxBacklog = 8 << 20

// minRateSample is how many bytes the socket must have taken before its
// throughput is trusted as a limit.
const minRateSample = 8 << 20

// dialWire connects to the migration listener at addr.
func dialWire(ctx context.Context, h *Host, addr, uuid string) (*wire, error) {
	d := net.Dialer{Timeout: wireHandshakeTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial migration listener %s: %w: %w", addr, err, ErrStream)
	}
	w := &wire{
		h: h, addr: addr, uuid: uuid, conn: c, log: h.log, ctx: ctx,
		wake: make(chan struct{}, 1), flushed: make(chan struct{}),
		done: make(chan wireReply, 1), broken: make(chan struct{}),
	}
	return w, nil
}

func (w *wire) targetName() string { return "tcp://" + w.addr }

// receiveStart sends the hello and waits for the target's paused domain.
func (w *wire) receiveStart(j *job, sp *spec, wl Workload) error {
	def := *sp.def
	if def.UUID == "" {
		def.UUID = w.uuid
	}
	doc, err := def.Marshal()
	if err != nil {
		return fmt.Errorf("domain XML: %w", err)
	}
	// The caller's context bounds the handshake.
	stop := context.AfterFunc(w.ctx, func() { _ = w.conn.SetDeadline(time.Now()) })
	defer stop()
	if err := writeJSON(w.conn, frameHello, wireHello{
		Version: wireVersion, Source: w.h.Name(), Name: sp.name, XML: doc, Workload: wl,
	}); err != nil {
		return fmt.Errorf("migration stream to %s: hello: %w: %w", w.addr, err, ErrStream)
	}
	t, payload, err := readFrame(w.conn, nil, wireHandshakeTimeout)
	if err != nil {
		return fmt.Errorf("migration stream to %s: waiting for ready: %w: %w", w.addr, err, ErrStream)
	}
	if t != frameReady {
		return fmt.Errorf("%w: %s answered the hello with frame type %d", ErrStream, w.addr, t)
	}
	var r wireReply
	if err := decodeJSON(t, payload, &r); err != nil {
		return err
	}
	if r.Error != "" {
		return replyError(r, w.addr)
	}
	w.mu.Lock()
	w.started, w.inc = true, j.inc
	w.mu.Unlock()
	go w.writer()
	go w.reader()
	return nil
}

// pages queues bytes of pass as whole pages.
func (w *wire) pages(pass int, bytes float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing {
		return
	}
	w.pageDebt += bytes
	n := math.Floor(w.pageDebt / pageSize)
	if n < 1 {
		return
	}
	w.pageDebt -= n * pageSize
	w.queuedBytes.Add(uint64(n) * pageSize)
	w.pushLocked(wireItem{t: framePages, pass: uint32(pass), pages: uint64(n)})
}

// room is how many more bytes the model may send now: what the backlog
// of bytes not yet on the socket leaves.
func (w *wire) room() float64 {
	backlog := int64(w.queuedBytes.Load()) - int64(w.sentBytes.Load())
	return float64(max(0, maxBacklog-backlog))
}

// pushLocked queues an item (pages of one pass coalesce) and wakes the
// writer.
func (w *wire) pushLocked(it wireItem) {
	if k := len(w.queue); it.t == framePages && k > 0 && w.queue[k-1].t == framePages && w.queue[k-1].pass == it.pass {
		w.queue[k-1].pages += it.pages
	} else {
		w.queue = append(w.queue, it)
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// control queues a control frame after every page queued so far; with
// last, nothing more is queued and the writer stops after it.
func (w *wire) control(t byte, payload any, last bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing {
		return
	}
	if t == frameSwitchover && w.pageDebt > 0 {
		w.pageDebt = 0
		w.pushLocked(wireItem{t: framePages, pass: math.MaxUint32, pages: 1})
	}
	w.pushLocked(wireItem{t: t, payload: payload})
	w.closing = last
}

func (w *wire) receivePostCopy(j *job) {
	w.control(framePostCopy, wirePostCopy{Display: j.display}, false)
}

// receiveEnd sends the switchover (ok) and waits for the target's answer,
// or tells the target to drop its copy.
func (w *wire) receiveEnd(j *job, ok bool) bool {
	w.mu.Lock()
	started := w.started
	w.mu.Unlock()
	if !started {
		w.close()
		return false
	}
	if !ok {
		w.control(frameAbort, wireReply{Error: "the source ended the migration"}, true)
		w.closeAfterFlush()
		return false
	}
	start := time.Now()
	w.control(frameSwitchover, wireSwitchover{UserPaused: j.userPaused, Persist: j.params.Persist, Display: j.display}, true)
	t := time.NewTimer(wireSwitchoverTimeout)
	defer t.Stop()
	defer w.close()
	select {
	case r := <-w.done:
		w.switchover.Store(int64(time.Since(start)))
		if r.Error != "" {
			j.inc.why.Store(ptr(fmt.Sprintf("the target %s refused the switchover: %s", w.addr, r.Error)))
		}
		return r.Present && r.Error == ""
	case <-w.broken:
		j.inc.why.Store(ptr(w.brokenReason()))
	case <-t.C:
		j.inc.why.Store(ptr(fmt.Sprintf("the target %s did not confirm the switchover within %v", w.addr, wireSwitchoverTimeout)))
	}
	return false
}

func ptr[T any](v T) *T { return &v }

// closeAfterFlush closes the connection once the writer has sent what was
// queued, or after the idle timeout.
func (w *wire) closeAfterFlush() {
	t := time.NewTimer(wireIdleTimeout)
	defer t.Stop()
	select {
	case <-w.flushed:
	case <-w.broken:
	case <-t.C:
	}
	w.close()
}

// close ends the stream; nil-safe and idempotent.
func (w *wire) close() {
	if w == nil {
		return
	}
	w.closeMu.Do(func() {
		w.mu.Lock()
		w.closing = true
		started := w.started
		w.mu.Unlock()
		w.fail(errors.New("closed"))
		_ = w.conn.Close()
		if !started {
			close(w.flushed)
		}
	})
}

// fail records why the stream broke (the first reason wins) and tells the
// job its target copy is lost.
func (w *wire) fail(err error) {
	w.breakMu.Do(func() {
		w.mu.Lock()
		w.brokeErr = err
		inc := w.inc
		w.mu.Unlock()
		close(w.broken)
		if inc != nil && inc.why.Load() == nil {
			inc.why.Store(ptr(w.brokenReason()))
		}
		if inc != nil {
			inc.lost.Store(true)
		}
	})
}

func (w *wire) brokenReason() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("the migration stream to %s broke: %v", w.addr, w.brokeErr)
}

// rate is the socket's measured throughput in bytes per second while
// writing, 0 until enough was sent to tell.
func (w *wire) rate() float64 {
	b, busy := w.sentBytes.Load(), w.busyNanos.Load()
	if b < minRateSample || busy <= 0 {
		return 0
	}
	return float64(b) / (float64(busy) / 1e9)
}

// writer sends the queue in order, pinging while idle.
func (w *wire) writer() {
	defer close(w.flushed)
	zero := make([]byte, pagesPerFrame*pageSize)
	var passBuf [4]byte
	ping := time.NewTicker(wirePingInterval)
	defer ping.Stop()
	for {
		w.mu.Lock()
		var it wireItem
		have := len(w.queue) > 0
		if have {
			it = w.queue[0]
			if it.t == framePages && it.pages > pagesPerFrame {
				w.queue[0].pages -= pagesPerFrame
				it.pages = pagesPerFrame
			} else {
				w.queue = w.queue[1:]
			}
		}
		closing := w.closing
		w.mu.Unlock()
		if !have {
			if closing {
				return
			}
			select {
			case <-w.wake:
			case <-w.broken:
				return
			case <-ping.C:
				if err := writeFrame(w.conn, framePing); err != nil {
					w.fail(err)
					return
				}
			}
			continue
		}
		var err error
		switch it.t {
		case framePages:
			passBuf[0], passBuf[1], passBuf[2], passBuf[3] = byte(it.pass>>24), byte(it.pass>>16), byte(it.pass>>8), byte(it.pass)
			data := zero[:it.pages*pageSize]
			start := time.Now()
			err = writeFrame(w.conn, framePages, passBuf[:], data)
			w.busyNanos.Add(int64(time.Since(start)))
			w.sentBytes.Add(uint64(len(data)))
		default:
			if it.payload == nil {
				err = writeFrame(w.conn, it.t)
			} else {
				err = writeJSON(w.conn, it.t, it.payload)
			}
		}
		if err != nil {
			w.fail(err)
			return
		}
	}
}

// reader takes the target's frames: pings, a lost domain, the switchover's
// answer.
func (w *wire) reader() {
	var buf []byte
	for {
		t, payload, err := readFrame(w.conn, buf, wireIdleTimeout)
		if err != nil {
			w.fail(err)
			return
		}
		buf = payload[:0]
		switch t {
		case framePing:
		case frameLost:
			var r wireReply
			_ = decodeJSON(t, payload, &r)
			w.fail(fmt.Errorf("the target lost the domain: %s", r.Error))
			return
		case frameDone:
			var r wireReply
			if err := decodeJSON(t, payload, &r); err != nil {
				w.fail(err)
				return
			}
			w.done <- r
			return
		default:
			w.fail(fmt.Errorf("%w: unexpected frame type %d from the target", ErrStream, t))
			return
		}
	}
}

// remoteLink is the link to the migration listener at addr, shared by
// concurrent migrations to it.
func (h *Host) remoteLink(addr string) *linkState {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.remoteLinks == nil {
		h.remoteLinks = map[string]*linkState{}
	}
	ls, ok := h.remoteLinks[addr]
	if !ok {
		ls = &linkState{link: h.opts.MigrationLink}
		h.remoteLinks[addr] = ls
	}
	return ls
}
