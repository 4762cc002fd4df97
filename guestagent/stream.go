package guestagent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"time"
)

// syncMarker is the byte the agent puts before a guest-sync-delimited reply
// and that the client sends to reset the agent's JSON parser. It never
// appears in valid UTF-8, so it cannot be part of a well-formed reply.
const syncMarker = 0xFF

// maxStaleLines bounds how many unrelated lines one exchange skips before it
// calls the stream out of sync.
const maxStaleLines = 64

// Dialer opens the byte stream to the agent.
type Dialer func(ctx context.Context) (net.Conn, error)

// UnixDialer dials a unix socket: the host side of the
// org.qemu.guest_agent.0 virtio-serial channel, or qemu-ga -m unix-listen.
func UnixDialer(path string) Dialer {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
}

// StreamTransport speaks to an agent over a raw byte stream and does the
// framing itself: on every new connection, and after any timeout, oversized
// reply or garbage, it sends 0xFF and guest-sync-delimited with a fresh
// random id, discards everything up to the 0xFF that starts the matching
// reply, and so drops stale replies of earlier timed-out requests. Requests
// carry an id; a reply with another id is skipped as stale. The connection is
// dialled lazily and redialled after it breaks. One exchange runs at a time.
type StreamTransport struct {
	dial Dialer
	opts Options
	sem  chan struct{} // one exchange at a time, acquired with a context

	conn   net.Conn
	r      *bufio.Reader
	synced bool

	newSyncID func() int64 // fresh random ids; replaced by tests
}

// NewStreamTransport returns a transport that dials with dial when needed.
func NewStreamTransport(dial Dialer, opts Options) *StreamTransport {
	return &StreamTransport{
		dial:      dial,
		opts:      opts.withDefaults(),
		sem:       make(chan struct{}, 1),
		newSyncID: func() int64 { return rand.Int64N(1 << 53) },
	}
}

// DialUnix returns a StreamTransport for the unix socket at path.
func DialUnix(path string, opts Options) *StreamTransport {
	return NewStreamTransport(UnixDialer(path), opts)
}

// Close closes the current connection; a later exchange dials again.
func (t *StreamTransport) Close() error {
	t.sem <- struct{}{}
	defer func() { <-t.sem }()
	return t.closeLocked()
}

func (t *StreamTransport) closeLocked() error {
	if t.conn == nil {
		return nil
	}
	err := t.conn.Close()
	t.conn, t.r, t.synced = nil, nil, false
	return err
}

// Exchange implements Transport.
func (t *StreamTransport) Exchange(ctx context.Context, request []byte) ([]byte, error) {
	return t.exchange(ctx, request, false)
}

// ExchangeOneWay implements OneWayTransport. After the request it sends a
// guest-sync-delimited: if the sync reply comes first, the agent accepted
// the command; if a plain line comes first, that is the command's error. A
// connection that closes meanwhile counts as accepted (the guest went down).
func (t *StreamTransport) ExchangeOneWay(ctx context.Context, request []byte) ([]byte, error) {
	return t.exchange(ctx, request, true)
}

func (t *StreamTransport) exchange(ctx context.Context, request []byte, oneWay bool) (reply []byte, err error) {
	if bytes.ContainsAny(request, "\n\r") || len(request) == 0 {
		return nil, fmt.Errorf("%w: request must be one non-empty line", ErrInvalidArgument)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.opts.CallTimeout)
		defer cancel()
	}
	select {
	case t.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-t.sem }()

	if t.conn == nil {
		conn, err := t.dial(ctx)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, ctxErr
			}
			return nil, fmt.Errorf("%w: %w", ErrDisconnected, err)
		}
		t.conn, t.r, t.synced = conn, bufio.NewReaderSize(conn, 64<<10), false
	}
	conn := t.conn
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		_ = t.closeLocked()
		return nil, fmt.Errorf("%w: %w", ErrDisconnected, err)
	}
	// Cancellation before the deadline must unblock a read too: move the
	// deadline into the past. Wait for that callback before returning so it
	// cannot hit the next exchange's deadline.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = conn.SetDeadline(time.Unix(1, 0))
		close(fired)
	})
	defer func() {
		if !stop() {
			<-fired
		}
	}()
	defer func() {
		if err == nil {
			return
		}
		t.synced = false
		err = t.classify(ctx, err)
		if errors.Is(err, ErrDisconnected) {
			_ = t.closeLocked()
		}
	}()

	if !t.synced {
		if err := t.syncLocked(true); err != nil {
			return nil, err
		}
	}
	wantID := requestID(request)
	msg := make([]byte, len(request)+1)
	copy(msg, request)
	msg[len(request)] = '\n'
	if err := t.write(msg); err != nil {
		return nil, err
	}
	if oneWay {
		return t.awaitOneWay(wantID)
	}
	for range maxStaleLines {
		line, err := t.readLine()
		if err != nil {
			return nil, err
		}
		if len(line) > 0 && line[0] == syncMarker {
			continue // a late sync reply
		}
		id, err := t.replyID(line)
		if err != nil {
			return nil, err
		}
		if len(wantID) > 0 && len(id) > 0 && !bytes.Equal(id, wantID) {
			t.opts.Logger.Debug("guest agent: skipping stale reply", "id", strconv.Quote(Sanitize(string(id), 64)))
			continue
		}
		return line, nil
	}
	return nil, fmt.Errorf("%w: no reply with id %s among %d lines", ErrProtocol, wantID, maxStaleLines)
}

