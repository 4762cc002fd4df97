package metrics

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/virtkit/virtkit"
)

// errInvalidOptions wraps every configuration error of this package; it
// matches virtkit.ErrInvalidOptions.
var errInvalidOptions = virtkit.InvalidOptions("metrics")

// Defaults of [Options].
const (
	DefaultScrapeTimeout  = 5 * time.Second
	DefaultMaxConcurrency = 16
)

// Options tune the collectors. The zero value is the default.
type Options struct {
	// ScrapeTimeout bounds how long one scrape waits for the hypervisor
	// (domain and migration-job statistics) and for listing objects;
	// default 5 s. What misses it is left out of that scrape.
	ScrapeTimeout time.Duration
	// MaxConcurrency bounds concurrent hypervisor calls per scrape;
	// default 16.
	MaxConcurrency int
	// Logger receives scrape errors; nil discards them.
	Logger *slog.Logger
}

func (o Options) withDefaults() (Options, error) {
	if o.ScrapeTimeout < 0 {
		return o, fmt.Errorf("%w: ScrapeTimeout: must not be negative, got %v", errInvalidOptions, o.ScrapeTimeout)
	}
	if o.MaxConcurrency < 0 {
		return o, fmt.Errorf("%w: MaxConcurrency: must not be negative, got %d", errInvalidOptions, o.MaxConcurrency)
	}
	if o.ScrapeTimeout == 0 {
		o.ScrapeTimeout = DefaultScrapeTimeout
	}
	if o.MaxConcurrency == 0 {
		o.MaxConcurrency = DefaultMaxConcurrency
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}
