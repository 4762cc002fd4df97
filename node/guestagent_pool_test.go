package node_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// statusLog records every VMI status write by name.
type statusLog struct {
	store.Store
	mu     sync.Mutex
	writes map[string][]*virtkit.VirtualMachineInstance
}

func (s *statusLog) UpdateStatus(ctx context.Context, obj virtkit.Object) error {
	err := s.Store.UpdateStatus(ctx, obj)
	if vmi, ok := obj.(*virtkit.VirtualMachineInstance); ok && err == nil {
		s.mu.Lock()
		s.writes[vmi.Name] = append(s.writes[vmi.Name], vmi.DeepCopy())
		s.mu.Unlock()
	}
	return err
}

func (s *statusLog) of(name string) []*virtkit.VirtualMachineInstance {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes[name]
}

// One pool polls every guest of a host: the goroutines do not grow with
// the guests, every guest's agent is followed, and the status written when
// a guest's agent connects already holds the agent's first answers.
func TestGuestAgentPoolPollsEveryGuestWithBoundedWorkers(t *testing.T) {
	const guests = 24
	st := &statusLog{Store: store.NewMemory(), writes: map[string][]*virtkit.VirtualMachineInstance{}}
	hv := sim.New(sim.Options{Name: nodeName, CPUs: 64, MemoryBytes: 64 << 30})
	src := node.NewGuestAgentSource(hv, node.GuestAgentSourceOptions{Workers: 2,
		Poller: guestagent.PollerOptions{InitialInterval: 50 * time.Millisecond, FSFreezeInterval: 100 * time.Millisecond}})

	before := runtime.NumGoroutine()
	runAgent(t, st, hv, func(o *node.Options) {
		o.GuestInfo = src
		o.StatusInterval = time.Hour // only events refresh the status
	})
	for i := range guests {
		newScheduledVMI(t, st, fmt.Sprintf("g-%02d", i))
	}
	require.Eventually(t, func() bool {
		for i := range guests {
			vmi, ok := getVMI(t, st, fmt.Sprintf("g-%02d", i))
			if !ok || !vmi.IsRunning() || !virtkit.IsConditionTrue(vmi.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected) {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond)

	// Polls keep running (fsfreeze every 100 ms) on the shared workers.
	time.Sleep(300 * time.Millisecond)
	grown := runtime.NumGoroutine() - before
	assert.Less(t, grown, guests*2, "goroutines grew with the guests (%d for %d guests)", grown, guests)

	for i := range guests {
		name := fmt.Sprintf("g-%02d", i)
		info, ok := src.Info("default_" + name)
		require.True(t, ok, name)
		assert.True(t, info.Connected, name)
		assert.NotEmpty(t, info.OS.Name, "%s: guest OS polled", name)

		// The guest agent connects after the guest booted, so Running comes
		// first; the write that reports the connection already carries what
		// the agent's first poll found (no later write for the guest OS).
		var connected *virtkit.VirtualMachineInstance
		for _, w := range st.of(name) {
			if virtkit.IsConditionTrue(w.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected) {
				connected = w
				break
			}
		}
		require.NotNil(t, connected, name)
		assert.NotEmpty(t, connected.Status.GuestOSInfo.Name, "%s: AgentConnected written with the guest OS info", name)
	}
}

// A forgotten guest is no longer polled and reports nothing.
func TestGuestAgentPoolForget(t *testing.T) {
	hv := sim.New(sim.Options{Name: nodeName})
	src := node.NewGuestAgentSource(hv, node.GuestAgentSourceOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { src.Start(ctx, func(string, string) {}); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool {
		src.Follow("default_none") // before Start it is only remembered
		_, ok := src.Info("default_none")
		return ok
	}, 5*time.Second, time.Millisecond)
	src.Forget("default_none")
	_, ok := src.Info("default_none")
	assert.False(t, ok)
}

// heldAgent answers every guest-agent command with an error once release
// is closed, counting the calls that began and finished.
type heldAgent struct {
	release         chan struct{}
	began, finished atomic.Int64
}

func (h *heldAgent) AgentCommand(ctx context.Context, _, _ string) (string, error) {
	h.began.Add(1)
	select {
	case <-h.release:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	h.finished.Add(1)
	return "", errors.New("no agent")
}

// What a reconcile reads after Prime does not depend on which of the node
// agent's goroutines ran first: Prime before the pool has started waits
// for it and primes the guest, and Prime of a guest the pool already
// follows waits for the first poll of each of its workers (both bounded
// by Prime's context).
func TestGuestAgentPoolPrimeWaitsForStartAndFirstPolls(t *testing.T) {
	type primer interface {
		Prime(ctx context.Context, domain string)
	}
	start := func(t *testing.T, src node.GuestInfoSource) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { src.Start(ctx, func(string, string) {}); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	const bound = 100 * time.Millisecond

	t.Run("before start", func(t *testing.T) {
		ag := &heldAgent{release: make(chan struct{})}
		close(ag.release)
		src := node.NewGuestAgentSource(ag, node.GuestAgentSourceOptions{})
		ctx, cancel := context.WithTimeout(t.Context(), bound)
		defer cancel()
		src.(primer).Prime(ctx, "default_never")
		assert.Error(t, ctx.Err(), "Prime returned before the pool started")

		primed := make(chan bool)
		go func() {
			src.(primer).Prime(t.Context(), "default_early")
			_, followed := src.Info("default_early")
			primed <- followed && ag.finished.Load() > 0
		}()
		start(t, src)
		assert.True(t, <-primed, "Prime did not poll the guest once the pool started")
	})

	t.Run("already followed", func(t *testing.T) {
		ag := &heldAgent{release: make(chan struct{})}
		src := node.NewGuestAgentSource(ag, node.GuestAgentSourceOptions{})
		src.Follow("default_g") // before Start: followed, first polls by the workers
		start(t, src)
		require.Eventually(t, func() bool { return ag.began.Load() > 0 }, 10*time.Second, time.Millisecond)
		ctx, cancel := context.WithTimeout(t.Context(), bound)
		defer cancel()
		src.(primer).Prime(ctx, "default_g")
		assert.Error(t, ctx.Err(), "Prime returned while the workers' first polls were under way")
		assert.Zero(t, ag.finished.Load())
		close(ag.release)
		src.(primer).Prime(t.Context(), "default_g")
		assert.Positive(t, ag.finished.Load(), "Prime returned before the first polls finished")
	})
}
