package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

func TestVMICreatedFromTemplate(t *testing.T) {
	e := newEnv(t, 1)
	vm := newVM("vm", virtkit.RunStrategyAlways)
	require.NoError(t, e.st.Create(e.ctx, vm))
	e.settle()
	vm = e.getVM("vm")
	vmi := e.getVMI("vm")
	require.NotNil(t, vmi)

	assert.Equal(t, map[string]string{"app": "vm", virtkit.NodeNameLabel: "n1"}, vmi.Labels)
	assert.Equal(t, "from-template", vmi.Annotations["note"])
	assert.Equal(t, "1", vmi.Annotations[virtkit.VMGenerationAnnotation])
	ref := controllerOf(vmi)
	require.NotNil(t, ref)
	assert.Equal(t, virtkit.KindVirtualMachine, ref.Kind)
	assert.Equal(t, vm.UID, ref.UID)
	assert.Contains(t, vmi.Finalizers, virtkit.VirtualMachineControllerFinalizer)
	assert.Contains(t, vmi.Finalizers, virtkit.VirtualMachineInstanceFinalizer)
	assert.Contains(t, vmi.Finalizers, virtkit.NodeAgentFinalizer)
	assert.Contains(t, vm.Finalizers, virtkit.VirtualMachineControllerFinalizer)
	assert.Equal(t, virtkit.FirmwareUUIDForVM("vm"), vmi.Spec.Domain.Firmware.UUID)
	assert.Nil(t, vm.Spec.Template.Spec.Domain.Firmware, "the VM template is not modified")

	assert.True(t, vm.Status.Created)
	assert.True(t, vm.Status.Ready)
	assert.Equal(t, virtkit.RunStrategyAlways, vm.Status.RunStrategy)
	assert.EqualValues(t, 1, vm.Status.ObservedGeneration)
	assert.EqualValues(t, 1, vm.Status.DesiredGeneration)
	assert.True(t, virtkit.IsConditionTrue(vm.Status.Conditions, virtkit.VirtualMachineReady))
	assert.True(t, virtkit.IsConditionTrue(vm.Status.Conditions, virtkit.VirtualMachineInstancePodScheduled), "VMI conditions are copied")
}

func TestVMStoppedConditions(t *testing.T) {
	e := newEnv(t, 1)
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyHalted)))
	e.settle()
	vm := e.getVM("vm")
	c := virtkit.GetCondition(vm.Status.Conditions, virtkit.VirtualMachineReady)
	require.NotNil(t, c)
	assert.Equal(t, virtkit.ConditionFalse, c.Status)
	assert.Equal(t, virtkit.VMINotExistsReason, c.Reason)
	assert.False(t, vm.Status.Created)
	assert.Equal(t, virtkit.VirtualMachineStatusStopped, vm.Status.PrintableStatus)
}

func TestVMBothRunningAndRunStrategyIsTerminal(t *testing.T) {
	e := newEnv(t, 1)
	vm := newVM("vm", virtkit.RunStrategyAlways)
	yes := true
	vm.Spec.Running = &yes
	require.NoError(t, e.st.Create(e.ctx, vm))
	_, err := e.vm.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "vm"})
	require.True(t, reconcile.IsTerminal(err))
	require.ErrorIs(t, err, virtkit.ErrRunStrategy)
	vm = e.getVM("vm")
	c := virtkit.GetCondition(vm.Status.Conditions, virtkit.VirtualMachineFailure)
	require.NotNil(t, c)
	assert.Equal(t, ReasonInvalidRunStrategy, c.Reason)
	assert.Nil(t, e.getVMI("vm"))
}

func TestPausedVM(t *testing.T) {
	e := newEnv(t, 1)
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
	e.settle()

	require.NoError(t, actions.Pause(e.ctx, e.st, key("vm")))
	e.settle()
	vm := e.getVM("vm")
	assert.Equal(t, virtkit.VirtualMachineStatusPaused, vm.Status.PrintableStatus)
	assert.True(t, virtkit.IsConditionTrue(vm.Status.Conditions, virtkit.VirtualMachinePaused))
	require.ErrorIs(t, actions.Pause(e.ctx, e.st, key("vm")), actions.ErrConflictingAction, "already paused")
	require.ErrorIs(t, actions.SoftReboot(e.ctx, e.st, key("vm"), actions.SoftRebootOptions{}), actions.ErrConflictingAction, "paused")

	require.NoError(t, actions.Unpause(e.ctx, e.st, key("vm")))
	e.settle()
	vm = e.getVM("vm")
	assert.Equal(t, virtkit.VirtualMachineStatusRunning, vm.Status.PrintableStatus)
	assert.Nil(t, virtkit.GetCondition(vm.Status.Conditions, virtkit.VirtualMachinePaused))
	require.ErrorIs(t, actions.Unpause(e.ctx, e.st, key("vm")), actions.ErrConflictingAction, "not paused")
}

