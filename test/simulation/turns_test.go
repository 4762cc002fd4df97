package simulation

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parkAll parks one write per key, each from its own goroutine, and waits
// until all are parked; order records the keys as their turns come.
func parkAll(t *testing.T, w *writeTurns, ctx context.Context, stopped <-chan struct{}, keys ...string) (order chan string, errs chan error, wg *sync.WaitGroup) {
	t.Helper()
	order, errs, wg = make(chan string, len(keys)), make(chan error, len(keys)), &sync.WaitGroup{}
	for _, k := range keys {
		wg.Go(func() {
			if err := w.wait(ctx, k, stopped); err != nil {
				errs <- err
				return
			}
			order <- k
		})
	}
	require.Eventually(t, func() bool { return w.pending() == len(keys) }, 10*time.Second, time.Millisecond)
	return order, errs, wg
}

// Parked writes go one at a time in the seed's order of their keys (the
// keys hashed with the seed), whatever order they parked in; two with one
// key are counted as a tie. Another seed goes through them in another
// order.
func TestWriteTurnsCanonicalOrder(t *testing.T) {
	run := func(salt uint64, keys ...string) []string {
		w := &writeTurns{salt: salt}
		w.on.Store(true)
		order, _, wg := parkAll(t, w, context.Background(), nil, keys...)
		var got []string
		for w.grantNext() {
			got = append(got, <-order)
		}
		wg.Wait()
		assert.False(t, w.grantNext(), "nothing left to grant")
		return got
	}
	keys := []string{"c", "a", "h", "b", "a", "g", "e", "d", "f"}
	want := slices.Clone(keys)
	w := &writeTurns{salt: 7}
	slices.SortFunc(want, func(a, b string) int {
		return cmp.Or(cmp.Compare(w.rank(a), w.rank(b)), cmp.Compare(a, b))
	})
	for range 3 {
		assert.Equal(t, want, run(7, keys...), "seed 7, every run")
	}
	assert.NotEqual(t, want, run(8, keys...), "seed 8 goes another way")

	w.on.Store(true)
	_, _, wg := parkAll(t, w, context.Background(), nil, "x", "x")
	for w.grantNext() {
	}
	wg.Wait()
	granted, ties := w.stats()
	assert.Equal(t, 2, granted)
	assert.Equal(t, 1, ties)
}

// A parked write ends without its turn when the harness stops or its
// context ends, and leaves no turn behind; before the cluster is built
// (on unset) a write does not park.
func TestWriteTurnsEndWithoutTurn(t *testing.T) {
	w := &writeTurns{}
	require.NoError(t, w.wait(context.Background(), "x", nil), "turns off: no parking")
	w.on.Store(true)

	stopped := make(chan struct{})
	_, errs, wg := parkAll(t, w, context.Background(), stopped, "a", "b")
	close(stopped)
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.ErrorIs(t, err, ErrStopped)
	}
	assert.Zero(t, w.pending())

	ctx, cancel := context.WithCancel(context.Background())
	_, errs, wg = parkAll(t, w, ctx, nil, "c")
	cancel()
	wg.Wait()
	assert.True(t, errors.Is(<-errs, context.Canceled))
	assert.Zero(t, w.pending())

	// A crashed agent's parked write never lands.
	link := &nodeLink{name: "node-1", dead: make(chan struct{})}
	_, errs, wg = parkAll(t, w, context.WithValue(context.Background(), deadKey{}, link), nil, "d")
	link.kill()
	wg.Wait()
	assert.ErrorIs(t, <-errs, ErrAgentDead)
	assert.Zero(t, w.pending())
	assert.False(t, w.grantNext())
}
