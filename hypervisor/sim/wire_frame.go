package sim

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// The migration stream between simulated hosts in different processes.
//
// A frame is one type byte, a 4-byte big-endian payload length and the
// payload. The source opens the connection with a hello (the domain XML
// and its workload), the target answers ready once the paused incoming
// domain exists, the source then sends the pages of each pass as the
// model sends them, a post-copy notice when the guest moves early, and the
// switchover (or an abort); the target answers the switchover with done.
// The target reports a lost incoming domain at any time; both sides send
// pings while idle so a dead peer is noticed within the idle timeout.

// Frame types.
const (
	frameHello      byte = iota + 1 // source -> target, JSON wireHello
	frameReady                      // target -> source, JSON wireReply
	framePages                      // source -> target, 4-byte pass number + page data
	framePostCopy                   // source -> target, JSON wirePostCopy (or empty): the guest runs on the target now
	frameSwitchover                 // source -> target, JSON wireSwitchover
	frameDone                       // target -> source, JSON wireReply
	frameAbort                      // source -> target, JSON wireReply (Error = why)
	frameLost                       // target -> source, JSON wireReply (Error = why)
	framePing                       // either way, empty
	frameLast       = framePing
)

const (
	// wireVersion is the stream's protocol version, sent in the hello.
	wireVersion = 1
	// maxHelloFrame bounds a hello: the domain XML and the workload.
	maxHelloFrame = 4 << 20
	// maxControlFrame bounds every other frame but pages.
	maxControlFrame = 64 << 10
	// pagesPerFrame is how many pages one pages frame carries at most.
	pagesPerFrame = 256
	// maxPagesFrame bounds a pages frame: the pass number and the pages.
	maxPagesFrame = 4 + pagesPerFrame*pageSize

	// wireHandshakeTimeout bounds the hello and its answer.
	wireHandshakeTimeout = 30 * time.Second
	// wireIdleTimeout is how long either side waits for a frame (pings
	// arrive every wirePingInterval) or for a frame to be written.
	wireIdleTimeout = 30 * time.Second
	// wirePingInterval is how often an idle side says it is alive.
	wirePingInterval = time.Second
	// wireSwitchoverTimeout bounds the wait for the target's done.
	wireSwitchoverTimeout = 30 * time.Second
)

// ErrStream is wrapped by errors of the TCP migration stream: a malformed
// frame, a protocol violation, a peer that went away.
var ErrStream = errors.New("sim migration stream")

// wireHello opens a migration.
type wireHello struct {
	Version  int      `json:"version"`
	Source   string   `json:"source"`
	Name     string   `json:"name"`
	XML      string   `json:"xml"`
	Workload Workload `json:"workload"`
}

// wireReply answers a hello or a switchover, or says why a side gives up.
type wireReply struct {
	Error string `json:"error,omitempty"`
	// Code classifies Error: "exists", "invalid", "state" or "".
	Code    string `json:"code,omitempty"`
	Present bool   `json:"present,omitempty"`
}

// wireSwitchover hands the guest over.
type wireSwitchover struct {
	UserPaused bool          `json:"userPaused,omitempty"`
	Persist    bool          `json:"persist,omitempty"`
	Display    *displayState `json:"display,omitempty"`
}

// wirePostCopy tells the target the guest runs there now.
type wirePostCopy struct {
	Display *displayState `json:"display,omitempty"`
}

// maxFrame is the largest payload a frame of type t may carry.
func maxFrame(t byte) int {
	switch t {
	case frameHello:
		return maxHelloFrame
	case framePages:
		return maxPagesFrame
	}
	return maxControlFrame
}

// writeFrame writes one frame with a deadline.
func writeFrame(c net.Conn, t byte, payload ...[]byte) error {
	n := 0
	for _, p := range payload {
		n += len(p)
	}
	if n > maxFrame(t) {
		return fmt.Errorf("%w: frame type %d: %d bytes exceed the limit %d", ErrStream, t, n, maxFrame(t))
	}
	var hdr [5]byte
	hdr[0] = t
	binary.BigEndian.PutUint32(hdr[1:], uint32(n))
	bufs := net.Buffers(append([][]byte{hdr[:]}, payload...))
	if err := c.SetWriteDeadline(time.Now().Add(wireIdleTimeout)); err != nil {
		return err
	}
	_, err := bufs.WriteTo(c)
	return err
}

