package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/store"
)

// TestCancelledMigrationAbortStatus cancels a migration (deletes it, as
// migrate-cancel does) at points of its life from before the engine has
// measured the guest's dirty rate to the middle of the copy: the VMI's
// migration state always ends with abortStatus Succeeded and the reason
// Aborted, never left "Aborting".
func TestCancelledMigrationAbortStatus(t *testing.T) {
	for _, before := range []time.Duration{0, time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second} {
		t.Run(before.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, key, vmi := startMigratable(t, ctx)

			mig, err := actions.Migrate(ctx, c.Store(), key, actions.MigrateOptions{})
			require.NoError(t, err)
			require.NoError(t, c.Settle(ctx))
			if before > 0 {
				require.NoError(t, c.Advance(ctx, before))
			}
			require.NoError(t, c.Store().Delete(ctx, mig, store.DeleteOptions{}))

			ended, err := advanceUntil(ctx, c, 3*time.Minute, func() (bool, *virtkit.VirtualMachineInstanceMigrationState, error) {
				v := &virtkit.VirtualMachineInstance{}
				if err := c.Store().Get(ctx, key, v); err != nil {
					return false, nil, err
				}
				ms := v.Status.MigrationState
				if ms == nil || ms.MigrationUID != mig.UID {
					// Not taken by any agent yet: wait for the
					// migration object to be finalized instead.
					err := c.Store().Get(ctx, store.KeyOf(mig), &virtkit.VirtualMachineInstanceMigration{})
					return errors.Is(err, store.ErrNotFound), nil, nil
				}
				return ms.Completed, ms, nil
			})
			require.NoError(t, err)
			if ended == nil {
				t.Skip("cancelled before any agent took the migration")
			}
			require.True(t, ended.Failed, "a cancelled migration: %+v", ended)
			assert.Equal(t, virtkit.MigrationAbortSucceeded, ended.AbortStatus, "failure reason %q", ended.FailureReason)
			assert.Equal(t, virtkit.MigrationReasonAborted, ended.FailureReason)
			assert.Equal(t, vmi.Status.NodeName, runningOn(t, ctx, c, key).Status.NodeName)
		})
	}
}
