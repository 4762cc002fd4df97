package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/internal/clockctx"
)

// Fence timeout defaults and bounds.
const (
	// DefaultFenceTimeoutHeartbeats is the default fence timeout in
	// heartbeat intervals (60 s with the default 10 s heartbeat), but
	// never less than MinDefaultFenceTimeout.
	DefaultFenceTimeoutHeartbeats = 6
	// MinDefaultFenceTimeout is the shortest default fence timeout, for
	// short heartbeat intervals: a starved process must not fence itself
	// over a hiccup.
	MinDefaultFenceTimeout = 10 * time.Second
	// minFenceHeartbeats is the shortest fence timeout allowed, in
	// heartbeat intervals, plus heartbeatResolution: a missed heartbeat or
	// two must never fence a node.
	minFenceHeartbeats = 3
	// heartbeatResolution is the precision of the heartbeat time in the
	// store (seconds): renewals within one second write the same value, so
	// the fence deadline counts from the first of them.
	heartbeatResolution = time.Second
)

// DefaultFenceTimeout is the fence timeout an agent with the given
// heartbeat interval uses when Options.FenceTimeout is 0.
func DefaultFenceTimeout(heartbeat time.Duration) time.Duration {
	return max(DefaultFenceTimeoutHeartbeats*heartbeat, MinDefaultFenceTimeout)
}

// MinFenceTimeout is the shortest fence timeout allowed with the given
// heartbeat interval: three intervals plus the heartbeat's one-second
// resolution.
func MinFenceTimeout(heartbeat time.Duration) time.Duration {
	return minFenceHeartbeats*heartbeat + heartbeatResolution
}

// ErrFenced is returned by operations that would start a guest while the
// agent is fenced: it has not renewed its heartbeat within its fence
// timeout, so the controller may already be restarting its guests
// elsewhere.
var ErrFenced = errors.New("node agent is fenced: its heartbeat lease is not current")

// Watchdog is a host watchdog the agent pets after every heartbeat renewal
// that succeeded: unless petted again within timeout, it stops every guest
// on the host, whatever the agent process is doing (frozen, stopped,
// killed). The simulated hypervisor has one (sim.Host.PetWatchdog).
type Watchdog interface {
	PetWatchdog(ctx context.Context, timeout time.Duration) error
}

// lease is the agent's view of its heartbeat: when the heartbeat value now
// in the store was first written, and whether the agent has fenced itself
// since.
type lease struct {
	mu sync.Mutex
	// base is the start of the renewal that first wrote value: the
	// controller cannot have seen value change before then.
	base  time.Time
	value time.Time
	// fenced is set when the fence timeout passed without a renewal; the
	// next renewal clears it.
	fenced bool
	// gen counts fences; a start admitted under one generation is undone
	// when a fence happened meanwhile.
	gen uint64
}

// renewed records a successful heartbeat write of value that started at
// start. It returns the time left before the fence deadline and whether
// the agent was fenced until now.
func (l *lease) renewed(start, value, now time.Time, timeout time.Duration) (left time.Duration, wasFenced bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.base.IsZero() || !value.Equal(l.value) {
		l.base, l.value = start, value
	}
	wasFenced = l.fenced
	l.fenced = false
	return l.base.Add(timeout).Sub(now), wasFenced
}

// admit reports whether a guest may be started now, and the generation to
// check afterwards with current.
func (l *lease) admit(now time.Time, timeout time.Duration) (uint64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if timeout <= 0 || l.base.IsZero() {
		// Fencing off, or no lease yet (Start registers before it
		// reconciles anything).
		return l.gen, !l.fenced
	}
	return l.gen, !l.fenced && now.Before(l.base.Add(timeout))
}

// current reports whether no fence happened since admit returned gen.
func (l *lease) current(gen uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gen == gen && !l.fenced
}

// expire fences the lease when its deadline has passed; it reports whether
// the agent is (now) fenced and whether it just became so.
func (l *lease) expire(now time.Time, timeout time.Duration) (fenced, fresh bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fenced {
		return true, false
	}
	if l.base.IsZero() || now.Before(l.base.Add(timeout)) {
		return false, false
	}
	l.fenced = true
	l.gen++
	return true, true
}

