package hypervisortest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

// Target is one backend under test, built fresh for every subtest.
type Target struct {
	// Hypervisor is the host the suite drives.
	Hypervisor hypervisor.Hypervisor
	// DomainXML returns a bootable libvirt domain definition named name for
	// this backend, without a UUID (the backend assigns one).
	DomainXML func(name string) string
	// BootTimeout bounds how long a started guest takes to report Running
	// (and to power off after an ACPI shutdown); AgentTimeout how long it
	// takes until its guest agent answers. Zero means 30 s and 60 s.
	BootTimeout, AgentTimeout time.Duration

	// Peer is a second host for the migration subtests; nil skips them.
	// PeerURI is the destination URI that reaches Peer from Hypervisor,
	// MigrateURI the data connection (empty lets the backend choose).
	Peer       hypervisor.Hypervisor
	PeerURI    string
	MigrateURI string

	// DirtyMemory, if set, makes the running guest name dirty memory
	// until it stops; nil skips the dirtying variants.
	DirtyMemory func(t *testing.T, name string)
}

func (tg Target) withDefaults() Target {
	if tg.BootTimeout <= 0 {
		tg.BootTimeout = 30 * time.Second
	}
	if tg.AgentTimeout <= 0 {
		tg.AgentTimeout = 60 * time.Second
	}
	return tg
}

// Run runs the conformance suite. newTarget is called once per subtest
// with that subtest's t, so a backend may build a fresh host each time and
// register its teardown with t.Cleanup.
func Run(t *testing.T, newTarget func(t *testing.T) Target) {
	target := func(t *testing.T) *env {
		t.Helper()
		tg := newTarget(t).withDefaults()
		require.NotNil(t, tg.Hypervisor, "Target.Hypervisor")
		require.NotNil(t, tg.DomainXML, "Target.DomainXML")
		return &env{t: t, tg: tg, h: tg.Hypervisor}
	}
	for _, tc := range []struct {
		name string
		run  func(*env)
	}{
		{"Host", testHost},
		{"Define", testDefine},
		{"DefineInvalidXML", testDefineInvalidXML},
		{"Redefine", testRedefine},
		{"Undefine", testUndefine},
		{"UndefineRunning", testUndefineRunning},
		{"Lifecycle", testLifecycle},
		{"StartPaused", testStartPaused},
		{"Shutdown", testShutdown},
		{"RequestShutdown", testRequestShutdown},
		{"Reboot", testReboot},
		{"InfoListXML", testInfoListXML},
		{"Stats", testStats},
		{"Events", testEvents},
		{"NotFound", testNotFound},
		{"InvalidState", testInvalidState},
		{"ContextCancelled", testContextCancelled},
		{"AgentCommand", testAgentCommand},
		{"DirtyRate", testDirtyRate},
		{"Migration", testMigration},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(target(t)) })
	}
}

// env is one subtest's view of its target.
type env struct {
	t  *testing.T
	tg Target
	h  hypervisor.Hypervisor
}

// run runs a nested subtest against the same target.
func (e *env) run(name string, f func(se *env)) {
	e.t.Run(name, func(t *testing.T) { f(&env{t: t, tg: e.tg, h: e.h}) })
}

// ctx bounds one call; the suite never waits longer than the target's
// boot and agent timeouts together.
func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), e.tg.BootTimeout+e.tg.AgentTimeout)
	e.t.Cleanup(cancel)
	return ctx
}

var nameSanitizer = regexp.MustCompile(`[^a-zA-Z0-9]+`)

// name returns a domain name unique to the subtest, so leftovers of one
// subtest never collide with another.
func (e *env) name(suffix string) string {
	parts := strings.Split(e.t.Name(), "/")
	base := strings.Join(parts[max(0, len(parts)-2):], "-")
	n := "vkt-" + strings.Trim(nameSanitizer.ReplaceAllString(base, "-"), "-")
	if len(n) > 50 {
		n = n[:50]
	}
	if suffix != "" {
		n += "-" + suffix
	}
	return strings.ToLower(n)
}

// remove destroys and undefines name on h, ignoring every error: it clears
// leftovers of earlier runs and is the cleanup of every subtest.
func remove(h hypervisor.Hypervisor, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = h.Destroy(ctx, name)
	_ = h.Undefine(ctx, name)
}

