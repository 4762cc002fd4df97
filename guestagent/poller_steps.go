package guestagent

import (
	"context"
	"time"
)

// PollStep is one of a Poller's workers, for callers that schedule the
// polls of many guests themselves (a pool of bounded workers) instead of
// running Start's goroutines per guest.
type PollStep struct {
	// Name is the worker's name ("version", "filesystems", "fsfreeze",
	// "sys", "users").
	Name string
	// Interval is the worker's steady-state period (KubeVirt's unless the
	// options changed it).
	Interval time.Duration
}

// Steps lists the poller's workers in the order PollOnce runs them.
func (p *Poller) Steps() []PollStep {
	ws := p.workers()
	out := make([]PollStep, len(ws))
	for i, w := range ws {
		out[i] = PollStep{Name: w.name, Interval: w.interval}
	}
	return out
}

// InitialInterval is the first wait after a worker's immediate first poll;
// a scheduler doubles it up to the worker's Interval, as Start does.
func (p *Poller) InitialInterval() time.Duration { return p.opts.InitialInterval }

// PollStep runs worker i (an index into Steps) once: the snapshot is
// updated and OnChange called exactly as under Start. An index out of range
// does nothing.
func (p *Poller) PollStep(ctx context.Context, i int) error {
	ws := p.workers()
	if i < 0 || i >= len(ws) {
		return nil
	}
	return ws[i].poll(ctx)
}
