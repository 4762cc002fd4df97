package hypervisortest

import (
	"context"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

func testLifecycle(e *env) {
	name := e.name("")
	e.start(name)
	info := e.info(name)
	assert.True(e.t, info.State.IsActive())

	require.NoError(e.t, e.h.Pause(e.ctx(), name))
	e.requireState(name, hypervisor.StatePaused, hypervisor.ReasonUser)

	require.NoError(e.t, e.h.Resume(e.ctx(), name))
	e.requireState(name, hypervisor.StateRunning, hypervisor.ReasonUnpaused)

	require.NoError(e.t, e.h.Destroy(e.ctx(), name))
	info = e.requireState(name, hypervisor.StateShutoff, hypervisor.ReasonDestroyed)
	assert.True(e.t, info.Persistent, "a destroyed persistent domain stays defined")

	// A stopped domain starts again.
	require.NoError(e.t, e.h.Start(e.ctx(), name, hypervisor.StartOptions{}))
	e.waitState(e.h, name, hypervisor.StateRunning, e.tg.BootTimeout)
	require.NoError(e.t, e.h.Destroy(e.ctx(), name))
	e.requireState(name, hypervisor.StateShutoff, hypervisor.ReasonDestroyed)
}

func testStartPaused(e *env) {
	name := e.name("")
	e.define(name)
	err := e.h.Start(e.ctx(), name, hypervisor.StartOptions{Paused: true})
	skipIfNotSupported(e.t, err, "start paused")
	require.NoError(e.t, err)
	e.requireState(name, hypervisor.StatePaused, hypervisor.ReasonUser)
	require.NoError(e.t, e.h.Resume(e.ctx(), name))
	e.requireState(name, hypervisor.StateRunning, hypervisor.ReasonUnpaused)
}

func testShutdown(e *env) {
	name := e.name("")
	e.start(name)
	ctx, cancel := context.WithTimeout(context.Background(), e.tg.BootTimeout+e.tg.AgentTimeout)
	defer cancel()
	err := e.h.Shutdown(ctx, name)
	skipIfNotSupported(e.t, err, "graceful shutdown")
	require.NoError(e.t, err, "graceful shutdown within %v", e.tg.BootTimeout+e.tg.AgentTimeout)
	e.requireState(name, hypervisor.StateShutoff, hypervisor.ReasonShutdown)

	requireDomainError(e.t, e.h.Shutdown(e.ctx(), name), hypervisor.ErrInvalidState, name, "Shutdown of a shut-off domain")
}

// testRequestShutdown: the request returns without waiting, the guest
// powers off by itself and a lifecycle event reports it.
func testRequestShutdown(e *env) {
	sr, ok := e.h.(hypervisor.ShutdownRequester)
	if !ok {
		e.t.Skip("backend has no ShutdownRequester")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := e.h.Events(ctx)
	require.NoError(e.t, err)
	name := e.name("")
	e.start(name)
	require.NoError(e.t, sr.RequestShutdown(e.ctx(), name))
	// A real guest that is still booting has nothing listening for the
	// power button yet and drops the press: press again every 5 s, as the
	// node agent (and KubeVirt's virt-handler) does, until it is off.
	pressed := make(chan struct{})
	go func() {
		defer close(pressed)
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = sr.RequestShutdown(ctx, name) // off already: ErrInvalidState
			}
		}
	}()
	e.awaitEvent(events, name, hypervisor.StateShutoff, hypervisor.ReasonShutdown)
	cancel()
	<-pressed
	e.requireState(name, hypervisor.StateShutoff, hypervisor.ReasonShutdown)

	requireDomainError(e.t, sr.RequestShutdown(e.ctx(), name), hypervisor.ErrInvalidState, name, "RequestShutdown of a shut-off domain")
	requireDomainError(e.t, sr.RequestShutdown(e.ctx(), e.name("missing")), hypervisor.ErrNotFound, e.name("missing"), "RequestShutdown of an unknown domain")
}

func testReboot(e *env) {
	name := e.name("")
	e.start(name)
	err := e.h.Reboot(e.ctx(), name)
	skipIfNotSupported(e.t, err, "reboot")
	require.NoError(e.t, err)
	// The guest reboots inside the same domain: it is active throughout
	// and ends up running again.
	e.waitState(e.h, name, hypervisor.StateRunning, e.tg.BootTimeout)
	require.NoError(e.t, e.h.Destroy(e.ctx(), name))
	requireDomainError(e.t, e.h.Reboot(e.ctx(), name), hypervisor.ErrInvalidState, name, "Reboot of a shut-off domain")
}