// define defines a fresh domain and removes it when the subtest ends.
func (e *env) define(name string) hypervisor.DomainID {
	e.t.Helper()
	remove(e.h, name)
	e.t.Cleanup(func() { remove(e.h, name) })
	if e.tg.Peer != nil {
		remove(e.tg.Peer, name)
		e.t.Cleanup(func() { remove(e.tg.Peer, name) })
	}
	id, err := e.h.Define(e.ctx(), e.tg.DomainXML(name))
	require.NoError(e.t, err, "Define %s", name)
	require.Equal(e.t, name, id.Name, "Define returns the domain's name")
	require.NotEmpty(e.t, id.UUID, "Define returns the UUID the backend recorded")
	return id
}

// start defines and starts a domain and waits until it is Running.
func (e *env) start(name string) hypervisor.DomainID {
	e.t.Helper()
	id := e.define(name)
	require.NoError(e.t, e.h.Start(e.ctx(), name, hypervisor.StartOptions{}), "Start %s", name)
	info := e.waitState(e.h, name, hypervisor.StateRunning, e.tg.BootTimeout)
	assert.Equal(e.t, hypervisor.ReasonBooted, info.Reason, "a started domain runs with reason Booted")
	return id
}

// waitFor polls cond until it reports done or timeout passes.
func (e *env) waitFor(timeout time.Duration, what string, cond func() (bool, error)) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	delay := 5 * time.Millisecond
	var lastErr error
	for {
		done, err := cond()
		if done {
			return
		}
		lastErr = err
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out after %v waiting for %s (last error: %v)", timeout, what, lastErr)
		}
		time.Sleep(delay)
		delay = min(2*delay, 200*time.Millisecond)
	}
}

func (e *env) waitState(h hypervisor.Hypervisor, name string, want hypervisor.DomainState, timeout time.Duration) hypervisor.DomainInfo {
	e.t.Helper()
	var info hypervisor.DomainInfo
	e.waitFor(timeout, fmt.Sprintf("domain %s to be %s", name, want), func() (bool, error) {
		var err error
		info, err = h.Info(context.Background(), name)
		if err != nil {
			return false, err
		}
		return info.State == want, fmt.Errorf("state %s/%s", info.State, info.Reason)
	})
	return info
}

func (e *env) info(name string) hypervisor.DomainInfo {
	e.t.Helper()
	info, err := e.h.Info(e.ctx(), name)
	require.NoError(e.t, err, "Info %s", name)
	return info
}

func (e *env) requireState(name string, state hypervisor.DomainState, reason hypervisor.StateReason) hypervisor.DomainInfo {
	e.t.Helper()
	info := e.info(name)
	require.Equal(e.t, state, info.State, "state of %s (reason %s)", name, info.Reason)
	require.Equal(e.t, reason, info.Reason, "reason of %s in state %s", name, info.State)
	return info
}

// requireDomainError checks err matches sentinel and is a *DomainError
// naming the domain.
func requireDomainError(t *testing.T, err error, sentinel error, name, op string) {
	t.Helper()
	require.Error(t, err, "%s %s: want an error matching %v", op, name, sentinel)
	require.ErrorIs(t, err, sentinel, "%s %s", op, name)
	var de *hypervisor.DomainError
	require.ErrorAs(t, err, &de, "%s %s: errors about a domain are *hypervisor.DomainError", op, name)
	require.Equal(t, name, de.Domain, "%s: DomainError names the domain", op)
	require.NotEmpty(t, de.Op, "%s: DomainError names the operation", op)
}

func skipIfNotSupported(t *testing.T, err error, feature string) {
	t.Helper()
	if errors.Is(err, hypervisor.ErrNotSupported) {
		t.Skipf("backend does not support %s: %v", feature, err)
	}
}

func testHost(e *env) {
	info, err := e.h.Host(e.ctx())
	require.NoError(e.t, err)
	assert.NotEmpty(e.t, info.Hostname, "Hostname")
	assert.NotEmpty(e.t, info.Model, "Model")
	assert.Positive(e.t, info.CPUs, "CPUs")
	assert.Positive(e.t, info.MemoryBytes, "MemoryBytes")
}

