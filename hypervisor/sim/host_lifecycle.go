package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// Start boots a defined domain.
func (h *Host) Start(ctx context.Context, name string, opts hypervisor.StartOptions) error {
	return h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("start", name)
		if err != nil {
			return err
		}
		if d.state.IsActive() {
			return invalidState("start", name, "domain is already running")
		}
		if err := h.attachHostDevices(d, d.config); err != nil {
			return err
		}
		h.activate(d, d.config, now)
		if opts.Paused {
			d.state, d.reason = hypervisor.StatePaused, hypervisor.ReasonUser
		} else {
			d.state, d.reason = hypervisor.StateRunning, hypervisor.ReasonBooted
			h.resumeGuest(d, now)
		}
		h.emitState(d, now)
		return nil
	})
}

// activate makes d a fresh running instance of sp (state set by the caller).
func (h *Host) activate(d *domain, sp *spec, now time.Time) {
	h.nextID++
	d.id = h.nextID
	d.gen++
	d.live = sp
	d.updated = now
	d.cpu, d.netBytes, d.blkBytes, d.faults = 0, 0, 0, 0
	d.throttle = 0
	d.bootLeft = h.opts.BootDelay
	d.agentUp = false
	d.agent, d.agentErr = nil, nil
	if sp.agent {
		d.agent, d.agentErr = h.newAgent(d, sp)
	}
	d.shutdownPending = false
	d.stopped = make(chan struct{})
	d.display = nil
	d.dirtyRate = hypervisor.Measured[uint64]{}
	d.trackers = nil
	d.setWorkloadModel(now)
}

// resumeGuest lets a guest that just began running continue its boot
// and a pending shutdown on the host's clock.
func (h *Host) resumeGuest(d *domain, now time.Time) {
	h.startTimers(d, now)
	if d.bootLeft == 0 {
		h.connectAgent(d, now)
	}
}

// haltGuest stops the guest's own progress (paused, or stopped).
func (h *Host) haltGuest(d *domain, now time.Time) {
	h.pauseTimers(d, now)
	h.disconnectAgent(d, now)
}

// startTimers schedules what the running guest will do by itself.
func (h *Host) startTimers(d *domain, now time.Time) {
	d.runSince = now
	gen := d.gen
	if d.bootLeft > 0 {
		d.bootTimer = h.clock.AfterFunc(d.bootLeft, func() { h.fire(d, gen, h.bootDone) })
	}
	if d.shutdownPending {
		d.shutdownTimer = h.clock.AfterFunc(d.shutdownLeft, func() { h.fire(d, gen, h.powerOff) })
	}
}

// pauseTimers stops the guest's scheduled progress, keeping what is left.
func (h *Host) pauseTimers(d *domain, now time.Time) {
	ran := now.Sub(d.runSince)
	if d.bootTimer != nil && d.bootTimer.Stop() {
		d.bootLeft = max(0, d.bootLeft-ran)
	}
	if d.shutdownTimer != nil && d.shutdownTimer.Stop() {
		d.shutdownLeft = max(0, d.shutdownLeft-ran)
	}
	d.bootTimer, d.shutdownTimer = nil, nil
}

// fire runs f for d at the clock's now if d is still the same instance.
func (h *Host) fire(d *domain, gen uint64, f func(d *domain, now time.Time)) {
	_ = h.do(context.Background(), func(now time.Time) error {
		if h.domains[d.name()] == d && d.gen == gen {
			f(d, now)
		}
		return nil
	})
}

func (h *Host) bootDone(d *domain, now time.Time) {
	d.bootLeft = 0
	d.bootTimer = nil
	if d.running() {
		h.connectAgent(d, now)
	}
}

func (h *Host) connectAgent(d *domain, now time.Time) {
	if d.agentUp || !d.spec().agent || !d.running() {
		return
	}
	d.agentUp = true
	h.emit(hypervisor.Event{Domain: d.name(), UUID: d.uuid(), Time: now, Kind: hypervisor.EventAgentLifecycle, Agent: hypervisor.ChannelConnected})
}

