package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// A migration created while the previous one of the VMI is cancelled but
// still finalizing (its source has not reported the abort yet) waits in
// Pending and runs once the previous one ended, whatever the order in
// which the controller looks at the two: it never fails, and the
// cancelled one never reports its state taken over.
func TestMigrationQueuedBehindCancelled(t *testing.T) {
	tests := []struct {
		name string
		// started: the source had started the job when it was cancelled.
		started bool
		// viaAction: the new migration goes through Migrate (its
		// admission), else it is created directly (kubectl create).
		viaAction bool
	}{
		{name: "handed off, created directly"},
		{name: "running, created directly", started: true},
		{name: "handed off, migrate action", viaAction: true},
		{name: "running, migrate action", started: true, viaAction: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newMigEnv(t, nil, "n1", "n2")
			e.runningVMI("vm", "n1", true)
			first := e.migrate("vm")
			e.settle()
			e.agentWrites("vm", func(_ *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) {
				ms.TargetNodeAddress = "n2"
				if tt.started {
					now := metav1.NewTime(e.clock.Now())
					ms.StartTimestamp = &now
				}
			})
			e.settle()
			require.NoError(t, e.st.Delete(e.ctx, first, store.DeleteOptions{}))

			var second *virtkit.VirtualMachineInstanceMigration
			if tt.viaAction {
				var err error
				second, err = actions.Migrate(e.ctx, e.st, store.Key{Namespace: "default", Name: "vm"}, actions.MigrateOptions{})
				require.NoError(t, err, "a migration right after a cancel is accepted")
			} else {
				second = e.migrate("vm")
			}
			// The new one first, then the cancelled one, then both again.
			_, err := e.r.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: second.Name})
			require.NoError(t, err)
			e.settle()
			assert.Equal(t, virtkit.MigrationPending, e.mig(second).Status.Phase, "queued behind the cancelled one")
			assert.Equal(t, first.UID, e.vmi("vm").Status.MigrationState.MigrationUID, "the cancelled one's state is not taken over")
			assert.True(t, e.vmi("vm").Status.MigrationState.AbortRequested)

			// The source reports the abort; the target drops its part.
			e.agentWrites("vm", func(v *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) {
				ms.Failed, ms.Completed = true, true
				ms.AbortStatus = virtkit.MigrationAbortSucceeded
				ms.FailureReason = virtkit.MigrationReasonAborted
			})
			e.settle()
			err = e.st.Get(e.ctx, store.KeyOf(first), &virtkit.VirtualMachineInstanceMigration{})
			assert.ErrorIs(t, err, store.ErrNotFound, "the cancelled one is finalized")
			e.clock.Advance(time.Second)
			e.settle()
			got := e.mig(second)
			assert.Equal(t, virtkit.MigrationPreparingTarget, got.Status.Phase, "state: %+v", got.Status.MigrationState)
			ms := e.vmi("vm").Status.MigrationState
			assert.Equal(t, second.UID, ms.MigrationUID)
			assert.False(t, ms.Failed)
		})
	}
}

// A migration whose source is done but whose target never takes the VMI
// over fails once the progress timeout has passed, instead of staying
// Running for good.
func TestMigrationFailsWhenTargetDoesNotTakeOver(t *testing.T) {
	e := newMigEnv(t, nil, "n1", "n2")
	e.runningVMI("vm", "n1", true)
	m := e.migrate("vm")
	e.settle()
	e.agentWrites("vm", func(_ *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) {
		now := metav1.NewTime(e.clock.Now())
		ms.TargetNodeAddress = "n2"
		ms.StartTimestamp = &now
	})
	e.settle()
	e.clock.Advance(10 * time.Second)
	e.agentWrites("vm", func(_ *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) {
		now := metav1.NewTime(e.clock.Now())
		ms.EndTimestamp = &now
	})
	e.settle()
	e.clock.Advance(time.Duration(virtkit.DefaultProgressTimeout) * time.Second)
	e.settle()
	require.Equal(t, virtkit.MigrationRunning, e.mig(m).Status.Phase, "within the progress timeout")

	e.clock.Advance(2 * time.Second)
	e.settle()
	got := e.mig(m)
	require.Equal(t, virtkit.MigrationFailed, got.Status.Phase)
	assert.Contains(t, got.Status.MigrationState.FailureReason, virtkit.MigrationReasonNotTakenOver)
	ms := e.vmi("vm").Status.MigrationState
	assert.True(t, ms.Failed, "the agents see the end")
}

// Unpause refuses a guest paused by the migration monitor, saying why,
// instead of recording a request no agent acts on; a user's pause it
// records.
func TestUnpauseRefusesAMigrationMonitorPause(t *testing.T) {
	tests := []struct {
		reason  string
		refused bool
	}{
		{reason: virtkit.PausedByMigrationMonitorReason, refused: true},
		{reason: virtkit.PausedByUserReason},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			e := newMigEnv(t, nil, "n1")
			vmi := e.runningVMI("vm", "n1", true)
			virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{
				Type: virtkit.VirtualMachineInstancePaused, Status: virtkit.ConditionTrue, Reason: tt.reason,
			}, metav1.NewTime(e.clock.Now()))
			require.NoError(t, e.st.UpdateStatus(e.ctx, vmi))
			err := actions.Unpause(e.ctx, e.st, store.Key{Namespace: "default", Name: "vm"})
			if !tt.refused {
				require.NoError(t, err)
				assert.Equal(t, "false", e.vmi("vm").Annotations[virtkit.PauseRequestAnnotation])
				return
			}
			require.ErrorIs(t, err, actions.ErrConflictingAction)
			assert.ErrorContains(t, err, "migration")
			assert.NotContains(t, e.vmi("vm").Annotations, virtkit.PauseRequestAnnotation)
		})
	}
}