func testDefine(e *env) {
	name := e.name("")
	id := e.define(name)
	info := e.requireState(name, hypervisor.StateShutoff, hypervisor.ReasonUnknown)
	assert.Equal(e.t, id, info.DomainID, "Info identity equals what Define returned")
	assert.True(e.t, info.Persistent, "a defined domain is persistent")
	assert.Positive(e.t, info.VCPUs, "VCPUs")
	assert.Positive(e.t, info.MaxMemoryBytes, "MaxMemoryBytes")
	assert.False(e.t, info.CPUTime.Valid && info.CPUTime.Value > 0, "a never-started domain used no CPU time")

	// Defining the same XML again is a redefinition, not a second domain.
	id2, err := e.h.Define(e.ctx(), e.tg.DomainXML(name))
	if err == nil {
		assert.Equal(e.t, id, id2, "redefinition without a UUID keeps the identity")
	} else {
		// libvirt generates a UUID for XML without one, which then
		// collides with the existing domain's.
		require.ErrorIs(e.t, err, hypervisor.ErrExists)
	}
	list, err := e.h.List(e.ctx())
	require.NoError(e.t, err)
	assert.Equal(e.t, 1, countNamed(list, name), "List holds the domain once")
}

func countNamed(list []hypervisor.DomainInfo, name string) int {
	n := 0
	for _, d := range list {
		if d.Name == name {
			n++
		}
	}
	return n
}

func testDefineInvalidXML(e *env) {
	for _, tc := range []struct{ name, xml string }{
		{"NotXML", "this is not xml"},
		{"Truncated", "<domain type='qemu'><name>x"},
		{"NoName", "<domain type='qemu'><memory unit='KiB'>131072</memory></domain>"},
	} {
		e.run(tc.name, func(se *env) {
			_, err := se.h.Define(se.ctx(), tc.xml)
			require.ErrorIs(se.t, err, hypervisor.ErrInvalidArgument)
		})
	}
}

var (
	memoryRE  = regexp.MustCompile(`(<memory[^>]*>)(\d+)(</memory>)`)
	currentRE = regexp.MustCompile(`(<currentMemory[^>]*>)(\d+)(</currentMemory>)`)
	uuidRE    = regexp.MustCompile(`<uuid>[^<]*</uuid>`)
)

func testRedefine(e *env) {
	name := e.name("")
	id := e.define(name)
	before := e.info(name)
	xml, err := e.h.XML(e.ctx(), name)
	require.NoError(e.t, err)
	require.Regexp(e.t, memoryRE, xml, "XML carries <memory>")
	require.Contains(e.t, xml, id.UUID, "XML carries the UUID")

	// Same name and UUID, more memory: the definition is replaced.
	grow := func(s string, re *regexp.Regexp) string {
		return re.ReplaceAllStringFunc(s, func(m string) string {
			parts := re.FindStringSubmatch(m)
			n, _ := strconv.ParseUint(parts[2], 10, 64)
			return parts[1] + strconv.FormatUint(n*2, 10) + parts[3]
		})
	}
	bigger := grow(grow(xml, memoryRE), currentRE)
	id2, err := e.h.Define(e.ctx(), bigger)
	require.NoError(e.t, err, "redefine with the same name and UUID")
	require.Equal(e.t, id, id2)
	after := e.info(name)
	assert.Equal(e.t, 2*before.MaxMemoryBytes, after.MaxMemoryBytes, "redefinition took effect")

	// Same name, different UUID: a different domain, refused.
	other := uuidRE.ReplaceAllString(xml, "<uuid>6a1c2f9e-0000-4000-8000-00000000beef</uuid>")
	_, err = e.h.Define(e.ctx(), other)
	require.ErrorIs(e.t, err, hypervisor.ErrExists, "same name with another UUID")
	assert.Equal(e.t, id, e.info(name).DomainID, "the refused definition changed nothing")
}

func testUndefine(e *env) {
	name := e.name("")
	e.define(name)
	require.NoError(e.t, e.h.Undefine(e.ctx(), name))
	_, err := e.h.Info(e.ctx(), name)
	requireDomainError(e.t, err, hypervisor.ErrNotFound, name, "Info after Undefine")
	list, err := e.h.List(e.ctx())
	require.NoError(e.t, err)
	assert.Zero(e.t, countNamed(list, name), "List no longer holds the domain")
	requireDomainError(e.t, e.h.Undefine(e.ctx(), name), hypervisor.ErrNotFound, name, "Undefine twice")
}

