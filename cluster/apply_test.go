package cluster_test

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// conflictStore fails every Update of the object named victim with a
// conflict, as a store under a storm of concurrent writers would.
type conflictStore struct {
	store.Store
	victim  string
	updates atomic.Int32
}

func (c *conflictStore) Update(ctx context.Context, obj virtkit.Object) error {
	if obj.GetName() == c.victim {
		c.updates.Add(1)
		return store.ErrConflict
	}
	return c.Store.Update(ctx, obj)
}

func policy(name, label string) *virtkit.MigrationPolicy {
	return &virtkit.MigrationPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "migrations.kubevirt.io/v1alpha1", Kind: "MigrationPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"v": label}},
		Spec: virtkit.MigrationPolicySpec{Selectors: &virtkit.Selectors{
			VirtualMachineInstanceSelector: virtkit.LabelSelectorMap{"app": "x"},
		}},
	}
}

func TestApplyContinuesPastAConflictingObject(t *testing.T) {
	ctx := t.Context()
	mem := store.NewMemory()
	require.NoError(t, cluster.Apply(ctx, mem, policy("a", "1"), policy("b", "1")))

	st := &conflictStore{Store: mem, victim: "a"}
	err := cluster.Apply(ctx, st, policy("a", "2"), policy("b", "2"), policy("c", "2"))
	require.ErrorIs(t, err, store.ErrConflict)
	assert.EqualValues(t, 10, st.updates.Load(), "bounded retries")
	assert.Equal(t, 1, strings.Count(err.Error(), "MigrationPolicy a"), "one prefix: %s", err)
	assert.Contains(t, err.Error(), "gave up after 10 attempts")

	// The objects after the failing one were applied.
	var b, c virtkit.MigrationPolicy
	require.NoError(t, mem.Get(ctx, store.Key{Name: "b"}, &b))
	assert.Equal(t, "2", b.Labels["v"])
	require.NoError(t, mem.Get(ctx, store.Key{Name: "c"}, &c))
}

func TestApplyRetryHonoursContext(t *testing.T) {
	mem := store.NewMemory()
	require.NoError(t, cluster.Apply(t.Context(), mem, policy("a", "1")))
	ctx, cancel := context.WithCancel(t.Context())
	st := &conflictStore{Store: mem, victim: "a"}
	go func() {
		for st.updates.Load() == 0 {
			runtime.Gosched() // wait for the first conflict
		}
		cancel()
	}()
	err := cluster.Apply(ctx, st, policy("a", "2"), policy("b", "2"))
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, st.updates.Load(), int32(10))
}