// Fenced reports whether the agent is fenced now: it could not renew its
// heartbeat within its fence timeout and has destroyed its guests.
func (a *Agent) Fenced() bool {
	a.lease.mu.Lock()
	defer a.lease.mu.Unlock()
	return a.lease.fenced
}

// Fences counts how often the agent fenced itself since it was created.
func (a *Agent) Fences() uint64 {
	a.lease.mu.Lock()
	defer a.lease.mu.Unlock()
	return a.lease.gen
}

// fencePoll is how often the fence deadline is checked.
func (a *Agent) fencePoll() time.Duration {
	return min(max(a.opts.FenceTimeout/20, 10*time.Millisecond), time.Second)
}

// fenceLoop destroys this node's guests once the heartbeat has not been
// renewed for FenceTimeout, and keeps destroying any that start while the
// agent stays fenced.
func (a *Agent) fenceLoop(ctx context.Context) {
	if a.opts.FenceTimeout <= 0 {
		return
	}
	t := a.opts.Clock.NewTicker(a.fencePoll())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		fenced, fresh := a.lease.expire(a.opts.Clock.Now(), a.opts.FenceTimeout)
		if !fenced {
			continue
		}
		if fresh {
			a.log.Error("fencing: heartbeat not renewed within the fence timeout; destroying this node's guests",
				"fenceTimeout", a.opts.FenceTimeout)
		}
		if err := a.sweep(ctx, fresh); err != nil && ctx.Err() == nil {
			a.log.Warn("fencing: destroying guests", "err", err)
		}
	}
}

// sweep destroys every active domain that is this node's by what the host
// says (no store needed). The first sweep of a fence also counts as fenced
// the domains the host watchdog destroyed just before.
func (a *Agent) sweep(ctx context.Context, first bool) error {
	sctx, cancel := clockctx.WithTimeout(ctx, a.opts.Clock, a.opts.FenceTimeout)
	defer cancel()
	doms, err := a.opts.Hypervisor.List(sctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range doms {
		if !d.State.IsActive() {
			if first && d.Reason == hypervisor.ReasonDestroyed && a.ownedLocally(sctx, d) {
				a.mu.Lock()
				a.fenced[d.Name] = true
				a.mu.Unlock()
			}
			continue
		}
		if !a.ownedLocally(sctx, d) {
			continue
		}
		if err := a.opts.Hypervisor.Destroy(sctx, d.Name); err != nil && !ignorable(err) {
			errs = append(errs, fmt.Errorf("domain %s: %w", d.Name, err))
			continue
		}
		a.mu.Lock()
		a.fenced[d.Name] = true
		a.mu.Unlock()
		a.log.Warn("fencing: destroyed guest", "domain", d.Name)
	}
	return errors.Join(errs...)
}

// wasFenced reports whether fencing destroyed the domain.
func (a *Agent) wasFenced(domName string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fenced[domName]
}

// undoIfFenced destroys a domain just started under lease generation gen
// when the agent fenced itself meanwhile.
func (a *Agent) undoIfFenced(ctx context.Context, domName string, gen uint64) error {
	if a.lease.current(gen) {
		return nil
	}
	if err := a.opts.Hypervisor.Destroy(ctx, domName); err != nil && !ignorable(err) {
		return fmt.Errorf("domain %s: %w (and destroying it: %w)", domName, ErrFenced, err)
	}
	a.mu.Lock()
	a.fenced[domName] = true
	a.mu.Unlock()
	return fmt.Errorf("domain %s: %w", domName, ErrFenced)
}

// watchdogSlack is how much later than the agent's own fence deadline the
// watchdog fires: the agent normally fences first (and knows which guests
// it stopped); the watchdog is the backstop for a process that cannot.
func (a *Agent) watchdogSlack() time.Duration { return a.opts.FenceTimeout / 10 }

// renewalTimeout bounds one heartbeat write: the heartbeat interval or
// half the fence timeout (a second without fencing), whichever is longer:
// on a slow store a write that would succeed must not be cut short over and
// over. (Safety does not depend on it: the fence deadline counts from
// the start of a write.) Registration at Start gets ReconcileTimeout.
func (a *Agent) renewalTimeout() time.Duration {
	if a.opts.FenceTimeout <= 0 {
		return max(a.opts.HeartbeatInterval, time.Second)
	}
	return max(a.opts.HeartbeatInterval, a.opts.FenceTimeout/2)
}
