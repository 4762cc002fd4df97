package hypervisortest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

func testNotFound(e *env) {
	name := e.name("missing")
	remove(e.h, name)
	ctx := e.ctx()
	ops := map[string]func() error{
		"Undefine": func() error { return e.h.Undefine(ctx, name) },
		"Start":    func() error { return e.h.Start(ctx, name, hypervisor.StartOptions{}) },
		"Shutdown": func() error { return e.h.Shutdown(ctx, name) },
		"Reboot":   func() error { return e.h.Reboot(ctx, name) },
		"Destroy":  func() error { return e.h.Destroy(ctx, name) },
		"Pause":    func() error { return e.h.Pause(ctx, name) },
		"Resume":   func() error { return e.h.Resume(ctx, name) },
		"Info":     func() error { _, err := e.h.Info(ctx, name); return err },
		"XML":      func() error { _, err := e.h.XML(ctx, name); return err },
		"Stats":    func() error { _, err := e.h.Stats(ctx, name); return err },
	}
	if m, ok := e.h.(hypervisor.DirtyRateMeasurer); ok {
		ops["MeasureDirtyRate"] = func() error { _, err := m.MeasureDirtyRate(ctx, name, time.Second); return err }
	}
	if a, ok := e.h.(hypervisor.AgentCommander); ok {
		ops["AgentCommand"] = func() error { _, err := a.AgentCommand(ctx, name, `{"execute":"guest-ping"}`); return err }
	}
	if m, ok := e.h.(hypervisor.Migrator); ok && e.tg.Peer != nil {
		ops["StartMigration"] = func() error {
			_, err := m.StartMigration(ctx, name, hypervisor.MigrationParams{DestinationURI: e.tg.PeerURI})
			return err
		}
	}
	for op, call := range ops {
		e.t.Run(op, func(t *testing.T) {
			err := call()
			skipIfNotSupported(t, err, op)
			requireDomainError(t, err, hypervisor.ErrNotFound, name, op)
		})
	}
}

func testInvalidState(e *env) {
	name := e.name("")
	e.define(name)
	ctx := e.ctx()
	// The domain is shut off: everything that needs it running fails.
	for op, call := range map[string]func() error{
		"Destroy":  func() error { return e.h.Destroy(ctx, name) },
		"Pause":    func() error { return e.h.Pause(ctx, name) },
		"Resume":   func() error { return e.h.Resume(ctx, name) },
		"Shutdown": func() error { return e.h.Shutdown(ctx, name) },
	} {
		e.t.Run("ShutOff/"+op, func(t *testing.T) {
			requireDomainError(t, call(), hypervisor.ErrInvalidState, name, op)
		})
	}
	e.run("StartRunning", func(se *env) {
		require.NoError(se.t, se.h.Start(ctx, name, hypervisor.StartOptions{}))
		se.waitState(se.h, name, hypervisor.StateRunning, se.tg.BootTimeout)
		requireDomainError(se.t, se.h.Start(ctx, name, hypervisor.StartOptions{}), hypervisor.ErrInvalidState, name, "Start")
		se.requireState(name, hypervisor.StateRunning, hypervisor.ReasonBooted)
	})
}

func testContextCancelled(e *env) {
	name := e.name("")
	e.define(name)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for op, call := range map[string]func() error{
		"Host":   func() error { _, err := e.h.Host(ctx); return err },
		"Define": func() error { _, err := e.h.Define(ctx, e.tg.DomainXML(name)); return err },
		"Start":  func() error { return e.h.Start(ctx, name, hypervisor.StartOptions{}) },
		"Info":   func() error { _, err := e.h.Info(ctx, name); return err },
		"List":   func() error { _, err := e.h.List(ctx); return err },
		"Stats":  func() error { _, err := e.h.Stats(ctx, name); return err },
		"XML":    func() error { _, err := e.h.XML(ctx, name); return err },
		"Events": func() error { _, err := e.h.Events(ctx); return err },
	} {
		e.t.Run(op, func(t *testing.T) {
			require.ErrorIs(t, call(), context.Canceled, "%s with a cancelled context", op)
		})
	}
	// The cancelled Start did not start anything.
	e.requireState(name, hypervisor.StateShutoff, hypervisor.ReasonUnknown)

	e.run("ShutdownDeadline", func(se *env) {
		t := se.t
		// Shutdown waits for the guest; a deadline that passes first ends
		// the wait with the context's error.
		se.start(name)
		require.NoError(t, se.h.Pause(se.ctx(), name))
		// A paused guest cannot act on the ACPI request.
		dctx, dcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer dcancel()
		err := e.h.Shutdown(dctx, name)
		skipIfNotSupported(t, err, "graceful shutdown")
		if err == nil {
			// Some drivers (libvirt's test driver) power off at once.
			t.Skip("backend shut the paused domain off immediately")
		}
		require.ErrorIs(t, err, context.DeadlineExceeded)
		info := se.info(name)
		assert.True(t, info.State.IsActive(), "the domain is still there to Destroy after the deadline")
	})
}