func TestVMIActions(t *testing.T) {
	no := false
	tests := []struct {
		name    string
		setup   func(*virtkit.VirtualMachineInstance)
		act     func(ctx context.Context, st store.Store, k store.Key) error
		wantErr error
		check   func(t *testing.T, e *env)
	}{
		{name: "pause needs a running VMI", setup: func(v *virtkit.VirtualMachineInstance) { v.Status.Phase = virtkit.Scheduled },
			act: actions.Pause, wantErr: actions.ErrConflictingAction},
		{name: "pause with liveness probe is forbidden", setup: func(v *virtkit.VirtualMachineInstance) {
			v.Spec.LivenessProbe = &virtkit.Probe{}
		}, act: actions.Pause, wantErr: actions.ErrActionForbidden},
		{name: "pause writes the request", act: actions.Pause, check: func(t *testing.T, e *env) {
			assert.Equal(t, "true", e.getVMI("vm").Annotations[virtkit.PauseRequestAnnotation])
		}},
		{name: "unpause needs a paused VMI", act: actions.Unpause, wantErr: actions.ErrConflictingAction},
		{name: "soft reboot needs a running VMI", setup: func(v *virtkit.VirtualMachineInstance) { v.Status.Phase = virtkit.Succeeded },
			act: func(ctx context.Context, st store.Store, k store.Key) error {
				return actions.SoftReboot(ctx, st, k, actions.SoftRebootOptions{})
			}, wantErr: actions.ErrConflictingAction},
		{name: "soft reboot without agent and ACPI", setup: func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Domain.Features = &virtkit.Features{ACPI: virtkit.FeatureState{Enabled: &no}}
		}, act: func(ctx context.Context, st store.Store, k store.Key) error {
			return actions.SoftReboot(ctx, st, k, actions.SoftRebootOptions{})
		}, wantErr: actions.ErrConflictingAction},
		{name: "soft reboot is honoured once", act: func(ctx context.Context, st store.Store, k store.Key) error {
			return actions.SoftReboot(ctx, st, k, actions.SoftRebootOptions{Token: "t1"})
		}, check: func(t *testing.T, e *env) {
			e.settle()
			assert.Equal(t, 1, e.agent.reboots["vm"])
			assert.NotContains(t, e.getVMI("vm").Annotations, virtkit.SoftRebootRequestAnnotation)
		}},
		{name: "actions on a missing VMI", act: func(ctx context.Context, st store.Store, k store.Key) error {
			return actions.Pause(ctx, st, store.Key{Namespace: "default", Name: "nope"})
		}, wantErr: store.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 1)
			require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
			e.settle()
			if tt.setup != nil {
				vmi := e.getVMI("vm")
				tt.setup(vmi)
				want := vmi.DeepCopy()
				require.NoError(t, e.st.Update(e.ctx, vmi))
				want.ResourceVersion = vmi.ResourceVersion
				require.NoError(t, e.st.UpdateStatus(e.ctx, want))
			}
			err := tt.act(e.ctx, e.st, key("vm"))
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			if tt.check != nil {
				tt.check(t, e)
			}
		})
	}
}