func (h *Host) disconnectAgent(d *domain, now time.Time) {
	if !d.agentUp {
		return
	}
	d.agentUp = false
	h.emit(hypervisor.Event{Domain: d.name(), UUID: d.uuid(), Time: now, Kind: hypervisor.EventAgentLifecycle, Agent: hypervisor.ChannelDisconnected})
}

func (h *Host) powerOff(d *domain, now time.Time) {
	d.shutdownTimer = nil
	h.stop(d, now, hypervisor.ReasonShutdown)
}

// stop ends the running instance of d.
func (h *Host) stop(d *domain, now time.Time, reason hypervisor.StateReason) {
	if d.running() {
		h.haltGuest(d, now)
	}
	d.bootTimer, d.shutdownTimer = nil, nil
	d.agentUp = false
	d.gen++
	d.state, d.reason = hypervisor.StateShutoff, reason
	d.shutdownPending = false
	d.trackers = nil
	d.throttle = 0
	d.display = nil
	if d.job != nil {
		d.job.fail(h, d, now, "domain stopped on the source: "+string(reason))
	}
	if d.incoming != nil {
		d.incoming.lost.Store(true)
		d.incoming = nil
	}
	close(d.stopped)
	h.emitState(d, now)
	if !d.persistent {
		h.remove(d.name())
	}
}

// Reboot restarts the guest inside the running domain: its agent
// disconnects and reconnects after the boot delay.
func (h *Host) Reboot(ctx context.Context, name string) error {
	return h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("reboot", name)
		if err != nil {
			return err
		}
		if !d.running() || d.incoming != nil || d.job != nil {
			return invalidState("reboot", name, fmt.Sprintf("domain is %s/%s", d.state, d.reason))
		}
		h.rebootGuest(d, now)
		return nil
	})
}

func (h *Host) rebootGuest(d *domain, now time.Time) {
	h.haltGuest(d, now)
	d.bootLeft = h.opts.BootDelay
	h.resumeGuest(d, now)
}

// Destroy stops the domain at once.
func (h *Host) Destroy(ctx context.Context, name string) error {
	return h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("destroy", name)
		if err != nil {
			return err
		}
		if !d.state.IsActive() {
			return invalidState("destroy", name, "domain is not running")
		}
		h.stop(d, now, hypervisor.ReasonDestroyed)
		return nil
	})
}

// Pause suspends the vCPUs. Pausing a paused domain does nothing (as
// with QEMU).
func (h *Host) Pause(ctx context.Context, name string) error {
	return h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("suspend", name)
		if err != nil {
			return err
		}
		switch {
		case !d.state.IsActive():
			return invalidState("suspend", name, "domain is not running")
		case d.state == hypervisor.StatePaused:
			return nil
		}
		h.haltGuest(d, now)
		d.state, d.reason = hypervisor.StatePaused, hypervisor.ReasonUser
		h.emitState(d, now)
		return nil
	})
}

// Resume continues a paused domain. Resuming a running domain does
// nothing (as with QEMU).
func (h *Host) Resume(ctx context.Context, name string) error {
	return h.do(ctx, func(now time.Time) error {
		d, err := h.lookup("resume", name)
		if err != nil {
			return err
		}
		switch {
		case !d.state.IsActive():
			return invalidState("resume", name, "domain is not running")
		case d.state == hypervisor.StateRunning:
			return nil
		case d.incoming != nil || d.job != nil && d.job.phase >= phaseStopCopy || d.reason == hypervisor.ReasonPostcopyFailed:
			return invalidState("resume", name, fmt.Sprintf("domain is paused for migration (%s)", d.reason))
		}
		d.state, d.reason = hypervisor.StateRunning, hypervisor.ReasonUnpaused
		h.resumeGuest(d, now)
		h.emitState(d, now)
		return nil
	})
}
