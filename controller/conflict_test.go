package controller

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/store"
)

// conflictingStore fails a share of writes with ErrConflict before they
// reach the store, as if another writer had just won the race.
type conflictingStore struct {
	store.Store
	mu        sync.Mutex
	rnd       *rand.Rand
	share     float64
	conflicts int
}

func (c *conflictingStore) lose() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rnd.Float64() < c.share {
		c.conflicts++
		return fmt.Errorf("injected: %w", store.ErrConflict)
	}
	return nil
}

func (c *conflictingStore) Update(ctx context.Context, obj virtkit.Object) error {
	if err := c.lose(); err != nil {
		return err
	}
	return c.Store.Update(ctx, obj)
}

func (c *conflictingStore) UpdateStatus(ctx context.Context, obj virtkit.Object) error {
	if err := c.lose(); err != nil {
		return err
	}
	return c.Store.UpdateStatus(ctx, obj)
}

// TestConvergesDespiteConflicts: with a third of all updates losing a
// race, every reconciler must still reach the same end state, because each
// failed write is retried from a fresh read.
func TestConvergesDespiteConflicts(t *testing.T) {
	for seed := range uint64(5) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			cs := &conflictingStore{rnd: rand.New(rand.NewPCG(seed, 7)), share: 0.33}
			e := newEnvWith(t, 2, func(st store.Store) store.Store { cs.Store = st; return cs })
			e.passes = 300
			require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
			require.NoError(t, e.st.Create(e.ctx, newVM("manual", virtkit.RunStrategyManual)))
			require.NoError(t, e.st.Create(e.ctx, newRS("web", 3)))
			e.settle()
			e.settle() // a quiet pass can hide a retry that is still due

			require.NoError(t, retryOnConflict(e.ctx, func() error { return actions.Start(e.ctx, cs, key("manual"), actions.StartOptions{}) }))
			first := e.getVMI("vm").UID
			require.NoError(t, retryOnConflict(e.ctx, func() error { return actions.Restart(e.ctx, cs, key("vm"), actions.RestartOptions{}) }))
			e.settle()
			e.settle()

			for _, name := range []string{"vm", "manual"} {
				vm := e.getVM(name)
				assert.Equal(t, virtkit.VirtualMachineStatusRunning, vm.Status.PrintableStatus, name)
				assert.Empty(t, vm.Status.StateChangeRequests, name)
			}
			assert.NotEqual(t, first, e.getVMI("vm").UID, "restarted")
			assert.Len(t, e.vmisOf("web"), 3)
			assert.EqualValues(t, 3, e.getRS("web").Status.ReadyReplicas)
			assert.Positive(t, cs.conflicts)
		})
	}
}
