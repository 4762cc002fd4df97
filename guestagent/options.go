package guestagent

import (
	"io"
	"log/slog"
	"time"
)

// Defaults applied for zero Options fields.
const (
	DefaultMaxReplyBytes = 1 << 20
	DefaultMaxDepth      = 32
	DefaultMaxArrayLen   = 4096
	DefaultMaxStringLen  = 1024
	DefaultCallTimeout   = 10 * time.Second
)

// Options configures a Client and its transports. The zero value is the
// default; every field's default is noted beside it.
type Options struct {
	// MaxReplyBytes bounds one reply line (default 1 MiB). A longer reply is
	// rejected with ErrReplyTooLarge without being buffered.
	MaxReplyBytes int
	// MaxDepth bounds JSON nesting in a reply (default 32).
	MaxDepth int
	// MaxArrayLen bounds the elements of any one JSON array (default 4096).
	MaxArrayLen int
	// MaxStringLen bounds strings the Poller copies into its Snapshot and the
	// error text of agent errors (default 1024 bytes).
	MaxStringLen int
	// CallTimeout is the deadline of a call whose context has none (default 10 s).
	CallTimeout time.Duration
	// Logger receives debug records; guest data in them is quoted. nil discards.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.MaxReplyBytes <= 0 {
		o.MaxReplyBytes = DefaultMaxReplyBytes
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.MaxArrayLen <= 0 {
		o.MaxArrayLen = DefaultMaxArrayLen
	}
	if o.MaxStringLen <= 0 {
		o.MaxStringLen = DefaultMaxStringLen
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}
