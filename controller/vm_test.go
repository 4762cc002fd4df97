package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/store"
)

type action func(ctx context.Context, st store.Store, k store.Key) error

var (
	actStart action = func(ctx context.Context, st store.Store, k store.Key) error {
		return actions.Start(ctx, st, k, actions.StartOptions{})
	}
	actStartPaused action = func(ctx context.Context, st store.Store, k store.Key) error {
		return actions.Start(ctx, st, k, actions.StartOptions{Paused: true})
	}
	actStop action = func(ctx context.Context, st store.Store, k store.Key) error {
		return actions.Stop(ctx, st, k, actions.StopOptions{})
	}
	actRestart action = func(ctx context.Context, st store.Store, k store.Key) error {
		return actions.Restart(ctx, st, k, actions.RestartOptions{})
	}
)

func shutdown(e *env) { e.guestStops("vm", virtkit.Succeeded) }
func crash(e *env)    { e.guestStops("vm", virtkit.Failed) }
func started(e *env) {
	require.NoError(e.t, actions.Start(e.ctx, e.st, key("vm"), actions.StartOptions{}))
}

// TestRunStrategies walks every run strategy through guest events and the
// start/stop/restart actions and checks the outcome against KubeVirt's
// run-strategy table.
func TestRunStrategies(t *testing.T) {
	const (
		none = virtkit.VmPhaseUnset // no VMI
	)
	tests := []struct {
		name          string
		vm            *virtkit.VirtualMachine
		before        []func(*env)
		action        action
		wantErr       error
		wantPhase     virtkit.VirtualMachineInstancePhase
		wantNewVMI    bool // the VMI after the action is not the one before
		wantPrintable virtkit.VirtualMachinePrintableStatus
		wantStrategy  virtkit.VirtualMachineRunStrategy
		wantPaused    bool
	}{
		// Always: a VMI must exist; final VMIs are replaced.
		{name: "Always runs", vm: newVM("vm", virtkit.RunStrategyAlways),
			wantPhase: virtkit.Running, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyAlways},
		{name: "Always restarts after shutdown", vm: newVM("vm", virtkit.RunStrategyAlways), action: func(ctx context.Context, st store.Store, k store.Key) error { return nil },
			before:    []func(*env){shutdown},
			wantPhase: virtkit.Running, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyAlways},
		{name: "Always restarts after crash", vm: newVM("vm", virtkit.RunStrategyAlways),
			before:    []func(*env){crash},
			wantPhase: virtkit.Running, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyAlways},
		{name: "Always refuses start", vm: newVM("vm", virtkit.RunStrategyAlways), action: actStart, wantErr: actions.ErrConflictingAction,
			wantPhase: virtkit.Running, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyAlways},
		{name: "Always stop switches to Halted", vm: newVM("vm", virtkit.RunStrategyAlways), action: actStop,
			wantPhase: none, wantNewVMI: true, wantPrintable: virtkit.VirtualMachineStatusStopped, wantStrategy: virtkit.RunStrategyHalted},
		{name: "Always restart", vm: newVM("vm", virtkit.RunStrategyAlways), action: actRestart,
			wantPhase: virtkit.Running, wantNewVMI: true, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyAlways},

		// running: true/false are Always/Halted.
		{name: "running true runs", vm: newRunningVM("vm", true),
			wantPhase: virtkit.Running, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyAlways},
		{name: "running false stays off", vm: newRunningVM("vm", false),
			wantPhase: none, wantPrintable: virtkit.VirtualMachineStatusStopped, wantStrategy: virtkit.RunStrategyHalted},
		{name: "running false start flips running", vm: newRunningVM("vm", false), action: actStart,
			wantPhase: virtkit.Running, wantNewVMI: true, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyAlways},
		{name: "running true stop flips running", vm: newRunningVM("vm", true), action: actStop,
			wantPhase: none, wantNewVMI: true, wantPrintable: virtkit.VirtualMachineStatusStopped, wantStrategy: virtkit.RunStrategyHalted},

		// RerunOnFailure: restart on failure only.
		{name: "RerunOnFailure runs", vm: newVM("vm", virtkit.RunStrategyRerunOnFailure),
			wantPhase: virtkit.Running, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyRerunOnFailure},
		{name: "RerunOnFailure restarts after crash", vm: newVM("vm", virtkit.RunStrategyRerunOnFailure), action: func(context.Context, store.Store, store.Key) error { return nil },
			before:    []func(*env){crash},
			wantPhase: virtkit.Running, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyRerunOnFailure},
		{name: "RerunOnFailure stays down after shutdown", vm: newVM("vm", virtkit.RunStrategyRerunOnFailure),
			before:    []func(*env){shutdown},
			wantPhase: none, wantPrintable: virtkit.VirtualMachineStatusStopped, wantStrategy: virtkit.RunStrategyRerunOnFailure},
		{name: "RerunOnFailure start after shutdown", vm: newVM("vm", virtkit.RunStrategyRerunOnFailure), action: actStart,
			before:    []func(*env){shutdown},
			wantPhase: virtkit.Running, wantNewVMI: true, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyRerunOnFailure},
		{name: "RerunOnFailure start while running", vm: newVM("vm", virtkit.RunStrategyRerunOnFailure), action: actStart, wantErr: actions.ErrConflictingAction,
			wantPhase: virtkit.Running, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyRerunOnFailure},
		{name: "RerunOnFailure stop", vm: newVM("vm", virtkit.RunStrategyRerunOnFailure), action: actStop,
			wantPhase: none, wantNewVMI: true, wantPrintable: virtkit.VirtualMachineStatusStopped, wantStrategy: virtkit.RunStrategyRerunOnFailure},
		{name: "RerunOnFailure stop when stopped", vm: newVM("vm", virtkit.RunStrategyRerunOnFailure), action: actStop, wantErr: actions.ErrConflictingAction,
			before:    []func(*env){shutdown},
			wantPhase: none, wantPrintable: virtkit.VirtualMachineStatusStopped, wantStrategy: virtkit.RunStrategyRerunOnFailure},
		{name: "RerunOnFailure restart", vm: newVM("vm", virtkit.RunStrategyRerunOnFailure), action: actRestart,
			wantPhase: virtkit.Running, wantNewVMI: true, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyRerunOnFailure},

		// Manual: never automatic.
		{name: "Manual stays off", vm: newVM("vm", virtkit.RunStrategyManual),
			wantPhase: none, wantPrintable: virtkit.VirtualMachineStatusStopped, wantStrategy: virtkit.RunStrategyManual},
		{name: "Manual start", vm: newVM("vm", virtkit.RunStrategyManual), action: actStart,
			wantPhase: virtkit.Running, wantNewVMI: true, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyManual},
		{name: "Manual start paused", vm: newVM("vm", virtkit.RunStrategyManual), action: actStartPaused,
			wantPhase: virtkit.Running, wantNewVMI: true, wantPaused: true, wantPrintable: virtkit.VirtualMachineStatusPaused, wantStrategy: virtkit.RunStrategyManual},
		{name: "Manual stop when stopped", vm: newVM("vm", virtkit.RunStrategyManual), action: actStop, wantErr: actions.ErrConflictingAction,
			wantPhase: none, wantPrintable: virtkit.VirtualMachineStatusStopped, wantStrategy: virtkit.RunStrategyManual},
		{name: "Manual stop", vm: newVM("vm", virtkit.RunStrategyManual), action: actStop,
			before:    []func(*env){started},
			wantPhase: none, wantNewVMI: true, wantPrintable: virtkit.VirtualMachineStatusStopped, wantStrategy: virtkit.RunStrategyManual},
		{name: "Manual keeps a final VMI", vm: newVM("vm", virtkit.RunStrategyManual),
			before:    []func(*env){started, crash},
			wantPhase: virtkit.Failed, wantPrintable: virtkit.VirtualMachineStatusStopped, wantStrategy: virtkit.RunStrategyManual},
		{name: "Manual start after shutdown replaces the VMI", vm: newVM("vm", virtkit.RunStrategyManual), action: actStart,
			before:    []func(*env){started, shutdown},
			wantPhase: virtkit.Running, wantNewVMI: true, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyManual},
		{name: "Manual restart", vm: newVM("vm", virtkit.RunStrategyManual), action: actRestart,
			before:    []func(*env){started},
			wantPhase: virtkit.Running, wantNewVMI: true, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyManual},
		{name: "Manual restart when stopped", vm: newVM("vm", virtkit.RunStrategyManual), action: actRestart, wantErr: actions.ErrConflictingAction,
			wantPhase: none, wantPrintable: virtkit.VirtualMachineStatusStopped, wantStrategy: virtkit.RunStrategyManual},

		// Halted: no VMI.
		{name: "Halted stays off", vm: newVM("vm", virtkit.RunStrategyHalted),
			wantPhase: none, wantPrintable: virtkit.VirtualMachineStatusStopped, wantStrategy: virtkit.RunStrategyHalted},
		{name: "Halted start switches to Always", vm: newVM("vm", virtkit.RunStrategyHalted), action: actStart,
			wantPhase: virtkit.Running, wantNewVMI: true, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyAlways},
		{name: "Halted start paused", vm: newVM("vm", virtkit.RunStrategyHalted), action: actStartPaused,
			wantPhase: virtkit.Running, wantNewVMI: true, wantPaused: true, wantPrintable: virtkit.VirtualMachineStatusPaused, wantStrategy: virtkit.RunStrategyAlways},
		{name: "Halted stop", vm: newVM("vm", virtkit.RunStrategyHalted), action: actStop, wantErr: actions.ErrConflictingAction,
			wantPhase: none, wantPrintable: virtkit.VirtualMachineStatusStopped, wantStrategy: virtkit.RunStrategyHalted},
		{name: "Halted restart", vm: newVM("vm", virtkit.RunStrategyHalted), action: actRestart, wantErr: actions.ErrConflictingAction,
			wantPhase: none, wantPrintable: virtkit.VirtualMachineStatusStopped, wantStrategy: virtkit.RunStrategyHalted},

		// Once: one run, never restarted.
		{name: "Once runs", vm: newVM("vm", virtkit.RunStrategyOnce),
			wantPhase: virtkit.Running, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyOnce},
		{name: "Once keeps a succeeded VMI", vm: newVM("vm", virtkit.RunStrategyOnce),
			before:    []func(*env){shutdown},
			wantPhase: virtkit.Succeeded, wantPrintable: virtkit.VirtualMachineStatusStopped, wantStrategy: virtkit.RunStrategyOnce},
		{name: "Once keeps a failed VMI", vm: newVM("vm", virtkit.RunStrategyOnce),
			before:    []func(*env){crash},
			wantPhase: virtkit.Failed, wantPrintable: virtkit.VirtualMachineStatusStopped, wantStrategy: virtkit.RunStrategyOnce},
		{name: "Once refuses start", vm: newVM("vm", virtkit.RunStrategyOnce), action: actStart, wantErr: actions.ErrConflictingAction,
			wantPhase: virtkit.Running, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyOnce},
		{name: "Once refuses restart", vm: newVM("vm", virtkit.RunStrategyOnce), action: actRestart, wantErr: actions.ErrConflictingAction,
			wantPhase: virtkit.Running, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyOnce},
		{name: "Once stop switches to Halted", vm: newVM("vm", virtkit.RunStrategyOnce), action: actStop,
			wantPhase: none, wantNewVMI: true, wantPrintable: virtkit.VirtualMachineStatusStopped, wantStrategy: virtkit.RunStrategyHalted},
		{name: "Once re-creates a deleted final VMI", vm: newVM("vm", virtkit.RunStrategyOnce),
			before: []func(*env){shutdown}, action: func(ctx context.Context, st store.Store, k store.Key) error {
				vmi := &virtkit.VirtualMachineInstance{}
				if err := st.Get(ctx, k, vmi); err != nil {
					return err
				}
				return st.Delete(ctx, vmi, store.DeleteOptions{})
			},
			wantPhase: virtkit.Running, wantNewVMI: true, wantPrintable: virtkit.VirtualMachineStatusRunning, wantStrategy: virtkit.RunStrategyOnce},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 2)
			require.NoError(t, e.st.Create(e.ctx, tt.vm))
			e.settle()
			for _, ev := range tt.before {
				ev(e)
				e.settle()
			}
			var before types.UID
			if vmi := e.getVMI("vm"); vmi != nil {
				before = vmi.UID
			}
			if tt.action != nil {
				err := tt.action(e.ctx, e.st, key("vm"))
				if tt.wantErr != nil {
					require.ErrorIs(t, err, tt.wantErr)
				} else {
					require.NoError(t, err)
				}
				e.settle()
			}
			vm := e.getVM("vm")
			vmi := e.getVMI("vm")
			if tt.wantPhase == none {
				assert.Nil(t, vmi, "no VMI expected")
			} else if assert.NotNil(t, vmi) {
				assert.Equal(t, tt.wantPhase, vmi.Status.Phase)
				assert.Equal(t, tt.wantNewVMI, vmi.UID != before, "VMI replaced")
				assert.Equal(t, tt.wantPaused, vmi.IsPaused(), "paused")
			}
			assert.Equal(t, tt.wantPrintable, vm.Status.PrintableStatus)
			rs, err := vm.RunStrategy()
			require.NoError(t, err)
			assert.Equal(t, tt.wantStrategy, rs)
			assert.Empty(t, vm.Status.StateChangeRequests, "requests are consumed")
			assert.Equal(t, vmi != nil, vm.Status.Created)
			assert.Equal(t, vmi != nil && vmi.IsRunning() && vmi.DeletionTimestamp == nil, vm.Status.Ready)
			assert.Nil(t, vm.Status.StartFailure)
			assert.Empty(t, e.errs)
		})
	}
}
