package guestagent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// scriptedConn is an agent whose output is fixed: reads return script,
// then EOF; writes are accepted and dropped.
type scriptedConn struct {
	r *bytes.Reader
}

func (c *scriptedConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *scriptedConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *scriptedConn) Close() error                     { return nil }
func (c *scriptedConn) LocalAddr() net.Addr              { return &net.UnixAddr{Name: "host", Net: "unix"} }
func (c *scriptedConn) RemoteAddr() net.Addr             { return &net.UnixAddr{Name: "guest", Net: "unix"} }
func (c *scriptedConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptedConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptedConn) SetWriteDeadline(time.Time) error { return nil }

func scriptedTransport(script []byte, opts Options) *StreamTransport {
	t := NewStreamTransport(func(context.Context) (net.Conn, error) {
		return &scriptedConn{r: bytes.NewReader(script)}, nil
	}, opts)
	t.newSyncID = func() int64 { return 42 }
	return t
}

func TestStreamFraming(t *testing.T) {
	const sync42 = "\xff{\"return\": 42}\n"
	tests := []struct {
		name     string
		script   string
		wantHost string
		wantErr  error
	}{
		{name: "clean", script: sync42 + `{"return": {"host-name": "vm"}, "id": "virtkit-1"}` + "\n", wantHost: "vm"},
		{name: "noise before the marker", script: "junk{\"return\": 1}\n{\"error\": {\"class\": \"GenericError\", \"desc\": \"stray\"}}\n" + sync42 + `{"return": {"host-name": "vm"}}` + "\n", wantHost: "vm"},
		{name: "stale sync replies", script: "\xff{\"return\": 41}\n\xff{\"return\": 40}\n" + sync42 + `{"return": {"host-name": "vm"}}` + "\n", wantHost: "vm"},
		{name: "garbage after a marker", script: "\xffnot json\n" + sync42 + `{"return": {"host-name": "vm"}}` + "\n", wantHost: "vm"},
		{name: "stale reply by id", script: sync42 + `{"return": {"host-name": "old"}, "id": "virtkit-0"}` + "\n" + `{"return": {"host-name": "vm"}, "id": "virtkit-1"}` + "\n", wantHost: "vm"},
		{name: "late sync reply after the marker", script: sync42 + "\xff{\"return\": 42}\n" + `{"return": {"host-name": "vm"}}` + "\n", wantHost: "vm"},
		{name: "CRLF", script: sync42 + "{\"return\": {\"host-name\": \"vm\"}}\r\n", wantHost: "vm"},
		{name: "no marker at all", script: `{"return": 42}` + "\n", wantErr: ErrDisconnected},
		{name: "reply cut off", script: sync42 + `{"return": {"host-na`, wantErr: ErrDisconnected},
		{name: "garbage reply", script: sync42 + "}{\n", wantErr: ErrProtocol},
		{name: "oversized reply", script: sync42 + `{"return": "` + string(bytes.Repeat([]byte("a"), 2000)) + "\"}\n", wantErr: ErrReplyTooLarge},
		{name: "deep reply", script: sync42 + string(bytes.Repeat([]byte("["), 100)) + "\n", wantErr: ErrReplyTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{MaxReplyBytes: 1024}
			c := New(scriptedTransport([]byte(tt.script), opts), opts)
			host, err := c.HostName(context.Background())
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || host != tt.wantHost {
				t.Fatalf("got %q, %v; want %q", host, err, tt.wantHost)
			}
		})
	}
}

// FuzzStreamReplies feeds arbitrary agent output to the framing code: no
// panic, and every failure is one of the package's errors.
func FuzzStreamReplies(f *testing.F) {
	f.Add([]byte("\xff{\"return\": 42}\n{\"return\": {\"host-name\": \"vm\"}, \"id\": \"virtkit-1\"}\n"))
	f.Add([]byte("\xff{\"return\": 42}\n{\"error\": {\"class\": \"GenericError\", \"desc\": \"x\"}}\n"))
	f.Add([]byte("\xff\xff\xff{\"return\": 42}\r\n\xff\n"))
	f.Add([]byte("{\"return\": 42}\n\xff{\"return\": 41}\n"))
	f.Fuzz(func(t *testing.T, script []byte) {
		opts := Options{MaxReplyBytes: 256, MaxDepth: 8, MaxArrayLen: 8}
		c := New(scriptedTransport(script, opts), opts)
		_, err := c.HostName(context.Background())
		if err == nil {
			return
		}
		var ae *AgentError
		switch {
		case errors.As(err, &ae), errors.Is(err, ErrProtocol), errors.Is(err, ErrReplyTooLarge),
			errors.Is(err, ErrDisconnected) && errors.Is(err, io.EOF):
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	})
}
