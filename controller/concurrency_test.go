package controller

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// overlapGuard wraps a reconciler and records any two concurrent
// reconciles of one key.
type overlapGuard struct {
	r        reconcile.Reconciler
	mu       sync.Mutex
	inFlight map[reconcile.Request]bool
	overlaps atomic.Int32
}

func (g *overlapGuard) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	g.mu.Lock()
	if g.inFlight[req] {
		g.overlaps.Add(1)
	}
	g.inFlight[req] = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.inFlight, req)
		g.mu.Unlock()
	}()
	return g.r.Reconcile(ctx, req)
}

// TestConcurrentActionsConverge runs the real runners (several workers
// each) against the memory store while users hammer the VMs with
// start/stop/restart from many goroutines. Whatever interleaving happens,
// the control plane must converge to what the last write asked for, with no
// overlapping reconciles of one key and no lost or duplicated VMI.
func TestConcurrentActionsConverge(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real runners for a few seconds")
	}
	e := newEnv(t, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	agent := reconcile.ReconcilerFunc(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		vmi := &virtkit.VirtualMachineInstance{}
		found, err := getOptional(ctx, e.st, keyOf(req), vmi)
		if err != nil || !found {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, e.agent.reconcile(ctx, vmi)
	})
	guards := map[string]*overlapGuard{}
	var ctrls []*reconcile.Controller
	for _, c := range []struct {
		name    string
		r       reconcile.Reconciler
		watches []reconcile.Watch
	}{
		{"vm", e.vm, e.vm.Watches()},
		{"vmi", e.vmi, e.vmi.Watches()},
		{"agent", agent, []reconcile.Watch{{NewList: vmiList}}},
	} {
		g := &overlapGuard{r: c.r, inFlight: map[reconcile.Request]bool{}}
		guards[c.name] = g
		ctrl, err := reconcile.New(e.st, g, reconcile.Options{
			Name: c.name, MaxConcurrentReconciles: 4, ResyncPeriod: time.Second,
			RateLimiter: fastRateLimiter(),
		}, c.watches...)
		require.NoError(t, err)
		ctrls = append(ctrls, ctrl)
	}
	var wg sync.WaitGroup
	for _, c := range ctrls {
		wg.Go(func() { assert.NoError(t, c.Start(ctx)) })
	}

	const vms = 12
	for i := range vms {
		require.NoError(t, e.st.Create(ctx, newVM(fmt.Sprintf("vm%d", i), virtkit.RunStrategyManual)))
	}
	var users sync.WaitGroup
	var unexpected atomic.Int32
	for u := range 6 {
		users.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(u), 42))
			for range 40 {
				k := key(fmt.Sprintf("vm%d", rnd.IntN(vms)))
				var err error
				switch rnd.IntN(3) {
				case 0:
					err = actions.Start(ctx, e.st, k, actions.StartOptions{})
				case 1:
					err = actions.Stop(ctx, e.st, k, actions.StopOptions{})
				case 2:
					err = actions.Restart(ctx, e.st, k, actions.RestartOptions{})
				}
				if err != nil && !errors.Is(err, actions.ErrConflictingAction) && !errors.Is(err, store.ErrConflict) {
					t.Logf("unexpected action error: %v", err)
					unexpected.Add(1)
				}
				time.Sleep(time.Duration(rnd.IntN(3)) * time.Millisecond)
			}
		})
	}
	users.Wait()

	// Finally everyone wants their VM running.
	for i := range vms {
		k := key(fmt.Sprintf("vm%d", i))
		require.NoError(t, retryOnConflict(ctx, func() error {
			vm := &virtkit.VirtualMachine{}
			if err := e.st.Get(ctx, k, vm); err != nil {
				return err
			}
			rs := virtkit.RunStrategyAlways
			vm.Spec.RunStrategy = &rs
			return e.st.Update(ctx, vm)
		}))
	}
	require.Eventually(t, func() bool {
		for i := range vms {
			vm := &virtkit.VirtualMachine{}
			if err := e.st.Get(ctx, key(fmt.Sprintf("vm%d", i)), vm); err != nil {
				return false
			}
			if vm.Status.PrintableStatus != virtkit.VirtualMachineStatusRunning || len(vm.Status.StateChangeRequests) != 0 {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond)
	cancel()
	wg.Wait()

	assert.Zero(t, unexpected.Load())
	for name, g := range guards {
		assert.Zero(t, g.overlaps.Load(), "%s: overlapping reconciles of one key", name)
	}
	list := &virtkit.VirtualMachineInstanceList{}
	require.NoError(t, e.st.List(context.Background(), list, store.ListOptions{}))
	assert.Len(t, list.Items, vms, "one VMI per VM")
	for _, v := range list.Items {
		assert.Equal(t, virtkit.Running, v.Status.Phase, v.Name)
	}
	for _, c := range ctrls {
		st := c.Stats()
		assert.Positive(t, st.Reconciles, c.Name())
		assert.Zero(t, st.TerminalErrors, c.Name())
	}
}