func testUndefineRunning(e *env) {
	name := e.name("")
	e.start(name)
	require.NoError(e.t, e.h.Undefine(e.ctx(), name))
	info := e.info(name)
	assert.Equal(e.t, hypervisor.StateRunning, info.State, "an undefined running domain keeps running")
	assert.False(e.t, info.Persistent, "and becomes transient")
	require.NoError(e.t, e.h.Destroy(e.ctx(), name))
	_, err := e.h.Info(e.ctx(), name)
	requireDomainError(e.t, err, hypervisor.ErrNotFound, name, "Info of a destroyed transient domain")
}

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

func testInfoListXML(e *env) {
	running, stopped := e.name("run"), e.name("off")
	runID := e.start(running)
	offID := e.define(stopped)

	list, err := e.h.List(e.ctx())
	require.NoError(e.t, err)
	byName := map[string]hypervisor.DomainInfo{}
	for _, d := range list {
		byName[d.Name] = d
	}
	require.Contains(e.t, byName, running, "List holds running domains")
	require.Contains(e.t, byName, stopped, "List holds defined, stopped domains")
	assert.Equal(e.t, runID.UUID, byName[running].UUID)
	assert.Equal(e.t, offID.UUID, byName[stopped].UUID)
	assert.Equal(e.t, hypervisor.StateRunning, byName[running].State)
	assert.Equal(e.t, hypervisor.StateShutoff, byName[stopped].State)

	info := e.info(running)
	assert.Equal(e.t, runID, info.DomainID)
	assert.Positive(e.t, info.VCPUs)
	assert.Positive(e.t, info.MemoryBytes, "MemoryBytes (balloon) of a running domain")
	assert.LessOrEqual(e.t, info.MemoryBytes, info.MaxMemoryBytes)

	for _, id := range []hypervisor.DomainID{runID, offID} {
		xml, err := e.h.XML(e.ctx(), id.Name)
		require.NoError(e.t, err)
		assert.Contains(e.t, xml, "<name>"+id.Name+"</name>")
		assert.Contains(e.t, xml, id.UUID)
	}
}

func testStats(e *env) {
	name := e.name("")
	e.define(name)
	off, err := e.h.Stats(e.ctx(), name)
	require.NoError(e.t, err, "Stats of a shut-off domain")
	assert.Equal(e.t, name, off.Domain)
	assert.Equal(e.t, hypervisor.StateShutoff, off.State)
	assert.False(e.t, off.DirtyRate.Valid, "no dirty-rate calculation ran: DirtyRate stays not measured")

	require.NoError(e.t, e.h.Start(e.ctx(), name, hypervisor.StartOptions{}))
	e.waitState(e.h, name, hypervisor.StateRunning, e.tg.BootTimeout)
	first, err := e.h.Stats(e.ctx(), name)
	require.NoError(e.t, err)
	assert.Equal(e.t, hypervisor.StateRunning, first.State)
	assert.False(e.t, first.Collected.IsZero(), "Collected is set")
	assert.False(e.t, first.DirtyRate.Valid, "no dirty-rate calculation ran: DirtyRate stays not measured")
	if !first.CPUTime.Valid {
		e.t.Skip("backend does not measure CPU time")
	}
	e.waitFor(e.tg.BootTimeout, "CPU time to grow while running", func() (bool, error) {
		s, err := e.h.Stats(context.Background(), name)
		if err != nil {
			return false, err
		}
		return s.CPUTime.Valid && s.CPUTime.Value > first.CPUTime.Value, nil
	})
	for _, v := range first.VCPUs {
		assert.GreaterOrEqual(e.t, v.ID, 0)
	}
	if cur, ok := first.Memory.BalloonCurrent.Get(); ok {
		assert.Positive(e.t, cur, "balloon current of a running domain")
	}
}

func testEvents(e *env) {
	ctx, cancel := context.WithCancel(context.Background())
	events, err := e.h.Events(ctx)
	require.NoError(e.t, err)
	name := e.name("")
	e.start(name)
	e.awaitEvent(events, name, hypervisor.StateRunning, hypervisor.ReasonBooted)
	require.NoError(e.t, e.h.Pause(e.ctx(), name))
	e.awaitEvent(events, name, hypervisor.StatePaused, hypervisor.ReasonUser)
	require.NoError(e.t, e.h.Resume(e.ctx(), name))
	e.awaitEvent(events, name, hypervisor.StateRunning, hypervisor.ReasonUnpaused)
	require.NoError(e.t, e.h.Destroy(e.ctx(), name))
	e.awaitEvent(events, name, hypervisor.StateShutoff, hypervisor.ReasonDestroyed)

	cancel()
	timeout := time.After(e.tg.BootTimeout)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-timeout:
			e.t.Fatal("the events channel was not closed after its context ended")
		}
	}
}

