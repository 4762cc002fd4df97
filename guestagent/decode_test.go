package guestagent

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckJSONLimits(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		depth   int
		elems   int
		wantErr error
	}{
		{name: "flat object", in: `{"return": {"a": 1, "b": [1, 2, 3]}}`, depth: 3, elems: 3},
		{name: "too deep", in: `{"return": [[[1]]]}`, depth: 3, elems: 10, wantErr: ErrReplyTooLarge},
		{name: "exactly deep enough", in: `{"return": [[1]]}`, depth: 3, elems: 10},
		{name: "array too long", in: `{"return": [1,2,3,4]}`, depth: 5, elems: 3, wantErr: ErrReplyTooLarge},
		{name: "array at limit", in: `{"return": [1,2,3]}`, depth: 5, elems: 3},
		{name: "object too wide", in: `{"a":1,"b":2,"c":3,"d":4}`, depth: 5, elems: 3, wantErr: ErrReplyTooLarge},
		{name: "brackets inside strings ignored", in: `{"return": "[[[[[[,,,,,,\"[[["}`, depth: 2, elems: 2},
		{name: "escaped backslash ends string", in: `{"return": ["\\", "[[[[[["]}`, depth: 2, elems: 2},
		{name: "many closes do not underflow", in: `]]]]}}}}`, depth: 2, elems: 2},
		{name: "deep attack", in: strings.Repeat("[", 100000), depth: 32, elems: 10, wantErr: ErrReplyTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkJSONLimits([]byte(tt.in), tt.depth, tt.elems)
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
		})
	}
}

func TestDecodeReply(t *testing.T) {
	opts := Options{MaxReplyBytes: 200, MaxDepth: 4, MaxArrayLen: 4, MaxStringLen: 20}.withDefaults()
	tests := []struct {
		name      string
		in        string
		wantID    string
		wantHost  string
		wantErr   error
		wantClass string
	}{
		{name: "return", in: `{"return": {"host-name": "vm"}}`, wantHost: "vm"},
		{name: "return with matching id", in: `{"return": {"host-name": "vm"}, "id": "x-1"}`, wantID: `"x-1"`, wantHost: "vm"},
		{name: "return with other id", in: `{"return": {"host-name": "vm"}, "id": "x-2"}`, wantID: `"x-1"`, wantErr: ErrProtocol},
		{name: "agent error", in: `{"error": {"class": "CommandNotFound", "desc": "nope"}}`, wantErr: ErrCommandNotFound, wantClass: "CommandNotFound"},
		{name: "disabled", in: `{"error": {"class": "CommandNotFound", "desc": "Command x has been disabled"}}`, wantErr: ErrCommandDisabled, wantClass: "CommandNotFound"},
		{name: "old disabled class", in: `{"error": {"class": "CommandDisabled", "desc": "x"}}`, wantErr: ErrCommandDisabled, wantClass: "CommandDisabled"},
		{name: "generic", in: `{"error": {"class": "GenericError", "desc": "x"}}`, wantErr: ErrGenericError, wantClass: "GenericError"},
		{name: "hostile error text is sanitized", in: `{"error": {"class": "Generic\u001b[31mError", "desc": "\u202eevil\u0007 and a very long description"}}`, wantErr: ErrAgent, wantClass: "Generic\uFFFD[31mError"},
		{name: "neither", in: `{"id": 1}`, wantErr: ErrProtocol},
		{name: "not json", in: `}{garbage`, wantErr: ErrProtocol},
		{name: "not an object", in: `[1]`, wantErr: ErrProtocol},
		{name: "wrong shape", in: `{"return": [1]}`, wantErr: ErrProtocol},
		{name: "too long", in: `{"return": {"host-name": "` + strings.Repeat("a", 300) + `"}}`, wantErr: ErrReplyTooLarge},
		{name: "too deep", in: `{"return": {"host-name": "vm", "x": [[[1]]]}}`, wantErr: ErrReplyTooLarge},
		{name: "too many", in: `{"return": {"host-name": "vm", "x": [1,1,1,1,1]}}`, wantErr: ErrReplyTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out HostNameReply
			err := decodeReply([]byte(tt.in), CmdGetHostName, []byte(tt.wantID), &out, opts)
			if tt.wantErr == nil {
				require.NoError(t, err)
				assert.Equal(t, tt.wantHost, out.HostName)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			var ae *AgentError
			if tt.wantClass != "" {
				require.ErrorAs(t, err, &ae)
				assert.Equal(t, tt.wantClass, ae.Class)
				assert.LessOrEqual(t, len(ae.Desc), opts.MaxStringLen)
				assert.True(t, printable(ae.Desc), "%q", ae.Desc)
				assert.ErrorIs(t, err, ErrAgent)
			} else {
				assert.False(t, errors.As(err, &ae))
			}
		})
	}
}

func TestAgentErrorMessageQuotesGuestText(t *testing.T) {
	err := &AgentError{Command: "guest-ping", Class: "GenericError", Desc: "line1\nline2"}
	assert.Equal(t, `guest agent: guest-ping: GenericError: "line1\nline2"`, err.Error())
}

