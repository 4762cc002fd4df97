package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// TestMigrateRightAfterCancel cancels a migration (deletes it, as
// migrate-cancel does) at each point of its life and asks for a new one in
// the same instant, through the migrate action or by creating the object
// directly: the new migration waits for the cancelled one to finish and
// then moves the guest; none fails, none leaves a domain behind or a
// guest paused.
func TestMigrateRightAfterCancel(t *testing.T) {
	tests := []struct {
		name string
		// before is the virtual time the first migration runs before it
		// is cancelled (-1: cancelled before any controller saw it).
		before time.Duration
		// direct creates the new migration in the store, past the
		// migrate action's admission (kubectl create).
		direct bool
	}{
		{name: "unseen", before: -1},
		{name: "handed off", before: 0},
		{name: "copying", before: 5 * time.Second},
		{name: "copying, created directly", before: 5 * time.Second, direct: true},
		{name: "handed off, created directly", before: 0, direct: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, key, vmi := startMigratable(t, ctx)

			first, err := actions.Migrate(ctx, c.Store(), key, actions.MigrateOptions{})
			require.NoError(t, err)
			if tt.before >= 0 {
				require.NoError(t, c.Advance(ctx, tt.before))
			}
			require.NoError(t, c.Store().Delete(ctx, first, store.DeleteOptions{}))
			var second *virtkit.VirtualMachineInstanceMigration
			if tt.direct {
				second = &virtkit.VirtualMachineInstanceMigration{
					ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, GenerateName: "again-"},
					Spec:       virtkit.VirtualMachineInstanceMigrationSpec{VMIName: key.Name},
				}
				require.NoError(t, c.Apply(ctx, second))
			} else {
				second, err = actions.Migrate(ctx, c.Store(), key, actions.MigrateOptions{})
				require.NoError(t, err, "a migration right after a cancel")
			}

			final, err := advanceUntil(ctx, c, 3*time.Minute, func() (bool, *virtkit.VirtualMachineInstanceMigration, error) {
				m := &virtkit.VirtualMachineInstanceMigration{}
				if err := c.Store().Get(ctx, store.KeyOf(second), m); err != nil {
					return false, nil, err
				}
				return m.IsFinal(), m, nil
			})
			require.NoError(t, err)
			require.Equal(t, virtkit.MigrationSucceeded, final.Status.Phase, "state: %+v", final.Status.MigrationState)
			moved := runningOn(t, ctx, c, key)
			assert.NotEqual(t, vmi.Status.NodeName, moved.Status.NodeName)
			assert.Equal(t, final.UID, moved.Status.MigrationState.MigrationUID)
			err = c.Store().Get(ctx, store.KeyOf(first), &virtkit.VirtualMachineInstanceMigration{})
			assert.ErrorIs(t, err, store.ErrNotFound, "the cancelled migration is finalized")
			require.NoError(t, c.Advance(ctx, 5*time.Second))
			assert.NoError(t, cluster.CheckNoLeakedDomains(ctx, c))
			assert.NoError(t, cluster.CheckNoPausedByEndedMigration(ctx, c))
			assert.NoError(t, cluster.CheckNoDoubleRun(ctx, c))
		})
	}
}

// startMigratable starts the VM vt/hop on a lifecycle cluster whose links
// move 20 MB/s (a 512 MiB guest migrates in about 27 s) and returns once
// its VMI runs and says it can migrate.
func startMigratable(t *testing.T, ctx context.Context) (*cluster.Cluster, store.Key, *virtkit.VirtualMachineInstance) {
	t.Helper()
	c, _ := lifecycleCluster(t, ctx, 20_000_000)
	key := store.Key{Namespace: "vt", Name: "hop"}
	require.NoError(t, c.Apply(ctx, virtualVM(key.Name)))
	vmi := runningOn(t, ctx, c, key)
	_, err := advanceUntil(ctx, c, time.Minute, func() (bool, struct{}, error) {
		v := &virtkit.VirtualMachineInstance{}
		err := c.Store().Get(ctx, key, v)
		return virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceIsMigratable), struct{}{}, err
	})
	require.NoError(t, err)
	return c, key, vmi
}
