//go:build cgo

package libvirt

import (
	"context"
	"errors"
	"sync"
	"time"

	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

// loopWake bounds how long the event loop sleeps in C before it looks at
// its context again.
const loopWake = 100 * time.Millisecond

// eventSink is one Events subscription. Callbacks of any subscription may
// run on any goroutine that runs libvirt's (process-wide) loop, so sends are
// serialized with close.
type eventSink struct {
	mu     sync.Mutex
	closed bool
	ch     chan hypervisor.Event
}

func (s *eventSink) send(ev hypervisor.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for {
		select {
		case s.ch <- ev:
			return
		default:
		}
		// Full: drop the oldest, as the contract allows.
		select {
		case <-s.ch:
		default:
		}
	}
}

func (s *eventSink) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
}

// Events delivers lifecycle, agent, migration-iteration and job-completed
// events of every domain until ctx ends. It runs libvirt's event loop in a
// goroutine that stops (and deregisters its callbacks) with ctx.
func (h *Hypervisor) Events(ctx context.Context) (<-chan hypervisor.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sink := &eventSink{ch: make(chan hypervisor.Event, h.opts.EventBuffer)}
	ids, err := h.registerEvents(ctx, sink)
	if err != nil {
		return nil, wrap("events", "", err)
	}
	timer, err := lv.EventAddTimeout(int(loopWake/time.Millisecond), func(int) {})
	if err != nil {
		h.deregister(ids)
		return nil, wrap("events", "", err)
	}
	go func() {
		defer sink.close()
		defer h.deregister(ids)
		defer func() {
			if err := lv.EventRemoveTimeout(timer); err != nil {
				h.log.Debug("libvirt remove event timer", "err", err)
			}
		}()
		for ctx.Err() == nil {
			if err := lv.EventRunDefaultImpl(); err != nil {
				h.log.Debug("libvirt event loop", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(loopWake):
				}
			}
		}
	}()
	return sink.ch, nil
}

// registerEvents registers the callbacks under ctx. When ctx ends first,
// the registration finishes in the background and is undone.
func (h *Hypervisor) registerEvents(ctx context.Context, sink *eventSink) ([]int, error) {
	if err := h.ref(); err != nil {
		return nil, err
	}
	type result struct {
		ids []int
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer h.unref()
		ids, err := registerCallbacks(h.conn, sink)
		done <- result{ids, err}
	}()
	select {
	case r := <-done:
		return r.ids, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.err == nil {
				h.deregister(r.ids)
			}
		}()
		return nil, ctx.Err()
	}
}

func registerCallbacks(c *lv.Connect, sink *eventSink) ([]int, error) {
	var ids []int
	fail := func(err error) ([]int, error) {
		for _, id := range ids {
			_ = c.DomainEventDeregister(id)
		}
		return nil, err
	}
	id, err := c.DomainEventLifecycleRegister(nil, func(_ *lv.Connect, d *lv.Domain, e *lv.DomainEventLifecycle) {
		ev := baseEvent(d, hypervisor.EventLifecycle)
		ev.State, ev.Reason = lifecycleState(e.Event, e.Detail)
		sink.send(ev)
	})
	if err != nil {
		return fail(err)
	}
	ids = append(ids, id)
	// The optional ones: drivers without them (the test driver lacks the
	// agent and migration events) simply never send them.
	optional := []func() (int, error){
		func() (int, error) {
			return c.DomainEventAgentLifecycleRegister(nil, func(_ *lv.Connect, d *lv.Domain, e *lv.DomainEventAgentLifecycle) {
				ev := baseEvent(d, hypervisor.EventAgentLifecycle)
				switch e.State {
				case lv.CONNECT_DOMAIN_EVENT_AGENT_LIFECYCLE_STATE_CONNECTED:
					ev.Agent = hypervisor.ChannelConnected
				case lv.CONNECT_DOMAIN_EVENT_AGENT_LIFECYCLE_STATE_DISCONNECTED:
					ev.Agent = hypervisor.ChannelDisconnected
				}
				sink.send(ev)
			})
		},
		func() (int, error) {
			return c.DomainEventMigrationIterationRegister(nil, func(_ *lv.Connect, d *lv.Domain, e *lv.DomainEventMigrationIteration) {
				ev := baseEvent(d, hypervisor.EventMigrationIteration)
				ev.Iteration = e.Iteration
				sink.send(ev)
			})
		},
		func() (int, error) {
			return c.DomainEventJobCompletedRegister(nil, func(_ *lv.Connect, d *lv.Domain, _ *lv.DomainEventJobCompleted) {
				sink.send(baseEvent(d, hypervisor.EventJobCompleted))
			})
		},
	}
	for _, reg := range optional {
		id, err := reg()
		if err != nil {
			if errors.Is(translate(err), hypervisor.ErrNotSupported) {
				continue
			}
			return fail(err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// baseEvent fills identity and time; the callback's domain is borrowed
// from libvirt and not freed here.
func baseEvent(d *lv.Domain, kind hypervisor.EventKind) hypervisor.Event {
	ev := hypervisor.Event{Kind: kind, Time: time.Now()}
	if name, err := d.GetName(); err == nil {
		ev.Domain = name
	}
	if uuid, err := d.GetUUIDString(); err == nil {
		ev.UUID = uuid
	}
	return ev
}

// deregister removes callbacks with a bounded wait: a dead daemon must not
// hang the goroutine that closes the channel.
func (h *Hypervisor) deregister(ids []int) {
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := call(ctx, h, func(c *lv.Connect) (struct{}, error) {
		deregisterIDs(h, c, ids)
		return struct{}{}, nil
	})
	if err != nil {
		h.log.Debug("libvirt deregister events", "err", err)
	}
}

func deregisterIDs(h *Hypervisor, c *lv.Connect, ids []int) {
	for _, id := range ids {
		if err := c.DomainEventDeregister(id); err != nil {
			h.log.Debug("libvirt deregister event", "id", id, "err", err)
		}
	}
}
