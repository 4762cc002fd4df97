package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// watchdog is the host's simulated hardware watchdog (see PetWatchdog).
type watchdog struct {
	armed    bool
	deadline time.Time
	fired    uint64
}

// PetWatchdog arms the host's watchdog, or re-arms it: unless it is petted
// again within timeout of the host's clock, it fires and every active
// domain on the host is destroyed (state shut off, reason Destroyed), as a
// host reset by a hardware watchdog would stop them. Like the rest of the
// simulator it acts lazily: the first call into the host after the
// deadline (a read, a step of the clock, a pet) fences the domains before
// it does anything else, so a node agent that wakes from a freeze never
// sees, or reports, a guest that should have been stopped. A pet that
// comes after the deadline fires the watchdog first and then re-arms it.
func (h *Host) PetWatchdog(ctx context.Context, timeout time.Duration) error {
	if timeout <= 0 {
		return hypervisor.WrapDomain("watchdog", "", invalid("timeout", fmt.Sprintf("%v is not positive", timeout)))
	}
	return h.do(ctx, func(now time.Time) error {
		h.wd.armed = true
		h.wd.deadline = now.Add(timeout)
		return nil
	})
}

// DisarmWatchdog stops the watchdog (after checking it one last time).
func (h *Host) DisarmWatchdog(ctx context.Context) error {
	return h.do(ctx, func(time.Time) error {
		h.wd.armed = false
		return nil
	})
}

// WatchdogFired counts how often the watchdog has fired.
func (h *Host) WatchdogFired() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.wd.fired
}

// checkWatchdogLocked fires the watchdog when its deadline has passed
// (h.mu held, the host advanced to now).
func (h *Host) checkWatchdogLocked(now time.Time) {
	if !h.wd.armed || now.Before(h.wd.deadline) {
		return
	}
	h.wd.armed = false
	h.wd.fired++
	var fenced []string
	for _, name := range h.order {
		d, ok := h.domains[name]
		if !ok {
			continue
		}
		if d = h.current(d); d.state.IsActive() {
			fenced = append(fenced, name)
			h.stop(d, now, hypervisor.ReasonDestroyed)
		}
	}
	h.log.Warn("watchdog fired: guests destroyed", "host", h.opts.Name,
		"late", now.Sub(h.wd.deadline), "domains", fenced)
}

// fireWatchdog fires the watchdog now, armed or not.
func (h *Host) fireWatchdog(ctx context.Context) error {
	return h.do(ctx, func(now time.Time) error {
		h.wd.armed, h.wd.deadline = true, now
		h.checkWatchdogLocked(now)
		return nil
	})
}

// WatchdogDeadline returns when the watchdog fires unless petted, and
// whether it is armed.
func (h *Host) WatchdogDeadline() (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.wd.deadline, h.wd.armed
}