func (e *env) awaitEvent(events <-chan hypervisor.Event, name string, state hypervisor.DomainState, reason hypervisor.StateReason) {
	e.t.Helper()
	timeout := time.After(e.tg.BootTimeout)
	var seen []string
	for {
		select {
		case ev, ok := <-events:
			require.True(e.t, ok, "events channel closed early")
			if ev.Domain != name || ev.Kind != hypervisor.EventLifecycle {
				continue
			}
			if ev.State == state && ev.Reason == reason {
				assert.NotEmpty(e.t, ev.UUID, "lifecycle event carries the UUID")
				assert.False(e.t, ev.Time.IsZero(), "event carries its time")
				return
			}
			seen = append(seen, fmt.Sprintf("%s/%s", ev.State, ev.Reason))
		case <-timeout:
			e.t.Fatalf("no lifecycle event %s/%s for %s within %v (saw %v)", state, reason, name, e.tg.BootTimeout, seen)
		}
	}
}

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

func agentCommander(e *env) hypervisor.AgentCommander {
	a, ok := e.h.(hypervisor.AgentCommander)
	if !ok {
		e.t.Skip("backend does not implement hypervisor.AgentCommander")
	}
	return a
}

// waitAgentSettled waits until the guest agent answers, when the backend
// has one: by then the guest has finished booting. Backends without agent
// commands return at once.
func (e *env) waitAgentSettled(name string) {
	e.t.Helper()
	a, ok := e.h.(hypervisor.AgentCommander)
	if !ok {
		return
	}
	e.waitFor(e.tg.AgentTimeout, "the guest agent to answer guest-ping", func() (bool, error) {
		_, err := a.AgentCommand(context.Background(), name, `{"execute":"guest-ping"}`)
		if errors.Is(err, hypervisor.ErrNotSupported) {
			return true, nil
		}
		return err == nil, err
	})
}

// agentCall retries while the agent is not connected yet.
func (e *env) agentCall(a hypervisor.AgentCommander, name, cmd string) string {
	e.t.Helper()
	var reply string
	e.waitFor(e.tg.AgentTimeout, "the guest agent to answer "+cmd, func() (bool, error) {
		var err error
		reply, err = a.AgentCommand(context.Background(), name, cmd)
		skipIfNotSupported(e.t, err, "guest-agent commands")
		if err != nil {
			require.ErrorIs(e.t, err, hypervisor.ErrAgentUnavailable, "before the agent connects only ErrAgentUnavailable is expected")
			return false, err
		}
		return true, nil
	})
	return reply
}

func testAgentCommand(e *env) {
	a := agentCommander(e)
	name := e.name("")
	e.define(name)
	_, err := a.AgentCommand(e.ctx(), name, `{"execute":"guest-ping"}`)
	skipIfNotSupported(e.t, err, "guest-agent commands")
	require.Error(e.t, err, "agent command to a shut-off domain")
	assert.True(e.t, errors.Is(err, hypervisor.ErrInvalidState) || errors.Is(err, hypervisor.ErrAgentUnavailable),
		"agent command to a shut-off domain: %v", err)

	require.NoError(e.t, e.h.Start(e.ctx(), name, hypervisor.StartOptions{}))
	e.waitState(e.h, name, hypervisor.StateRunning, e.tg.BootTimeout)

	ping := e.agentCall(a, name, `{"execute":"guest-ping"}`)
	assert.JSONEq(e.t, `{"return":{}}`, ping)
	infoReply := e.agentCall(a, name, `{"execute":"guest-info"}`)
	assert.Contains(e.t, infoReply, `"version"`)
	assert.Contains(e.t, infoReply, `"supported_commands"`)
	assert.Contains(e.t, infoReply, `"guest-ping"`)

	info := e.info(name)
	assert.NotEqual(e.t, hypervisor.ChannelDisconnected, info.Agent, "Info.Agent once the agent answers")

	bad, err := a.AgentCommand(e.ctx(), name, `{"execute":"no-such-command-virtkit"}`)
	if err == nil {
		assert.Contains(e.t, bad, `"error"`, "an unknown command gets a QGA error reply")
	}
}

