package hypervisortest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
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
