package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/admission"
	"github.com/virtkit/virtkit/store"
)

// The calls a user makes on VMs and VMIs moved to package actions; these
// names keep code written against earlier releases compiling.

type (
	// Deprecated: use actions.StartOptions.
	StartOptions = actions.StartOptions
	// Deprecated: use actions.StopOptions.
	StopOptions = actions.StopOptions
	// Deprecated: use actions.RestartOptions.
	RestartOptions = actions.RestartOptions
	// Deprecated: use actions.MigrateOptions.
	MigrateOptions = actions.MigrateOptions
	// Deprecated: use actions.SoftRebootOptions.
	SoftRebootOptions = actions.SoftRebootOptions
)

// The action calls' sentinel errors: the same values, so errors.Is
// matches either name.
var (
	// Deprecated: use actions.ErrConflictingAction.
	ErrConflictingAction = actions.ErrConflictingAction
	// Deprecated: use actions.ErrActionForbidden.
	ErrActionForbidden = actions.ErrActionForbidden
	// Deprecated: use actions.ErrInvalidAction.
	ErrInvalidAction = actions.ErrInvalidAction
)

// Start calls actions.Start.
//
// Deprecated: use actions.Start.
func Start(ctx context.Context, st store.Store, key store.Key, opts actions.StartOptions) error {
	return actions.Start(ctx, st, key, opts)
}

// Stop calls actions.Stop.
//
// Deprecated: use actions.Stop.
func Stop(ctx context.Context, st store.Store, key store.Key, opts actions.StopOptions) error {
	return actions.Stop(ctx, st, key, opts)
}

// Restart calls actions.Restart.
//
// Deprecated: use actions.Restart.
func Restart(ctx context.Context, st store.Store, key store.Key, opts actions.RestartOptions) error {
	return actions.Restart(ctx, st, key, opts)
}

// Pause calls actions.Pause.
//
// Deprecated: use actions.Pause.
func Pause(ctx context.Context, st store.Store, key store.Key) error {
	return actions.Pause(ctx, st, key)
}

// Unpause calls actions.Unpause.
//
// Deprecated: use actions.Unpause.
func Unpause(ctx context.Context, st store.Store, key store.Key) error {
	return actions.Unpause(ctx, st, key)
}

// SoftReboot calls actions.SoftReboot.
//
// Deprecated: use actions.SoftReboot.
func SoftReboot(ctx context.Context, st store.Store, key store.Key, opts actions.SoftRebootOptions) error {
	return actions.SoftReboot(ctx, st, key, opts)
}

// Migrate calls actions.Migrate.
//
// Deprecated: use actions.Migrate.
func Migrate(ctx context.Context, st store.Store, key store.Key, opts actions.MigrateOptions) (*virtkit.VirtualMachineInstanceMigration, error) {
	return actions.Migrate(ctx, st, key, opts)
}

// InstancetypeSpecs calls actions.InstancetypeSpecs.
//
// Deprecated: use actions.InstancetypeSpecs.
func InstancetypeSpecs(ctx context.Context, st store.Store, vm *virtkit.VirtualMachine) (*virtkit.VirtualMachineInstancetypeSpec, *virtkit.VirtualMachinePreferenceSpec, error) {
	return actions.InstancetypeSpecs(ctx, st, vm)
}

// AdmitInstancetype calls admission.AdmitInstancetype.
//
// Deprecated: use admission.AdmitInstancetype.
func AdmitInstancetype(ctx context.Context, st store.Store, obj virtkit.Object) (field.ErrorList, error) {
	return admission.AdmitInstancetype(ctx, st, obj)
}

// InferInstancetype calls admission.InferFromVolume.
//
// Deprecated: use admission.InferFromVolume.
func InferInstancetype(ctx context.Context, st store.Store, obj virtkit.Object) (field.ErrorList, error) {
	return admission.InferFromVolume(ctx, st, obj)
}
