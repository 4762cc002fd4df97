package node

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/virtkit/virtkit/domain"
)

// The downward metrics channel (devices.downwardMetrics): QEMU listens on
// the port's unix socket and the agent connects to it; a guest program
// writes "GET /metrics/XML", a blank line, and reads the metrics document
// followed by a blank line. Anything else is answered "INVALID REQUEST"
// and a blank line. Requests are served one at a time, at most one per
// second as KubeVirt serves them, and a request line is bounded. The
// agent reconnects while the domain exists (QEMU drops the connection when
// the guest stops) and disconnects when the domain is removed.

const (
	channelInvalid    = "INVALID REQUEST\n\n"
	maxChannelRequest = 4 << 10
	channelMinGap     = time.Second
	channelRedial     = time.Second
)

// serveDownwardChannel connects to the channel's socket and answers the
// guest until ctx ends.
func (a *Agent) serveDownwardChannel(ctx context.Context, domName, sock string) {
	for ctx.Err() == nil {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "unix", sock)
		if err == nil {
			a.log.Debug("downward metrics channel connected", "domain", domName)
			a.answerDownwardChannel(ctx, domName, conn)
		}
		select {
		case <-ctx.Done():
			return
		case <-a.opts.Clock.After(channelRedial):
		}
	}
}

func (a *Agent) answerDownwardChannel(ctx context.Context, domName string, conn net.Conn) {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	r := bufio.NewReaderSize(conn, maxChannelRequest)
	var last time.Time
	for {
		req, err := readChannelRequest(r)
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || ctx.Err() != nil {
			return
		}
		if wait := channelMinGap - a.opts.Clock.Since(last); !last.IsZero() && wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-a.opts.Clock.After(wait):
			}
		}
		last = a.opts.Clock.Now()
		reply := []byte(channelInvalid)
		if err == nil && validChannelRequest(req) {
			cctx, cancel := context.WithTimeout(ctx, a.opts.DownwardMetrics.withDefaults().Interval)
			body, merr := domain.MarshalMetrics(a.collectDownwardMetrics(cctx, domName))
			cancel()
			if merr == nil {
				reply = append(body, '\n') // the document ends in one newline: a blank line ends the answer
			}
		} else if err != nil {
			a.log.Debug("downward metrics channel: bad request", "domain", domName, "err", err)
		}
		if err := conn.SetWriteDeadline(time.Now().Add(10 * time.Second)); err != nil {
			return
		}
		if _, err := conn.Write(reply); err != nil {
			return
		}
	}
}

// readChannelRequest reads a request line and the blank line after it; a
// line longer than maxChannelRequest is an error after it is drained.
func readChannelRequest(r *bufio.Reader) (string, error) {
	line, lerr := readBoundedLine(r)
	if lerr != nil && !errors.Is(lerr, errLongLine) {
		return "", lerr
	}
	blank, err := readBoundedLine(r) // a too long request still ends in its blank line
	if err != nil {
		return "", err
	}
	if lerr != nil {
		return "", lerr
	}
	if blank != "" {
		return "", errors.New("request line not followed by a blank line")
	}
	return line, nil
}

var errLongLine = errors.New("request line too long")

func readBoundedLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = r.ReadSlice('\n')
		}
		if err != nil {
			return "", err
		}
		return "", errLongLine
	}
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(line), "\r\n"), nil
}

func validChannelRequest(line string) bool {
	method, target, ok := strings.Cut(line, " ")
	if !ok || method != "GET" {
		return false
	}
	u, err := url.ParseRequestURI(target)
	return err == nil && u.Path == "/metrics/XML"
}
