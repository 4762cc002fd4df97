package node_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	utilclock "k8s.io/utils/clock"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

var errCut = errors.New("store unreachable (cut by the test)")

// cuttableStore fails the calls the test chooses: writes only (the agent
// can read but not renew), or everything.
type cuttableStore struct {
	store.Store
	writes, reads atomic.Bool
}

func (s *cuttableStore) cutAll(on bool) { s.writes.Store(on); s.reads.Store(on) }

func (s *cuttableStore) Get(ctx context.Context, key store.Key, obj virtkit.Object) error {
	if s.reads.Load() {
		return errCut
	}
	return s.Store.Get(ctx, key, obj)
}

func (s *cuttableStore) List(ctx context.Context, list virtkit.ObjectList, opts store.ListOptions) error {
	if s.reads.Load() {
		return errCut
	}
	return s.Store.List(ctx, list, opts)
}

func (s *cuttableStore) Create(ctx context.Context, obj virtkit.Object) error {
	if s.writes.Load() {
		return errCut
	}
	return s.Store.Create(ctx, obj)
}

func (s *cuttableStore) Update(ctx context.Context, obj virtkit.Object) error {
	if s.writes.Load() {
		return errCut
	}
	return s.Store.Update(ctx, obj)
}

func (s *cuttableStore) UpdateStatus(ctx context.Context, obj virtkit.Object) error {
	if s.writes.Load() {
		return errCut
	}
	return s.Store.UpdateStatus(ctx, obj)
}

func (s *cuttableStore) Delete(ctx context.Context, obj virtkit.Object, opts store.DeleteOptions) error {
	if s.writes.Load() {
		return errCut
	}
	return s.Store.Delete(ctx, obj, opts)
}

func startAgent(t *testing.T, opts node.Options) (*node.Agent, func()) {
	t.Helper()
	a, err := node.New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	t.Cleanup(stop)
	// Registered means the first heartbeat is written, not only the Node
	// created: registration creates the Node and then writes its status,
	// and a test that cuts the store between the two would leave the agent
	// retrying its registration, never started and so never fenced.
	require.Eventually(t, func() bool {
		n := &virtkit.Node{}
		err := opts.Store.Get(context.Background(), store.Key{Name: opts.NodeName}, n)
		return err == nil && n.Status.LastHeartbeatTime != nil
	}, 10*time.Second, 10*time.Millisecond, "the agent registers its node")
	return a, stop
}

func TestAgentFencesItselfWhenItCannotRenewItsHeartbeat(t *testing.T) {
	mem := store.NewMemory()
	st := &cuttableStore{Store: mem}
	hv := sim.New(sim.Options{Name: nodeName})
	const fence = 1500 * time.Millisecond
	a, _ := startAgent(t, node.Options{NodeName: nodeName, Store: st, Hypervisor: hv, Watchdog: hv,
		HeartbeatInterval: 50 * time.Millisecond, FenceTimeout: fence,
		StatusInterval: 100 * time.Millisecond, ResyncPeriod: time.Second})
	first := newScheduledVMI(t, mem, "vm")
	eventuallyPhase(t, mem, "vm", virtkit.Running)
	n := &virtkit.Node{}
	require.NoError(t, mem.Get(context.Background(), store.Key{Name: nodeName}, n))
	assert.Equal(t, "1.5s", n.Annotations[virtkit.FenceTimeoutAnnotation], "the fence timeout is published")

	// Cut off: after the fence timeout the guest is destroyed.
	st.cutAll(true)
	cut := time.Now()
	require.Eventually(t, a.Fenced, 10*time.Second, 10*time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(cut), fence-time.Second, "not fenced over a hiccup")
	require.Eventually(t, func() bool {
		return domainNames(t, hv)["default_vm"].State == hypervisor.StateShutoff
	}, 10*time.Second, 10*time.Millisecond, "the guest is destroyed once fenced")
	assert.Equal(t, hypervisor.ReasonDestroyed, domainNames(t, hv)["default_vm"].Reason)

	// Back: the agent reports the VMI failed and does not start it again.
	st.cutAll(false)
	vmi := eventuallyPhase(t, mem, "vm", virtkit.Failed)
	assert.Equal(t, first.UID, vmi.UID)
	assert.Contains(t, vmi.Status.Reason, "fenced")
	require.Eventually(t, func() bool { return !a.Fenced() }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		_, left := domainNames(t, hv)["default_vm"]
		return !left
	}, 10*time.Second, 10*time.Millisecond, "the fenced guest's domain is cleaned up, not restarted")
	assert.Equal(t, uint64(1), a.Fences())
}