func dirtyRateMeasurer(e *env) hypervisor.DirtyRateMeasurer {
	m, ok := e.h.(hypervisor.DirtyRateMeasurer)
	if !ok {
		e.t.Skip("backend does not implement hypervisor.DirtyRateMeasurer")
	}
	return m
}

func testDirtyRate(e *env) {
	m := dirtyRateMeasurer(e)
	name := e.name("")
	e.define(name)
	_, err := m.MeasureDirtyRate(e.ctx(), name, time.Second)
	skipIfNotSupported(e.t, err, "dirty-rate measurement")
	requireDomainError(e.t, err, hypervisor.ErrInvalidState, name, "MeasureDirtyRate of a shut-off domain")

	require.NoError(e.t, e.h.Start(e.ctx(), name, hypervisor.StartOptions{}))
	e.waitState(e.h, name, hypervisor.StateRunning, e.tg.BootTimeout)
	idle, err := m.MeasureDirtyRate(e.ctx(), name, time.Second)
	skipIfNotSupported(e.t, err, "dirty-rate measurement")
	require.NoError(e.t, err)
	assert.Positive(e.t, idle.Period, "Period")
	assert.NotEmpty(e.t, idle.Method, "Method")
	assert.False(e.t, idle.MeasuredAt.IsZero(), "MeasuredAt")

	stats, err := e.h.Stats(e.ctx(), name)
	require.NoError(e.t, err)
	require.True(e.t, stats.DirtyRate.Valid, "after a calculation Stats.DirtyRate is measured")

	if e.tg.DirtyMemory == nil {
		return
	}
	e.run("Dirtying", func(se *env) {
		// A guest that is still booting writes memory fast; compare
		// against a reading taken once it has settled (its agent answers).
		se.waitAgentSettled(name)
		settled, err := m.MeasureDirtyRate(se.ctx(), name, time.Second)
		require.NoError(se.t, err)
		se.tg.DirtyMemory(se.t, name)
		busy, err := m.MeasureDirtyRate(se.ctx(), name, time.Second)
		require.NoError(se.t, err)
		assert.Greater(se.t, busy.BytesPerSecond, settled.BytesPerSecond, "a dirtying guest measures above the settled idle one")
	})
}

func migrator(e *env) hypervisor.Migrator {
	if e.tg.Peer == nil {
		e.t.Skip("no Peer host: migration subtests need a second host")
	}
	m, ok := e.h.(hypervisor.Migrator)
	if !ok {
		e.t.Skip("backend does not implement hypervisor.Migrator")
	}
	return m
}

func testMigration(e *env) {
	for _, tc := range []struct {
		name string
		run  func(*env, hypervisor.Migrator)
	}{
		{"Migrate", func(e *env, m hypervisor.Migrator) { migrateOnce(e, m, false) }},
		{"MigrateDirtying", func(e *env, m hypervisor.Migrator) {
			if e.tg.DirtyMemory == nil {
				e.t.Skip("Target.DirtyMemory is nil")
			}
			migrateOnce(e, m, true)
		}},
		{"AbortSlowed", testMigrationAbort},
		{"Errors", testMigrationErrors},
	} {
		e.run(tc.name, func(se *env) { tc.run(se, migrator(se)) })
	}
}

func (e *env) migrationParams() hypervisor.MigrationParams {
	return hypervisor.MigrationParams{DestinationURI: e.tg.PeerURI, MigrateURI: e.tg.MigrateURI, Persist: true}
}