func TestStateChangeRequestRules(t *testing.T) {
	e := newEnv(t, 1)
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyManual)))
	e.settle()
	// Two starts in a row: the second finds the first still queued.
	require.NoError(t, actions.Start(e.ctx, e.st, key("vm"), actions.StartOptions{}))
	require.ErrorIs(t, actions.Restart(e.ctx, e.st, key("vm"), actions.RestartOptions{}), actions.ErrConflictingAction)
	e.settle()
	// A lone Stop replaces whatever is queued.
	vm := e.getVM("vm")
	vm.Status.StateChangeRequests = []virtkit.VirtualMachineStateChangeRequest{{Action: virtkit.StartRequest}}
	require.NoError(t, e.st.UpdateStatus(e.ctx, vm))
	require.NoError(t, actions.Stop(e.ctx, e.st, key("vm"), actions.StopOptions{}))
	vm = e.getVM("vm")
	require.Len(t, vm.Status.StateChangeRequests, 1)
	assert.Equal(t, virtkit.StopRequest, vm.Status.StateChangeRequests[0].Action)
	e.settle()
	assert.Nil(t, e.getVMI("vm"))

	// Restart options.
	zero, one := int64(0), int64(1)
	require.ErrorIs(t, actions.Restart(e.ctx, e.st, key("vm"), actions.RestartOptions{GracePeriodSeconds: &one}), actions.ErrInvalidAction)
	require.NoError(t, actions.Start(e.ctx, e.st, key("vm"), actions.StartOptions{}))
	e.settle()
	require.NoError(t, actions.Restart(e.ctx, e.st, key("vm"), actions.RestartOptions{GracePeriodSeconds: &zero}))
	vmi := e.getVMI("vm")
	require.NotNil(t, vmi.Spec.TerminationGracePeriodSeconds)
	assert.EqualValues(t, 1, *vmi.Spec.TerminationGracePeriodSeconds, "forced restart shortens the grace period")
	e.settle()
	assert.Equal(t, virtkit.Running, e.getVMI("vm").Status.Phase)
}

func TestHaltedForcedStop(t *testing.T) {
	e := newEnv(t, 1)
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
	e.settle()
	// Keep the VMI alive while stopping: the agent does not release it.
	vmi := e.getVMI("vm")
	thirty := int64(30)
	vmi.Spec.TerminationGracePeriodSeconds = &thirty
	require.NoError(t, e.st.Update(e.ctx, vmi))
	require.NoError(t, actions.Stop(e.ctx, e.st, key("vm"), actions.StopOptions{}))
	require.Equal(t, virtkit.RunStrategyHalted, *e.getVM("vm").Spec.RunStrategy)

	// Halted with a running VMI: only a shorter grace period is accepted.
	sixty, five := int64(60), int64(5)
	require.ErrorIs(t, actions.Stop(e.ctx, e.st, key("vm"), actions.StopOptions{}), actions.ErrConflictingAction)
	require.ErrorIs(t, actions.Stop(e.ctx, e.st, key("vm"), actions.StopOptions{GracePeriod: &sixty}), actions.ErrConflictingAction)
	require.NoError(t, actions.Stop(e.ctx, e.st, key("vm"), actions.StopOptions{GracePeriod: &five}))
	assert.EqualValues(t, 5, *e.getVMI("vm").Spec.TerminationGracePeriodSeconds)
	e.settle()
	assert.Nil(t, e.getVMI("vm"))
}

func TestStartFailureBackoff(t *testing.T) {
	e := newEnv(t, 1)
	e.agent.setFailStart("vm", true)
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
	e.settle()

	// The first VMI failed before running: no VMI until the backoff passes.
	vm := e.getVM("vm")
	require.NotNil(t, vm.Status.StartFailure)
	assert.Equal(t, 1, vm.Status.StartFailure.ConsecutiveFailCount)
	assert.Equal(t, e.clock.Now().Add(10*time.Second), vm.Status.StartFailure.RetryAfterTimestamp.Time)
	assert.Nil(t, e.getVMI("vm"))
	assert.Equal(t, virtkit.VirtualMachineStatusCrashLoopBackOff, vm.Status.PrintableStatus)
	res, err := e.vm.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "vm"})
	require.NoError(t, err)
	assert.Equal(t, 10*time.Second, res.RequeueAfter)

	e.clock.Advance(11 * time.Second)
	e.settle()
	vm = e.getVM("vm")
	assert.Equal(t, 2, vm.Status.StartFailure.ConsecutiveFailCount)
	assert.Equal(t, e.clock.Now().Add(40*time.Second), vm.Status.StartFailure.RetryAfterTimestamp.Time)

	// A start that reaches Running clears the count.
	e.agent.setFailStart("vm", false)
	e.clock.Advance(41 * time.Second)
	e.settle()
	vm = e.getVM("vm")
	assert.Nil(t, vm.Status.StartFailure)
	assert.Equal(t, virtkit.VirtualMachineStatusRunning, vm.Status.PrintableStatus)

	// A crash after running does not count as a start failure.
	crash(e)
	e.settle()
	vm = e.getVM("vm")
	assert.Nil(t, vm.Status.StartFailure)
	assert.Equal(t, virtkit.Running, e.getVMI("vm").Status.Phase)
}