// writeJSON writes a frame with a JSON payload.
func writeJSON(c net.Conn, t byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFrame(c, t, b)
}

// readFrame reads one frame into buf (grown to the frame's bound at
// most), waiting at most timeout for it.
func readFrame(c net.Conn, buf []byte, timeout time.Duration) (byte, []byte, error) {
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return 0, nil, err
	}
	var hdr [5]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return 0, nil, err
	}
	t, n := hdr[0], binary.BigEndian.Uint32(hdr[1:])
	if t == 0 || t > frameLast {
		return 0, nil, fmt.Errorf("%w: unknown frame type %d", ErrStream, t)
	}
	if int64(n) > int64(maxFrame(t)) {
		return 0, nil, fmt.Errorf("%w: frame type %d: %d bytes exceed the limit %d", ErrStream, t, n, maxFrame(t))
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(c, buf); err != nil {
		return 0, nil, err
	}
	return t, buf, nil
}

// decodeJSON decodes a frame's JSON payload strictly.
func decodeJSON(t byte, payload []byte, v any) error {
	if err := json.Unmarshal(payload, v); err != nil {
		return fmt.Errorf("%w: frame type %d: %v", ErrStream, t, err)
	}
	return nil
}

// errorCode classifies err for a wireReply.
func errorCode(err error) string {
	switch {
	case errors.Is(err, hypervisor.ErrExists):
		return "exists"
	case errors.Is(err, hypervisor.ErrInvalidArgument):
		return "invalid"
	case errors.Is(err, hypervisor.ErrInvalidState):
		return "state"
	}
	return ""
}

// replyError turns a wireReply's error back into an error with its
// sentinel.
func replyError(r wireReply, peer string) error {
	sentinel := hypervisor.ErrMigrationFailed
	switch r.Code {
	case "exists":
		sentinel = hypervisor.ErrExists
	case "invalid":
		sentinel = hypervisor.ErrInvalidArgument
	case "state":
		sentinel = hypervisor.ErrInvalidState
	}
	return fmt.Errorf("target %s: %s: %w", peer, r.Error, sentinel)
}

// ParseMigrationAddress reads the address of a migration listener:
// tcp://HOST:PORT (or HOST:PORT). tls:// is refused: the stream has no
// TLS.
func ParseMigrationAddress(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme == "" || u.Host == "" {
		if _, _, serr := net.SplitHostPort(uri); serr == nil {
			return uri, nil
		}
		return "", invalid("migration address", fmt.Sprintf("%q: want tcp://HOST:PORT", uri))
	}
	switch u.Scheme {
	case "tcp":
	case "tls":
		return "", hypervisor.NotSupportedError("migration address", "TLS on the simulated migration stream (use tcp:// on a trusted network)")
	default:
		return "", invalid("migration address", fmt.Sprintf("%q: scheme %q: want tcp", uri, u.Scheme))
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.User != nil {
		return "", invalid("migration address", fmt.Sprintf("%q: want only tcp://HOST:PORT", uri))
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return "", invalid("migration address", fmt.Sprintf("%q: %v", uri, err))
	}
	return u.Host, nil
}

// remoteAddress says whether params name a migration listener in another
// process (a tcp:// or tls:// destination) and returns the address to
// dial: the data URI when given, else the destination.
func remoteAddress(p hypervisor.MigrationParams) (string, bool, error) {
	u, err := url.Parse(p.DestinationURI)
	if err != nil || u.Scheme != "tcp" && u.Scheme != "tls" {
		return "", false, nil // a host name on a Network
	}
	uri, field := p.DestinationURI, "params.destinationURI"
	if p.MigrateURI != "" {
		uri, field = p.MigrateURI, "params.migrateURI"
	}
	addr, err := ParseMigrationAddress(uri)
	if err != nil {
		return "", true, fmt.Errorf("%s: %w", field, err)
	}
	return addr, true, nil
}