func TestSanitize(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{name: "clean", in: "Fedora Linux", max: 64, want: "Fedora Linux"},
		{name: "no limit", in: strings.Repeat("a", 100), max: 0, want: strings.Repeat("a", 100)},
		{name: "control characters", in: "a\x1b[2Jb\nc", max: 64, want: "a\uFFFD[2Jb\uFFFDc"},
		{name: "bidi override", in: "evil\u202eexe.txt", max: 64, want: "evil\uFFFDexe.txt"},
		{name: "invalid utf-8", in: "a\xffb", max: 64, want: "a\uFFFDb"},
		{name: "cut with ellipsis", in: "abcdefghij", max: 8, want: "abcde…"},
		{name: "cut on rune boundary", in: "ääääää", max: 8, want: "ää…"},
		{name: "tiny limit has no ellipsis", in: "abcdefghij", max: 4, want: "abcd"},
		{name: "replacement growth counts", in: "\xff\xff\xff", max: 6, want: "\uFFFD…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Sanitize(tt.in, tt.max)
			assert.Equal(t, tt.want, got)
			if tt.max > 0 {
				assert.LessOrEqual(t, len(got), tt.max)
			}
			assert.True(t, utf8.ValidString(got))
		})
	}
}

func TestExecuteRefusesBadInput(t *testing.T) {
	called := false
	c := New(TransportFunc(func(context.Context, []byte) ([]byte, error) {
		called = true
		return nil, nil
	}), Options{})
	ctx := context.Background()
	require.ErrorIs(t, c.Execute(ctx, "", nil, nil), ErrInvalidArgument)
	require.ErrorIs(t, c.Execute(ctx, "guest-ping\n", nil, nil), ErrInvalidArgument)
	require.ErrorIs(t, c.Execute(ctx, CmdSyncDelimited, nil, nil), ErrInvalidArgument)
	require.ErrorIs(t, c.Execute(ctx, "guest-x", func() {}, nil), ErrInvalidArgument)
	require.ErrorIs(t, c.Shutdown(ctx, "explode"), ErrInvalidArgument)
	assert.False(t, called)
}

// FuzzDecodeReply: no input panics, every failure is one of the package's
// errors, and accepted values respect the bounds.
func FuzzDecodeReply(f *testing.F) {
	seeds := []string{
		`{"return": {}}`,
		`{"return": {"host-name": "vm"}, "id": "virtkit-1"}`,
		`{"error": {"class": "CommandNotFound", "desc": "Command guest-shutdown has been disabled"}}`,
		`{"return": [{"name": "eth0", "ip-addresses": [{"ip-address-type": "ipv4", "ip-address": "10.0.2.15", "prefix": 24}]}]}`,
		`{"return": {"version": "7.2.22", "supported_commands": [{"enabled": true, "name": "guest-ping", "success-response": true}]}}`,
		"\xff{\"return\": 5}",
		`[[[[[[[[[[`,
		`{"return": "\u0000\ud800"}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	opts := Options{MaxReplyBytes: 4096, MaxDepth: 8, MaxArrayLen: 16, MaxStringLen: 32}.withDefaults()
	f.Fuzz(func(t *testing.T, data []byte) {
		var targets = []any{new(Info), new([]NetworkInterface), new(OSInfo), new([]FSInfo), new(FreezeStatus), new(int64)}
		for _, out := range targets {
			err := decodeReply(data, "guest-fuzz", []byte(`"virtkit-1"`), out, opts)
			if err == nil {
				continue
			}
			var ae *AgentError
			switch {
			case errors.As(err, &ae):
				if len(ae.Desc) > opts.MaxStringLen || !printable(ae.Desc) || !printable(ae.Class) {
					t.Fatalf("unsanitized agent error %#v", ae)
				}
			case errors.Is(err, ErrProtocol), errors.Is(err, ErrReplyTooLarge):
			default:
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			if !utf8.ValidString(err.Error()) {
				t.Fatalf("error text is not valid UTF-8: %q", err.Error())
			}
		}
	})
}

// printable: valid UTF-8 without control or format characters.
func printable(s string) bool {
	return utf8.ValidString(s) && isClean(strings.ReplaceAll(s, "\uFFFD", ""))
}

// TestEncodeMatchesEncodingJSON checks that a request without arguments,
// written by hand, is byte for byte what encoding/json makes of it.
func TestEncodeMatchesEncodingJSON(t *testing.T) {
	c := New(TransportFunc(nil), Options{})
	for _, cmd := range []string{CmdInfo, CmdFSFreezeStatus, CmdNetworkInterfaces, "guest_custom-1"} {
		req, id, err := c.encode(cmd, nil)
		require.NoError(t, err)
		var sent request
		require.NoError(t, json.Unmarshal(req, &sent))
		want, err := json.Marshal(request{Execute: cmd, ID: sent.ID})
		require.NoError(t, err)
		assert.Equal(t, string(want), string(req))
		assert.Equal(t, strconv.Quote(sent.ID), string(id))
	}
}
