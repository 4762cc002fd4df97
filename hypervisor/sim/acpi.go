package sim

import (
	"context"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// ACPIBehaviour is how a simulated guest answers the ACPI power button: the
// request behind [Host.Shutdown] and [Host.RequestShutdown] (libvirt's
// virDomainShutdown). As on libvirt, the answer is seen only in the domain:
// it turns Shutoff with reason Shutdown (and a lifecycle event says so) once
// the guest has powered off, or it keeps running.
//
// The zero value is the host's default: power off after
// Options.ShutdownDelay of running time. The guest agent's guest-shutdown
// command is not the power button: a guest that ignores ACPI still powers
// off when its agent is told to.
type ACPIBehaviour struct {
	// Delay is how long the guest runs after accepting the request before
	// it powers off (its shutdown scripts): 0 means Options.ShutdownDelay,
	// negative at once. Time spent paused does not count.
	Delay time.Duration
	// Ignore makes the guest drop every request, as one without an ACPI
	// handler, hung, or still in its boot loader does: the domain runs on
	// until it is destroyed.
	Ignore bool
}

// SetACPIBehaviour sets how the guest of the domain called name answers
// ACPI power-button requests from now on. It holds for the name whether a
// domain of that name exists yet or not, and for every later domain of the
// name (a virtkit VM's next VMI has the same domain name), until it is set
// again; the zero ACPIBehaviour restores the host's default. A request the
// guest has already accepted keeps its course: setting Ignore does not
// cancel a shutdown under way.
func (h *Host) SetACPIBehaviour(name string, b ACPIBehaviour) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b == (ACPIBehaviour{}) {
		delete(h.acpi, name)
		return
	}
	if h.acpi == nil {
		h.acpi = map[string]ACPIBehaviour{}
	}
	h.acpi[name] = b
}

// RequestShutdown presses the guest's ACPI power button and returns at
// once, as libvirt's virDomainShutdown does; the guest answers as its
// [ACPIBehaviour] says. It implements [hypervisor.ShutdownRequester].
func (h *Host) RequestShutdown(ctx context.Context, name string) error {
	_, err := h.pressPowerButton(ctx, name)
	return err
}

// Shutdown presses the guest's ACPI power button and waits until the
// domain has stopped or ctx ends (then the guest may still be running).
func (h *Host) Shutdown(ctx context.Context, name string) error {
	stopped, err := h.pressPowerButton(ctx, name)
	if err != nil {
		return err
	}
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		return hypervisor.WrapDomain("shutdown", name, ctx.Err())
	}
}

// pressPowerButton delivers an ACPI shutdown request to a running (or
// paused) domain and returns the channel closed when that instance stops.
func (h *Host) pressPowerButton(ctx context.Context, name string) (<-chan struct{}, error) {
	var stopped chan struct{}
	err := h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("shutdown", name)
		if err != nil {
			return err
		}
		if !d.state.IsActive() {
			return invalidState("shutdown", name, "domain is not running")
		}
		if d.incoming != nil || d.job != nil && d.job.phase >= phaseStopCopy {
			return invalidState("shutdown", name, "domain is migrating")
		}
		if b := h.acpi[name]; !b.Ignore {
			h.requestShutdown(d, now, orDefault(b.Delay, h.opts.ShutdownDelay))
		}
		stopped = d.stopped
		return nil
	})
	return stopped, err
}

// requestShutdown has the guest power off after running delay more; a
// paused guest goes on with it once it runs again. A shutdown already
// under way keeps its course.
func (h *Host) requestShutdown(d *domain, now time.Time, delay time.Duration) {
	if d.shutdownPending {
		return
	}
	if d.running() {
		h.pauseTimers(d, now)
	}
	d.shutdownPending = true
	d.shutdownLeft = delay
	if d.running() {
		h.startTimers(d, now)
	}
}
