package controller

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

func forced() actions.RestartOptions {
	zero := int64(0)
	return actions.RestartOptions{GracePeriodSeconds: &zero}
}

// vmiUpdateConflict fails the first n spec/metadata updates of a VMI with
// ErrConflict, as when the node agent writes the VMI between the action's
// read and its write.
type vmiUpdateConflict struct {
	store.Store
	n int
}

func (s *vmiUpdateConflict) Update(ctx context.Context, obj virtkit.Object) error {
	if _, ok := obj.(*virtkit.VirtualMachineInstance); ok && s.n > 0 {
		s.n--
		return fmt.Errorf("injected: %w", store.ErrConflict)
	}
	return s.Store.Update(ctx, obj)
}

// A forced restart while a restart is underway succeeds and cuts the
// pending graceful stop short (KubeVirt's restart --force
// --grace-period=0); an ordinary second restart is still refused.
func TestForcedRestartWhileRestartUnderway(t *testing.T) {
	for _, tc := range []struct {
		name string
		// underway brings the VM to a state where a restart is queued.
		underway func(e *env)
	}{
		{name: "restart queued", underway: func(e *env) {
			require.NoError(t, actions.Restart(e.ctx, e.st, key("vm"), actions.RestartOptions{}))
		}},
		{name: "VMI already being deleted", underway: func(e *env) {
			require.NoError(t, actions.Restart(e.ctx, e.st, key("vm"), actions.RestartOptions{}))
			_, err := e.vm.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "vm"})
			require.NoError(t, err)
			require.NotNil(t, e.getVMI("vm").DeletionTimestamp, "the VM controller deletes the VMI")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1)
			require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
			e.settle()
			old := e.getVMI("vm")
			require.Equal(t, virtkit.Running, old.Status.Phase)
			tc.underway(e)
			queued := e.getVM("vm").Status.StateChangeRequests

			err := actions.Restart(e.ctx, e.st, key("vm"), actions.RestartOptions{})
			require.ErrorIs(t, err, actions.ErrConflictingAction, "an ordinary restart waits for the one underway")
			assert.Contains(t, err.Error(), "stop/start already underway")

			require.NoError(t, actions.Restart(e.ctx, e.st, key("vm"), forced()), "a forced restart overrides the graceful stop")
			vmi := e.getVMI("vm")
			require.Equal(t, old.UID, vmi.UID)
			require.NotNil(t, vmi.Spec.TerminationGracePeriodSeconds)
			assert.EqualValues(t, 1, *vmi.Spec.TerminationGracePeriodSeconds, "the VMI being stopped gets 1 s")
			assert.Equal(t, queued, e.getVM("vm").Status.StateChangeRequests, "one restart, not two")

			e.settle()
			now := e.getVMI("vm")
			require.NotNil(t, now)
			assert.NotEqual(t, old.UID, now.UID, "restarted")
			assert.Equal(t, virtkit.Running, now.Status.Phase)
			assert.Empty(t, e.getVM("vm").Status.StateChangeRequests)
		})
	}
}

// A forced restart whose grace period write loses a race is retried; the
// retry finds its own restart queued and must not fail with "stop/start
// already underway".
func TestForcedRestartRetriesAfterConflict(t *testing.T) {
	cs := &vmiUpdateConflict{}
	e := newEnvWith(t, 1, func(st store.Store) store.Store { cs.Store = st; return cs })
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
	e.settle()
	old := e.getVMI("vm")

	cs.n = 1
	require.NoError(t, actions.Restart(e.ctx, cs, key("vm"), forced()))
	assert.Zero(t, cs.n, "the conflict was injected")
	vmi := e.getVMI("vm")
	require.NotNil(t, vmi.Spec.TerminationGracePeriodSeconds)
	assert.EqualValues(t, 1, *vmi.Spec.TerminationGracePeriodSeconds)
	reqs := e.getVM("vm").Status.StateChangeRequests
	require.Len(t, reqs, 2)
	assert.Equal(t, virtkit.StopRequest, reqs[0].Action)
	assert.Equal(t, old.UID, *reqs[0].UID)
	assert.Equal(t, virtkit.StartRequest, reqs[1].Action)
}

// With the old VMI gone and the restart's Start still queued, a forced
// restart has nothing left to force and succeeds; an ordinary one is
// refused as KubeVirt refuses it (no VMI).
func TestForcedRestartAfterStopDone(t *testing.T) {
	e := newEnv(t, 1)
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyManual)))
	e.settle()
	require.Nil(t, e.getVMI("vm"))
	require.NoError(t, actions.Start(e.ctx, e.st, key("vm"), actions.StartOptions{}))
	require.ErrorIs(t, actions.Restart(e.ctx, e.st, key("vm"), actions.RestartOptions{}), actions.ErrConflictingAction)
	require.NoError(t, actions.Restart(e.ctx, e.st, key("vm"), forced()))
	assert.Len(t, e.getVM("vm").Status.StateChangeRequests, 1, "the queued Start alone")
	e.settle()
	require.NotNil(t, e.getVMI("vm"))
	assert.Equal(t, virtkit.Running, e.getVMI("vm").Status.Phase)
}
