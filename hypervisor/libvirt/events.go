//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

// loopWake bounds how long the event loop sleeps in C before it looks at
// its context again.
const loopWake = 100 * time.Millisecond

// eventLoop runs libvirt's (process-wide) default event loop for one
// connection. A remote connection opened after EventRegisterDefaultImpl
// relies on it: the daemon's keepalive pings are answered here, and without
// answers the daemon drops the connection after about 30 s. Events are
// dispatched from here too.
type eventLoop struct {
	cancel context.CancelFunc
	done   chan struct{}
	timer  int // wakes the loop so it notices cancel; -1 when absent
}

func startEventLoop(log *slog.Logger) *eventLoop {
	ctx, cancel := context.WithCancel(context.Background())
	l := &eventLoop{cancel: cancel, done: make(chan struct{}), timer: -1}
	if t, err := lv.EventAddTimeout(int(loopWake/time.Millisecond), func(int) {}); err != nil {
		log.Debug("libvirt event timer", "err", err)
	} else {
		l.timer = t
	}
	go func() {
		defer close(l.done)
		for ctx.Err() == nil {
			if err := lv.EventRunDefaultImpl(); err != nil {
				log.Debug("libvirt event loop", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(loopWake):
				}
			}
		}
		if l.timer >= 0 {
			if err := lv.EventRemoveTimeout(l.timer); err != nil {
				log.Debug("libvirt remove event timer", "err", err)
			}
		}
	}()
	return l
}

// stop ends the loop and waits for it, at most wait.
func (l *eventLoop) stop(wait time.Duration) bool {
	l.cancel()
	if l.timer >= 0 {
		lv.EventUpdateTimeout(l.timer, 0) // fire now
	}
	select {
	case <-l.done:
		return true
	case <-time.After(wait):
		return false
	}
}

// eventSink is one Events subscription.
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

// dispatcher fans the connection's callbacks out to the subscriptions.
// libvirt tracks one callback per event type and connection (a second
// registration fails with "event callback already tracked"), so the
// callbacks are registered once, on the first Events call, and stay until
// Close.
type dispatcher struct {
	regMu      sync.Mutex // serializes registration; never held by callbacks
	registered bool
	ids        []int

	mu    sync.Mutex // guards sinks
	sinks map[*eventSink]struct{}
}

func (d *dispatcher) dispatch(ev hypervisor.Event) {
	d.mu.Lock()
	sinks := make([]*eventSink, 0, len(d.sinks))
	for s := range d.sinks {
		sinks = append(sinks, s)
	}
	d.mu.Unlock()
	for _, s := range sinks {
		s.send(ev)
	}
}

// Events delivers lifecycle, agent, migration-iteration and job-completed
// events of every domain until ctx ends, then closes the channel. The
// connection's event loop goroutine (started by New, stopped by Close)
// dispatches them.
func (h *Hypervisor) Events(ctx context.Context) (<-chan hypervisor.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := h.ensureRegistered(ctx); err != nil {
		return nil, wrap("events", "", err)
	}
	sink := &eventSink{ch: make(chan hypervisor.Event, h.opts.EventBuffer)}
	h.events.mu.Lock()
	if h.events.sinks == nil {
		h.events.sinks = map[*eventSink]struct{}{}
	}
	h.events.sinks[sink] = struct{}{}
	h.events.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
		case <-h.loop.done:
		}
		h.events.mu.Lock()
		delete(h.events.sinks, sink)
		h.events.mu.Unlock()
		sink.close()
	}()
	return sink.ch, nil
}

// ensureRegistered registers the callbacks once. Registration is quick
// (one round trip per event type); regMu keeps concurrent first callers
// from registering twice.
func (h *Hypervisor) ensureRegistered(ctx context.Context) error {
	h.events.regMu.Lock()
	defer h.events.regMu.Unlock()
	if h.events.registered {
		return nil
	}
	ids, err := callPrimary(ctx, h, func(c *lv.Connect) ([]int, error) {
		return registerCallbacks(c, h.events.dispatch)
	})
	if err != nil {
		// A registration that finished after ctx ended is undone when the
		// connection closes.
		return err
	}
	h.events.registered, h.events.ids = true, ids
	return nil
}

func registerCallbacks(c *lv.Connect, dispatch func(hypervisor.Event)) ([]int, error) {
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
		dispatch(ev)
	})
	if err != nil {
		return fail(err)
	}
	ids = append(ids, id)
	// Drivers without these (the test driver lacks agent and migration
	// events) never send them.
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
				dispatch(ev)
			})
		},
		func() (int, error) {
			return c.DomainEventMigrationIterationRegister(nil, func(_ *lv.Connect, d *lv.Domain, e *lv.DomainEventMigrationIteration) {
				ev := baseEvent(d, hypervisor.EventMigrationIteration)
				ev.Iteration = e.Iteration
				dispatch(ev)
			})
		},
		func() (int, error) {
			return c.DomainEventJobCompletedRegister(nil, func(_ *lv.Connect, d *lv.Domain, _ *lv.DomainEventJobCompleted) {
				dispatch(baseEvent(d, hypervisor.EventJobCompleted))
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

// deregisterEvents removes the callbacks (Close, before the connection
// goes).
func (h *Hypervisor) deregisterEvents() {
	h.events.regMu.Lock()
	ids := h.events.ids
	h.events.ids, h.events.registered = nil, false
	h.events.regMu.Unlock()
	for _, id := range ids {
		if err := h.conn.DomainEventDeregister(id); err != nil {
			h.log.Debug("libvirt deregister event", "id", id, "err", err)
		}
	}
}