func migrateOnce(e *env, m hypervisor.Migrator, dirty bool) {
	name := e.name("")
	id := e.start(name)
	if dirty {
		e.tg.DirtyMemory(e.t, name)
	}
	job, err := m.StartMigration(e.ctx(), name, e.migrationParams())
	skipIfNotSupported(e.t, err, "migration")
	require.NoError(e.t, err)

	// The job may not have begun yet or be over already on a fast link;
	// stats describe the job wherever it is.
	st, err := job.Stats(e.ctx())
	require.NoError(e.t, err)
	assert.Contains(e.t, []hypervisor.JobType{hypervisor.JobNone, hypervisor.JobUnbounded, hypervisor.JobCompleted}, st.Type)
	if st.Type == hypervisor.JobUnbounded {
		assert.True(e.t, st.DataTotal.Valid, "DataTotal of a running job")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*(e.tg.BootTimeout+e.tg.AgentTimeout))
	defer cancel()
	res, err := job.Result(ctx)
	require.NoError(e.t, err, "migration result")
	select {
	case <-job.Done():
	default:
		e.t.Fatal("Done is not closed after Result returned")
	}
	assert.True(e.t, res.Succeeded)
	assert.False(e.t, res.Aborted)
	assert.Equal(e.t, hypervisor.ModePreCopy, res.Mode)
	assert.False(e.t, res.Ended.Before(res.Started), "Ended not before Started")
	assert.Equal(e.t, hypervisor.JobCompleted, res.Stats.Type)

	peerInfo, err := e.tg.Peer.Info(e.ctx(), name)
	require.NoError(e.t, err, "the domain exists on the peer")
	assert.Equal(e.t, hypervisor.StateRunning, peerInfo.State, "the domain runs on the peer")
	assert.Equal(e.t, hypervisor.ReasonMigrated, peerInfo.Reason, "and arrived by migration")
	assert.Equal(e.t, id.UUID, peerInfo.UUID, "with the same UUID")
	assert.True(e.t, peerInfo.Persistent, "Persist defines it on the peer")

	src, err := e.h.Info(e.ctx(), name)
	if err != nil {
		requireDomainError(e.t, err, hypervisor.ErrNotFound, name, "Info on the source after migration")
	} else {
		assert.Equal(e.t, hypervisor.StateShutoff, src.State, "the source copy no longer runs")
		assert.Equal(e.t, hypervisor.ReasonMigrated, src.Reason, "it left by migration")
	}
}

func testMigrationAbort(e *env, m hypervisor.Migrator) {
	name := e.name("")
	e.start(name)
	const slow = 1 << 20 // 1 MiB/s: no guest finishes while the test watches
	params := e.migrationParams()
	params.Bandwidth = slow
	job, err := m.StartMigration(e.ctx(), name, params)
	skipIfNotSupported(e.t, err, "migration")
	require.NoError(e.t, err)
	require.NoError(e.t, job.SetMaxSpeed(e.ctx(), slow), "SetMaxSpeed")
	err = job.SetMaxDowntime(e.ctx(), 50*time.Millisecond)
	if !errors.Is(err, hypervisor.ErrNotSupported) {
		require.NoError(e.t, err, "SetMaxDowntime")
	}

	var st hypervisor.JobStats
	e.waitFor(e.tg.BootTimeout, "the slowed job to move data", func() (bool, error) {
		var err error
		st, err = job.Stats(context.Background())
		if err != nil {
			return false, err
		}
		return st.Type == hypervisor.JobUnbounded && st.DataProcessed.Or(0) > 0, fmt.Errorf("job %s processed %v", st.Type, st.DataProcessed)
	})
	assert.Equal(e.t, hypervisor.ModePreCopy, st.Mode)
	assert.True(e.t, st.DataTotal.Valid, "DataTotal")
	assert.True(e.t, st.DataRemaining.Valid, "DataRemaining")
	assert.Positive(e.t, st.DataRemaining.Value, "a slowed job has data remaining")
	assert.True(e.t, st.Elapsed.Valid, "Elapsed")

	require.NoError(e.t, job.Abort(e.ctx()))
	ctx, cancel := context.WithTimeout(context.Background(), e.tg.BootTimeout)
	defer cancel()
	res, err := job.Result(ctx)
	require.ErrorIs(e.t, err, hypervisor.ErrMigrationAborted)
	assert.True(e.t, res.Aborted)
	assert.False(e.t, res.Succeeded)

	info := e.info(name)
	assert.Equal(e.t, hypervisor.StateRunning, info.State, "an aborted migration leaves the source running")
	peerInfo, err := e.tg.Peer.Info(e.ctx(), name)
	if err == nil {
		assert.False(e.t, peerInfo.State.IsActive(), "nothing runs on the peer after an abort")
	} else {
		require.ErrorIs(e.t, err, hypervisor.ErrNotFound)
	}
	require.ErrorIs(e.t, job.Abort(e.ctx()), hypervisor.ErrNoJob, "Abort of an ended job")
}

func testMigrationErrors(e *env, m hypervisor.Migrator) {
	name := e.name("")
	e.define(name)
	_, err := m.StartMigration(e.ctx(), name, e.migrationParams())
	skipIfNotSupported(e.t, err, "migration")
	requireDomainError(e.t, err, hypervisor.ErrInvalidState, name, "migrating a shut-off domain")
}