func TestStartFailureBackoffJitter(t *testing.T) {
	e := newEnv(t, 1)
	e.vm.o.IntN = func(n int) int { return n - 1 } // maximal jitter
	e.agent.setFailStart("vm", true)
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyRerunOnFailure)))
	e.settle()
	vm := e.getVM("vm")
	require.NotNil(t, vm.Status.StartFailure)
	assert.Equal(t, e.clock.Now().Add(15*time.Second), vm.Status.StartFailure.RetryAfterTimestamp.Time)
	assert.Equal(t, virtkit.VirtualMachineStatusCrashLoopBackOff, vm.Status.PrintableStatus)
}

func TestManualIgnoresStartFailureBackoff(t *testing.T) {
	e := newEnv(t, 1)
	e.agent.setFailStart("vm", true)
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyManual)))
	e.settle()
	require.NoError(t, actions.Start(e.ctx, e.st, key("vm"), actions.StartOptions{}))
	e.settle()
	vm := e.getVM("vm")
	assert.Nil(t, vm.Status.StartFailure, "Manual VMs do not back off")
	assert.Equal(t, virtkit.Failed, e.getVMI("vm").Status.Phase)
}

func TestVMDeletion(t *testing.T) {
	e := newEnv(t, 1)
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
	e.settle()
	vm := e.getVM("vm")
	require.NoError(t, e.st.Delete(e.ctx, vm, store.DeleteOptions{}))
	e.settle()
	assert.Nil(t, e.getVMI("vm"))
	err := e.st.Get(e.ctx, key("vm"), &virtkit.VirtualMachine{})
	require.ErrorIs(t, err, store.ErrNotFound, "the VM goes once its VMI is gone")
}

func TestOrphanVMIOfDeletedVMIsCollected(t *testing.T) {
	e := newEnv(t, 1)
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
	e.settle()
	// Remove the VM behind the controller's back (no finalizer handling).
	vm := e.getVM("vm")
	vm.Finalizers = nil
	require.NoError(t, e.st.Update(e.ctx, vm))
	require.NoError(t, e.st.Delete(e.ctx, vm, store.DeleteOptions{}))
	_, err := e.vm.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "vm"})
	require.NoError(t, err)
	e.settle()
	assert.Nil(t, e.getVMI("vm"))
}

func TestRestartRequired(t *testing.T) {
	e := newEnv(t, 1)
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
	e.settle()

	// A change that does not touch the template: no restart needed.
	vm := e.getVM("vm")
	vm.Labels = map[string]string{"team": "a"}
	require.NoError(t, e.st.Update(e.ctx, vm))
	e.settle()
	assert.Nil(t, virtkit.GetCondition(e.getVM("vm").Status.Conditions, virtkit.VirtualMachineRestartRequired))

	vm = e.getVM("vm")
	vm.Spec.Template.Spec.Domain.Resources.Requests[virtkit.ResourceMemory] = resource.MustParse("2Gi")
	require.NoError(t, e.st.Update(e.ctx, vm))
	e.settle()
	vm = e.getVM("vm")
	assert.True(t, virtkit.IsConditionTrue(vm.Status.Conditions, virtkit.VirtualMachineRestartRequired))
	assert.Less(t, vm.Status.ObservedGeneration, vm.Status.DesiredGeneration)

	require.NoError(t, actions.Restart(e.ctx, e.st, key("vm"), actions.RestartOptions{}))
	e.settle()
	vm = e.getVM("vm")
	assert.Nil(t, virtkit.GetCondition(vm.Status.Conditions, virtkit.VirtualMachineRestartRequired))
	assert.Equal(t, vm.Status.DesiredGeneration, vm.Status.ObservedGeneration)
	q := e.getVMI("vm").Spec.Domain.Resources.Requests[virtkit.ResourceMemory]
	assert.Equal(t, "2Gi", q.String())
}