func TestAgentStartsNothingWhileFenced(t *testing.T) {
	mem := store.NewMemory()
	st := &cuttableStore{Store: mem}
	hv := sim.New(sim.Options{Name: nodeName})
	a, _ := startAgent(t, node.Options{NodeName: nodeName, Store: st, Hypervisor: hv,
		HeartbeatInterval: 50 * time.Millisecond, FenceTimeout: 1200 * time.Millisecond,
		StatusInterval: 100 * time.Millisecond, ResyncPeriod: 100 * time.Millisecond})
	// Writes fail: the agent can see VMIs but not renew its heartbeat.
	st.writes.Store(true)
	require.Eventually(t, a.Fenced, 10*time.Second, 10*time.Millisecond)
	newScheduledVMI(t, mem, "late")
	_, err := a.Reconcile(context.Background(), reconcile.Request{Namespace: "default", Name: "late"})
	require.ErrorIs(t, err, node.ErrFenced)
	time.Sleep(300 * time.Millisecond)
	assert.NotContains(t, domainNames(t, hv), "default_late", "nothing is started while fenced")

	st.writes.Store(false)
	eventuallyPhase(t, mem, "late", virtkit.Running)
}

// A frozen agent (SIGSTOP) cannot fence anything: the host's watchdog,
// petted on every renewal, stops the guests, and the first look after the
// thaw sees them stopped.
func TestWatchdogStopsTheGuestsOfAFrozenAgent(t *testing.T) {
	mem := store.NewMemory()
	clock := sim.NewVirtualClock(time.Now())
	hv := sim.New(sim.Options{Name: nodeName, Clock: clock, BootDelay: -1})
	const fence = 2 * time.Second
	opts := node.Options{NodeName: nodeName, Store: mem, Hypervisor: hv, Watchdog: hv, Clock: realTimers{now: clock.Now},
		HeartbeatInterval: 50 * time.Millisecond, FenceTimeout: fence,
		StatusInterval: 100 * time.Millisecond, ResyncPeriod: time.Second}
	_, freeze := startAgent(t, opts)
	newScheduledVMI(t, mem, "vm")
	eventuallyPhase(t, mem, "vm", virtkit.Running)

	// Alive: the clock moves, renewals keep petting the watchdog.
	// Renewals write the heartbeat at one-second resolution, so the
	// deadline (counted from the first renewal of the current second, plus
	// fence and a tenth) stays at least 1.2 s ahead after each renewal.
	for range 12 {
		clock.Advance(fence / 8)
		require.Eventually(t, func() bool {
			deadline, armed := hv.WatchdogDeadline()
			return armed && deadline.Sub(clock.Now()) > 1100*time.Millisecond
		}, 10*time.Second, 5*time.Millisecond, "a renewal pets the watchdog")
	}
	require.Zero(t, hv.WatchdogFired(), "3 s of the clock, more than the timeout, with pets")
	require.Equal(t, hypervisor.StateRunning, domainNames(t, hv)["default_vm"].State)

	// Frozen: nothing of the agent runs while the clock moves on.
	freeze()
	clock.Advance(fence + time.Second)
	assert.Equal(t, hypervisor.StateShutoff, domainNames(t, hv)["default_vm"].State, "stopped by the watchdog")
	assert.Equal(t, uint64(1), hv.WatchdogFired())

	// Thawed: the agent reports what is true and starts nothing again.
	startAgent(t, opts)
	vmi := eventuallyPhase(t, mem, "vm", virtkit.Failed)
	assert.Equal(t, virtkit.Failed, vmi.Status.Phase)
	require.Eventually(t, func() bool {
		_, left := domainNames(t, hv)["default_vm"]
		return !left
	}, 10*time.Second, 10*time.Millisecond)
}

func TestFenceOptions(t *testing.T) {
	st, hv := store.NewMemory(), sim.New(sim.Options{})
	for _, tc := range []struct {
		name  string
		tweak func(*node.Options)
		ok    bool
	}{
		{"defaults", func(*node.Options) {}, true},
		{"disabled", func(o *node.Options) { o.FenceTimeout = -1 }, true},
		{"three heartbeats plus a second", func(o *node.Options) {
			o.HeartbeatInterval, o.FenceTimeout = time.Second, 4*time.Second
		}, true},
		{"too short for the heartbeat", func(o *node.Options) {
			o.HeartbeatInterval, o.FenceTimeout = time.Second, 3*time.Second
		}, false},
		{"a watchdog needs fencing", func(o *node.Options) { o.FenceTimeout, o.Watchdog = -1, hv }, false},
		{"domain node name differs", func(o *node.Options) { o.Domain.NodeName = "other" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := node.Options{NodeName: nodeName, Store: st, Hypervisor: hv}
			tc.tweak(&o)
			_, err := node.New(o)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, virtkit.ErrInvalidOptions)
		})
	}
	assert.Equal(t, time.Minute, node.DefaultFenceTimeout(10*time.Second))
	assert.Equal(t, node.MinDefaultFenceTimeout, node.DefaultFenceTimeout(300*time.Millisecond))
}

// realTimers is a clock whose timers and tickers are the real clock's but
// whose time is read from now: a test moves the time the agent judges by
// (leases, fencing) while its loops keep running in wall time.
type realTimers struct {
	utilclock.RealClock
	now func() time.Time
}

func (c realTimers) Now() time.Time { return c.now() }

func (c realTimers) Since(t time.Time) time.Duration { return c.now().Sub(t) }