// classify maps I/O errors to the package's contract: deadline and
// cancellation as the context's errors, a broken stream as ErrDisconnected.
func (t *StreamTransport) classify(ctx context.Context, err error) error {
	if errors.Is(err, ErrReplyTooLarge) || errors.Is(err, ErrProtocol) || errors.Is(err, ErrInvalidArgument) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return fmt.Errorf("%w: %w", ErrDisconnected, err)
}

func (t *StreamTransport) write(b []byte) error {
	_, err := t.conn.Write(b)
	return err
}

// syncLocked sends guest-sync-delimited with a fresh id and discards input
// until the reply carrying that id. flush prefixes the request with 0xFF so
// the agent drops any half-received request first.
func (t *StreamTransport) syncLocked(flush bool) error {
	id := t.newSyncID()
	if err := t.sendSync(id, flush); err != nil {
		return err
	}
	for range maxStaleLines {
		if err := t.skipToMarker(); err != nil {
			return err
		}
		ok, err := t.readSyncReply(id)
		if err != nil {
			return err
		}
		if ok {
			t.synced = true
			return nil
		}
	}
	return fmt.Errorf("%w: guest-sync-delimited: no reply with id %d", ErrProtocol, id)
}

func (t *StreamTransport) sendSync(id int64, flush bool) error {
	msg := make([]byte, 0, 80)
	if flush {
		msg = append(msg, syncMarker)
	}
	msg = fmt.Appendf(msg, `{"execute":%q,"arguments":{"id":%d}}`+"\n", CmdSyncDelimited, id)
	return t.write(msg)
}

// readSyncReply reads the line after a 0xFF and reports whether it is the
// reply to the sync with id. Garbage and oversized lines are not errors
// here: the caller keeps looking for the next marker.
func (t *StreamTransport) readSyncReply(id int64) (bool, error) {
	line, err := t.readLine()
	if errors.Is(err, ErrReplyTooLarge) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var env struct {
		Return json.Number `json:"return"`
	}
	if len(line) > 256 || json.Unmarshal(line, &env) != nil {
		return false, nil
	}
	got, err := env.Return.Int64()
	return err == nil && got == id, nil
}

// awaitOneWay waits for either the command's error reply or the reply to a
// sync sent right after the command.
func (t *StreamTransport) awaitOneWay(wantID []byte) ([]byte, error) {
	id := t.newSyncID()
	if err := t.sendSync(id, false); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
			return nil, nil
		}
		return nil, err
	}
	for range maxStaleLines {
		first, err := t.r.Peek(1)
		if err != nil {
			if errors.Is(err, io.EOF) {
				_ = t.closeLocked()
				return nil, nil
			}
			return nil, err
		}
		if first[0] == syncMarker {
			_, _ = t.r.Discard(1)
			ok, err := t.readSyncReply(id)
			if err != nil {
				return nil, err
			}
			if ok {
				t.synced = true
				return nil, nil
			}
			continue
		}
		line, err := t.readLine()
		if err != nil {
			return nil, err
		}
		rid, err := t.replyID(line)
		if err != nil {
			return nil, err
		}
		if len(wantID) > 0 && len(rid) > 0 && !bytes.Equal(rid, wantID) {
			continue
		}
		// The sync reply is still on its way; the next exchange resyncs.
		t.synced = false
		return line, nil
	}
	return nil, fmt.Errorf("%w: no reply to a one-way command", ErrProtocol)
}

// skipToMarker discards input up to and including the next 0xFF, using only
// the reader's fixed buffer.
func (t *StreamTransport) skipToMarker() error {
	for {
		_, err := t.r.ReadSlice(syncMarker)
		if err == nil {
			return nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// readLine reads one line of at most MaxReplyBytes, without its newline. A
// longer line fails with ErrReplyTooLarge as soon as the limit is passed; the
// rest stays unread and a resync discards it.
func (t *StreamTransport) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := t.r.ReadSlice('\n')
		if len(line)+len(chunk) > t.opts.MaxReplyBytes+1 {
			return nil, fmt.Errorf("%w: reply line longer than %d bytes", ErrReplyTooLarge, t.opts.MaxReplyBytes)
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return bytes.TrimRight(line, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

// replyID extracts a reply's id after checking the reply's shape limits.
func (t *StreamTransport) replyID(line []byte) ([]byte, error) {
	if err := checkJSONLimits(line, t.opts.MaxDepth, t.opts.MaxArrayLen); err != nil {
		return nil, err
	}
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(line, &env); err != nil {
		return nil, fmt.Errorf("%w: reply is not a JSON object: %s", ErrProtocol, describeJSONError(err))
	}
	return bytes.TrimSpace(env.ID), nil
}

// requestID returns the id member of one of our own requests, or nil.
func requestID(request []byte) []byte {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(request, &req) != nil {
		return nil
	}
	return bytes.TrimSpace(req.ID)
}

var (
	_ Transport       = (*StreamTransport)(nil)
	_ OneWayTransport = (*StreamTransport)(nil)
)
