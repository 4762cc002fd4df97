package sim

import (
	"context"
	"slices"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// Events delivers the host's events until ctx ends.
func (h *Host) Events(ctx context.Context) (<-chan hypervisor.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sub := &subscriber{ch: make(chan hypervisor.Event, h.opts.EventBuffer)}
	h.mu.Lock()
	h.subs = append(h.subs, sub)
	h.mu.Unlock()
	go func() {
		<-ctx.Done()
		h.mu.Lock()
		h.subs = slices.DeleteFunc(h.subs, func(s *subscriber) bool { return s == sub })
		close(sub.ch)
		h.mu.Unlock()
	}()
	return sub.ch, nil
}

type subscriber struct{ ch chan hypervisor.Event }

// emit delivers ev to every subscriber, dropping a subscriber's oldest
// event when its buffer is full. Called with h.mu held.
func (h *Host) emit(ev hypervisor.Event) {
	for _, s := range h.subs {
		select {
		case s.ch <- ev:
			continue
		default:
		}
		select {
		case <-s.ch:
		default:
		}
		select {
		case s.ch <- ev:
		default:
		}
	}
}

func (h *Host) emitState(d *domain, now time.Time) {
	h.log.Debug("domain state", "host", h.opts.Name, "domain", d.name(), "state", d.state, "reason", d.reason)
	h.emit(hypervisor.Event{Domain: d.name(), UUID: d.uuid(), Time: now, Kind: hypervisor.EventLifecycle, State: d.state, Reason: d.reason})
}
